/** GET /api/runs/:id/watch (long polling woken by the watch hub's poller) and GET /api/home, over real HTTP. */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { WATCH_POLL_MS } from '../../src/flows/watch.ts';
import { FAST_WORKER, OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';

let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => {};
const closeGate = () => {
  gate = new Promise((r) => {
    openGate = r;
  });
};

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    gated: app.defineFlow({
      name: 'gated',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) => {
        await ctx.step('first', () => 1);
        await ctx.step('wait', () => gate);
        ctx.log.info('after the gate');
        return 'done';
      },
    }),
    retrying: app.defineFlow({
      name: 'retrying',
      input: z.object({}),
      concurrency: null,
      retryPolicy: { maxAttempts: 3, initialIntervalMs: 60_000, backoffCoefficient: 2, maxIntervalMs: 600_000 },
      run: async (ctx) => {
        await ctx.step('call upstream', () => {
          throw new Error('upstream 503');
        });
      },
    }),
    boom: app.defineFlow({
      name: 'boom',
      input: z.object({}),
      concurrency: null,
      retryPolicy: { maxAttempts: 1 },
      run: async () => {
        throw new Error('kaput');
      },
    }),
  },
  worker: FAST_WORKER,
});

const disabledInstance = app.defineConfig({ flows: {}, pages: { flows: 'disabled' } });

