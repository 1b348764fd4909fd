import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import type { Worker, WorkerOptions } from '../../src/worker/index.ts';
import { SHOP, type TestRuntime, startTestRuntime, testWorker, waitForRun } from '../helpers/runtime.ts';

let holds: Array<() => void> = [];
/** The hold of each run by id: the order of `holds` is the order the runs started, not the order of their dispatch. */
const holdOf = new Map<string, () => void>();
let started = 0;
const app = defineApp();
const instance = app.defineConfig({
  flows: {
    quick: app.defineFlow({ name: 'quick', input: z.object({}), concurrency: null, run: (ctx) => ctx.step('only', () => 'ok') }),
    held: app.defineFlow({
      name: 'held',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) => {
        await ctx.step('first', () => 'kept');
        started++;
        await ctx.step(
          'held',
          ({ signal }) =>
            new Promise<void>((resolve, reject) => {
              holds.push(resolve);
              holdOf.set(ctx.runId, resolve);
              signal.addEventListener('abort', () => reject(signal.reason));
            }),
        );
        return { attempt: ctx.attempt };
      },
    }),
  },
  // a slow backstop: every fast start in these tests comes from a wake-up, not from polling
  worker: { pollIntervalMs: 5000, pollMaxIntervalMs: 5000, pollBackoffCoefficient: 1, leaseDurationMs: 1500, concurrency: 2 },
});

describeEngines('worker', (get) => {
  let t: TestRuntime;
  const workers: Worker[] = [];
  const newWorker = (overrides: Partial<WorkerOptions> = {}) => {
    const w = testWorker(t.runtime, get().db, overrides);
    workers.push(w);
    return w;
  };
  const dispatch = (flowName: string) =>
    t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input: {}, trigger: 'api' }).then((r) => r.runId);

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db);
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    holds = [];
    started = 0;
    await get().reset();
  });
  afterEach(async () => {
    for (const h of holds) h();
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });

  it('an idle worker wakes on dispatch instead of waiting for its poll interval', async () => {
    const w = newWorker();
    await w.start();
    await new Promise((r) => setTimeout(r, 100)); // idle: first empty poll done, next poll in 5 s
    const begin = Date.now();
    const runId = await dispatch('quick');
    await waitForRun(get().db, runId, (r) => r.status === 'completed', 3000);
    expect(Date.now() - begin).toBeLessThan(2500); // well under the 5 s poll interval
    expect(w.stats.wakeups).toBeGreaterThan(0);
  });

  it('claims at most its free slots; the concurrency option beats the config', async () => {
    const w = newWorker({ concurrency: 3 });
    expect(w.concurrency).toBe(3);
    expect(newWorker().concurrency).toBe(2); // config
    await w.start();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await dispatch('held'));
    await expect.poll(() => started, { timeout: 3000 }).toBe(3);
    await new Promise((r) => setTimeout(r, 200));
    expect(w.activeCount).toBe(3);
    const [{ pending }] = await get().db.query<{ pending: number }>(
      sql`select count(*)::int as pending from runs where status = 'pending'`,
    );
    expect(pending).toBe(2);
    for (const h of holds.splice(0)) h();
    await expect.poll(() => started, { timeout: 3000 }).toBe(5); // freed slots are refilled at once
  });

  it('heartbeats keep extending the lease of a long run', async () => {
    const w = newWorker({ heartbeatIntervalMs: 200 });
    await w.start();
    const runId = await dispatch('held');
    await expect.poll(() => started).toBe(1);
    const leaseAt = async () =>
      (
        await get().db.query<{ ms: number }>(
          sql`select (extract(epoch from lease_expires_at) * 1000)::float8 as ms from runs where id = ${runId}::uuid`,
        )
      )[0].ms;
    const first = await leaseAt();
    await new Promise((r) => setTimeout(r, 2000)); // longer than the 1.5 s lease
    expect(await leaseAt()).toBeGreaterThan(first);
    expect((await waitForRun(get().db, runId, () => true)).status).toBe('running');
  });

  it('reclaims a run whose worker died once its lease expired, without re-running completed steps', async () => {
    // a worker that claimed the run and then vanished: status running, lease expired, step "first" completed
    const runId = await dispatch('held');
    await get().db.query(
      sql`update runs set status = 'running', attempt = 1, lease_owner = 'dead-worker/1', lease_expires_at = now() - interval '1 second', started_at = now() where id = ${runId}::uuid`,
    );
    await get().db.query(
      sql`insert into steps (run_id, name, app_handle, shop, status, attempt, result, finished_at) values (${runId}::uuid, 'first', 'default', ${SHOP}, 'completed', 1, '"kept"', now())`,
    );
    const w = newWorker({ config: { ...t.runtime.config.worker, pollIntervalMs: 50, pollMaxIntervalMs: 50 } });
    await w.start();
    await expect.poll(() => started, { timeout: 3000 }).toBe(1);
    holds[0]();
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('completed');
    expect(run.lost_leases).toBe(1);
    expect(run.attempt).toBe(1); // a crash-reclaim is not an attempt
    expect(run.output).toEqual({ attempt: 1 });
  });

  it('fails a run that keeps killing its workers instead of reclaiming it forever', async () => {
    const runId = await dispatch('held');
    await get().db.query(
      sql`update runs set status = 'running', attempt = 1, lost_leases = 2, lease_owner = 'dead/9', lease_expires_at = now() - interval '1 second' where id = ${runId}::uuid`,
    );
    const w = newWorker({ config: { ...t.runtime.config.worker, pollIntervalMs: 50, pollMaxIntervalMs: 50 }, maxLostLeases: 3 });
    await w.start();
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('failed');
    expect(run.lost_leases).toBe(3);
    expect(run.error.name).toBe('LeaseLostError');
    expect(run.error.message).toContain('stopped 3 times');
    expect(started).toBe(0);
  });

  it('graceful stop lets runs finish within the lease, then hands the rest back for the same attempt', async () => {
    const w = newWorker();
    await w.start();
    const finishing = await dispatch('held');
    const stuck = await dispatch('held');
    await expect.poll(() => holds.length, { timeout: 3000 }).toBe(2);
    const stopping = w.stop();
    holdOf.get(finishing)!(); // the first finishes during the stop
    const result = await stopping;
    expect(result).toEqual({ finished: 1, released: 1 });
    expect((await waitForRun(get().db, finishing)).status).toBe('completed');
    const handedBack = await waitForRun(get().db, stuck, () => true);
    expect(handedBack.status).toBe('pending');
    expect(handedBack.lost_leases).toBe(0);
    // another worker takes it: same attempt, completed step not re-run
    holds = [];
    const next = newWorker();
    await next.start();
    await expect.poll(() => holds.length, { timeout: 3000 }).toBe(1);
    holds[0]();
    const done = await waitForRun(get().db, stuck);
    expect(done.status).toBe('completed');
    expect(done.attempt).toBe(1);
  });
});