describeEngines('run watch and home summary', (get) => {
  let t: TestRuntime;
  const dispatch = async (flow: string, shop = SHOP) =>
    (await json(await t.api(`/api/flows/${flow}/run`, { method: 'POST', json: { input: {} }, shop }))).body.runId as string;
  const watch = (id: string, query = '', shop = SHOP) => t.api(`/api/runs/${id}/watch${query}`, { shop }).then(json);

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true, http: true });
  });
  afterAll(async () => {
    openGate();
    await t?.close();
  });
  beforeEach(async () => {
    openGate();
    gate = Promise.resolve();
    await get().reset();
  });

  it('answers at once without `since`, waits while nothing changes, and wakes as soon as the run moves', async () => {
    closeGate();
    const id = await dispatch('gated');
    await waitForRun(get().db, id, (r) => r.status === 'running');
    // Wait for the first step to be stored and the gated one to be marked running (it outlasts RUNNING_STEP_MARK_MS), so
    // the version is stable while the gate is closed.
    for (let i = 0; i < 200; i++) {
      const { body } = await watch(id, '?timeout=0');
      if (body.run.steps.some((s: any) => s.name === 'wait' && s.status === 'running')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const first = await watch(id, '?timeout=0');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ changed: true, run: { id, status: 'running', flowName: 'gated' } });
    expect(first.body.run.steps.map((s: any) => [s.name, s.status, s.finishedAt, s.durationMs])).toEqual([
      ['first', 'completed', expect.any(String), expect.any(Number)],
      ['wait', 'running', null, null],
    ]);
    const version = first.body.version as string;

    // Nothing changes: the answer comes after the timeout, unchanged, without the run.
    const started = Date.now();
    const idle = await watch(id, `?since=${encodeURIComponent(version)}&timeout=1`);
    const idleMs = Date.now() - started;
    expect(idle.body).toEqual({ changed: false, version });
    expect(idleMs).toBeGreaterThanOrEqual(900);

    // A long poll in flight answers when the run completes, long before its timeout.
    const pending = watch(id, `?since=${encodeURIComponent(version)}&timeout=20`);
    await new Promise((r) => setTimeout(r, 200));
    const opened = Date.now();
    openGate();
    const woke = await pending;
    expect(Date.now() - opened).toBeLessThan(5000);
    expect(woke.body.changed).toBe(true);
    expect(woke.body.version).not.toBe(version);
    // Follow until final: every answer is a new version.
    let last = woke.body;
    while (last.run.status !== 'completed') {
      const next = await watch(id, `?since=${encodeURIComponent(last.version)}&timeout=10`);
      expect(next.body.changed).toBe(true);
      last = next.body;
    }
    expect(last.run.output).toBe('done');
    expect(last.run.steps.map((s: any) => [s.name, s.status])).toEqual([
      ['first', 'completed'],
      ['wait', 'completed'],
    ]);
  });

  it('sees a change made by another connection within one poll, and the engine sends no NOTIFY per run change', async () => {
    const { db } = get();
    const heard: string[] = [];
    // the channel the row triggers of migration 0007 used, and the workers' wake-up channel
    const stops = await Promise.all(['mercato_run_updates', 'mercato_runs'].map((c) => db.listen(c, (p) => heard.push(`${c}:${p}`))));
    try {
      closeGate();
      const id = await dispatch('gated');
      await waitForRun(db, id, (r) => r.status === 'running');
      const { body } = await watch(id, '?timeout=0');
      // another connection (any process) changes the run: the waiting watch answers within a poll interval and a read
      const pending = watch(id, `?since=${encodeURIComponent(body.version)}&timeout=20`);
      await new Promise((r) => setTimeout(r, 100));
      const changedAt = Date.now();
      await db.query(sql`update runs set updated_at = now() + interval '1 second' where id = ${id}::uuid`);
      const woke = await pending;
      expect(woke.body.changed).toBe(true);
      expect(Date.now() - changedAt).toBeLessThan(WATCH_POLL_MS + 750);
      openGate();
      await waitForRun(db, id);
      await new Promise((r) => setTimeout(r, 100));
      // the dispatch woke the workers (one NOTIFY, empty payload); the claim, steps and completion notified nothing
      expect(heard.filter((h) => h.startsWith('mercato_run_updates'))).toEqual([]);
      expect(heard).toEqual(['mercato_runs:']);
      const triggers = await db.query(
        sql`select tgname from pg_trigger where tgname in ('runs_notify_update', 'steps_notify_change') and not tgisinternal`,
      );
      expect(triggers).toEqual([]);
    } finally {
      for (const stop of stops) await stop();
    }
  });

  it('is scoped to the tenant and validates its query', async () => {
    const id = await dispatch('gated');
    expect((await watch(id, '?timeout=0', OTHER_SHOP)).status).toBe(404);
    expect((await watch('not-a-uuid', '?timeout=0')).status).toBe(404);
    expect((await watch('00000000-0000-4000-8000-000000000000', '?timeout=0')).status).toBe(404);
    const bad = await watch(id, '?timeout=31');
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe('timeout');
    expect((await watch(id, '?timeout=abc')).status).toBe(400);
    expect((await watch(id, '?foo=1')).body.field).toBe('foo');
    const unauthenticated = await fetch(`${t.url}/api/runs/${id}/watch`);
    expect(unauthenticated.status).toBe(401);
  });

  it('GET /api/runs/watch follows the tenant runs: a dispatch, a status change and a finish each answer a waiting watch', async () => {
    const tenantWatch = (query = '', shop = SHOP) => t.api(`/api/runs/watch${query}`, { shop }).then(json);
    const first = await tenantWatch('?timeout=0');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ changed: true, version: expect.any(String) });
    // nothing happens: unchanged after the timeout
    const idleStart = Date.now();
    const idle = await tenantWatch(`?since=${encodeURIComponent(first.body.version)}&timeout=1`);
    expect(idle.body).toEqual({ changed: false, version: first.body.version });
    expect(Date.now() - idleStart).toBeGreaterThanOrEqual(900);

    // another shop's run does not wake this shop's watch
    closeGate();
    const otherShop = tenantWatch(`?since=${encodeURIComponent(first.body.version)}&timeout=2`);
    await new Promise((r) => setTimeout(r, 100));
    const theirs = await dispatch('gated', OTHER_SHOP);
    expect((await otherShop).body.changed).toBe(false);
    await waitForRun(get().db, theirs, (r) => r.status === 'running');

    // a dispatch wakes a waiting watch within a poll and a read
    const waiting = tenantWatch(`?since=${encodeURIComponent(first.body.version)}&timeout=20`);
    await new Promise((r) => setTimeout(r, 100));
    const dispatchedAt = Date.now();
    const id = await dispatch('gated');
    const woke = await waiting;
    expect(woke.body.changed).toBe(true);
    expect(Date.now() - dispatchedAt).toBeLessThan(WATCH_POLL_MS + 1000);
    await waitForRun(get().db, id, (r) => r.status === 'running');
    await new Promise((r) => setTimeout(r, 50));

    // finishing the run changes the version again
    const { body: before } = await tenantWatch('?timeout=0');
    const finishing = tenantWatch(`?since=${encodeURIComponent(before.version)}&timeout=20`);
    await new Promise((r) => setTimeout(r, 100));
    openGate();
    const finished = await finishing;
    expect(finished.body.changed).toBe(true);
    expect(finished.body.version).not.toBe(before.version);
    await waitForRun(get().db, id);

    // validated like the run watch; 401 without a session
    expect((await tenantWatch('?timeout=31')).body.field).toBe('timeout');
    expect((await tenantWatch('?foo=1')).status).toBe(400);
    expect((await fetch(`${t.url}/api/runs/watch`)).status).toBe(401);
  });

  it('a run waiting to retry has nextAttemptAt (its available time), in the list, the detail, the watch and the Home count', async () => {
    const id = await dispatch('retrying');
    const db = get().db;
    await waitForRun(db, id, (r) => r.status === 'pending' && r.attempt === 1);
    const [{ at }] = await db.query<{ at: string }>(sql`select to_json(available_at) #>> '{}' as at from runs where id = ${id}::uuid`);
    const detail = await json(await t.api(`/api/runs/${id}`));
    expect(detail.body).toMatchObject({ status: 'pending', nextAttemptAt: at, availableAt: at, error: { message: 'upstream 503' } });
    expect(new Date(at).getTime() - Date.now()).toBeGreaterThan(50_000); // the 60-second backoff
    const list = await json(await t.api('/api/runs'));
    expect(list.body.runs.find((r: any) => r.id === id)).toMatchObject({ status: 'pending', nextAttemptAt: at });
    expect((await watch(id, '?timeout=0')).body.run).toMatchObject({ nextAttemptAt: at });
    const home = await json(await t.api('/api/home'));
    expect(home.body).toMatchObject({ counts: { pending: 1 }, retrying: 1 });
    // a run that failed for good is not retrying
    const fresh = await dispatch('boom');
    await waitForRun(db, fresh);
    const failed = await json(await t.api(`/api/runs/${fresh}`));
    expect(failed.body).toMatchObject({ status: 'failed', nextAttemptAt: null });
  });

  it('GET /api/home counts the last 24 hours by status and lists the latest failures, for this shop only', async () => {
    const ok = await dispatch('gated');
    const failed = await dispatch('boom');
    await dispatch('boom', OTHER_SHOP);
    const old = await dispatch('gated');
    await waitForRun(get().db, ok);
    await waitForRun(get().db, failed);
    await waitForRun(get().db, old);
    await get().db.query(sql`update runs set created_at = now() - interval '25 hours' where id = ${old}::uuid`);
    const { status, body } = await json(await t.api('/api/home'));
    expect(status).toBe(200);
    expect(body.counts).toEqual({ pending: 0, running: 0, sleeping: 0, completed: 1, failed: 1, canceled: 0 });
    expect(body.total).toBe(2);
    expect(Date.now() - new Date(body.since).getTime()).toBeGreaterThan(23.9 * 3600_000);
    expect(body.recentFailures).toHaveLength(1);
    expect(body.recentFailures[0]).toMatchObject({ id: failed, flowName: 'boom', errorSummary: 'Error: kaput' });
  });
});

describeEngines('run watch and home when the flows page is disabled', (get) => {
  it('answers 404 { error: "Not found" } for both', async () => {
    const t = await startTestRuntime(disabledInstance, get().db, { http: true });
    try {
      for (const path of ['/api/home', '/api/runs/00000000-0000-4000-8000-000000000000/watch']) {
        const res = await t.api(path);
        expect(res.status).toBe(404);
        expect(await res.json()).toEqual({ error: 'Not found' });
      }
    } finally {
      await t.close();
    }
  });
});

describeEngines('run watch when the server stops', (get) => {
  it('answers the waiting watchers at once instead of holding the shutdown', async () => {
    const t = await startTestRuntime(instance, get().db, { worker: true, http: true });
    try {
      const runId = (await (await t.api('/api/flows/boom/run', { method: 'POST', json: { input: {} } })).json()).runId as string;
      await waitForRun(get().db, runId);
      const { version } = await (await t.api(`/api/runs/${runId}/watch?timeout=0`)).json();
      // A finished run does not change: this watcher would wait its full 30 s.
      const waiting = t.api(`/api/runs/${runId}/watch?since=${encodeURIComponent(version)}&timeout=30`).then((r) => r.json());
      await new Promise((r) => setTimeout(r, 300));
      const started = Date.now();
      await t.close();
      expect(await waiting).toEqual({ changed: false, version });
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await t.close();
    }
  });
});
