/** /api/flows and /api/runs over real HTTP: dispatch, concurrency, cancel, retry, delete, tenant isolation. */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { FAST_WORKER, OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';

let failNext = 0;
let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => {};
const executions = new Map<string, number>();
const bump = (k: string) => executions.set(k, (executions.get(k) ?? 0) + 1);

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    sync: app.defineFlow({
      name: 'sync',
      description: 'Sync orders',
      input: z.object({ since: z.string(), limit: z.number().int().positive().default(10) }),
      run: async (ctx, input) => {
        await ctx.step('wait', () => gate);
        return { since: input.since, limit: input.limit };
      },
    }),
    twoSteps: app.defineFlow({
      name: 'twoSteps',
      input: z.object({}),
      retryPolicy: { maxAttempts: 1, initialIntervalMs: 5 },
      run: async (ctx) => {
        await ctx.step('first', () => bump('first'));
        await ctx.step('second', () => {
          bump('second');
          if (failNext > 0) {
            failNext--;
            throw new Error('second failed');
          }
        });
        return 'done';
      },
    }),
    parallel: app.defineFlow({ name: 'parallel', input: z.object({}), concurrency: null, run: () => gate }),
    pair: app.defineFlow({ name: 'pair', input: z.object({}), concurrency: 2, run: () => gate }),
  },
  crons: [{ name: 'Hourly sync', schedule: '0 * * * *', flow: 'sync', input: { since: '1h' }, shops: 'all' }],
  worker: FAST_WORKER,
  retryPolicy: { maxAttempts: 4 },
});

describeEngines('flows and runs API', (get) => {
  let t: TestRuntime;
  const closeGate = () => {
    gate = new Promise((r) => {
      openGate = r;
    });
  };
  const run = (flow: string, input: unknown, shop = SHOP) =>
    t.api(`/api/flows/${flow}/run`, { method: 'POST', json: { input }, shop }).then(json);

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
    failNext = 0;
    executions.clear();
    await get().reset();
  });

  it('GET /api/flows lists names, input JSON schemas, crons and the merged retry policy', async () => {
    const { status, body } = await json(await t.api('/api/flows'));
    expect(status).toBe(200);
    const sync = body.flows.find((f: any) => f.name === 'sync');
    expect(sync.description).toBe('Sync orders');
    expect(sync.inputSchema).toMatchObject({
      type: 'object',
      properties: { since: { type: 'string' }, limit: { type: 'integer', default: 10 } },
      required: ['since'],
    });
    expect(sync.crons).toEqual([
      { key: 'sync:0 * * * *', name: 'Hourly sync', schedule: '0 * * * *', shops: 'all', timezone: 'UTC', input: { since: '1h' } },
    ]);
    expect(sync.retryPolicy).toEqual({ maxAttempts: 4, initialIntervalMs: 1000, backoffCoefficient: 2, maxIntervalMs: 60000 });
    expect(body.flows.map((f: any) => f.name).sort()).toEqual(['pair', 'parallel', 'sync', 'twoSteps']);
  });

  it('POST /api/flows/:name/run answers 202 { runId, status: "pending" } and the run completes', async () => {
    const { status, body } = await run('sync', { since: '1d' });
    expect(status).toBe(202);
    expect(Object.keys(body).sort()).toEqual(['runId', 'status']);
    expect(body.status).toBe('pending');
    const done = await waitForRun(get().db, body.runId);
    expect(done.output).toEqual({ since: '1d', limit: 10 });
    const [row] = await get().db.query<{ trigger: string; shop: string; app_handle: string }>(
      sql`select trigger, shop, app_handle from runs where id = ${body.runId}::uuid`,
    );
    expect(row).toEqual({ trigger: 'api', shop: SHOP, app_handle: 'default' });
  });

  it('validates input with the flow schema (400 with issues), unknown flow is 404, bad bodies are 400', async () => {
    const bad = await run('sync', { since: 5 });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('Invalid input for flow "sync"');
    expect(bad.body.issues).toEqual([expect.objectContaining({ path: 'since', code: 'invalid_type' })]);
    expect((await run('nope', {})).status).toBe(404);
    const notJson = await t.api('/api/flows/sync/run', { method: 'POST', body: '{oops', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    const extra = await json(await t.api('/api/flows/sync/run', { method: 'POST', json: { input: { since: 'x' }, inptu: {} } }));
    expect(extra).toMatchObject({ status: 400, body: { field: 'inptu', error: 'inptu: unknown field' } });
    // the flow's input sent as the whole body: the answer says where it goes
    const unwrapped = await json(await t.api('/api/flows/sync/run', { method: 'POST', json: { since: '1d' } }));
    expect(unwrapped).toMatchObject({
      status: 400,
      body: { field: 'since', error: 'since: unknown field; the flow\'s input goes under "input": { "input": { … } }' },
    });
    const badPolicy = await json(
      await t.api('/api/flows/sync/run', { method: 'POST', json: { input: { since: 'x' }, retryPolicy: { maxAttempts: 0 } } }),
    );
    expect(badPolicy).toMatchObject({ status: 400, body: { field: 'retryPolicy.maxAttempts' } });
    const [{ n }] = await get().db.query<{ n: number }>(sql`select count(*)::int as n from runs`);
    expect(n).toBe(0); // nothing half-written
  });

  it('allows one active run per (app, shop, flow) by default: 409 with existingRunId, other shops unaffected', async () => {
    closeGate();
    const first = await run('sync', { since: 'a' });
    const second = await run('sync', { since: 'b' });
    expect(second.status).toBe(409);
    expect(second.body.existingRunId).toBe(first.body.runId);
    expect((await run('sync', { since: 'c' }, OTHER_SHOP)).status).toBe(202);
    openGate();
    await waitForRun(get().db, first.body.runId);
    expect((await run('sync', { since: 'd' })).status).toBe(202);
  });

  it('decides concurrency atomically: of 12 racing dispatches exactly one wins', async () => {
    closeGate();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => run('sync', { since: String(i) })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 202)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(11);
    const winner = results.find((r) => r.status === 202)!.body.runId;
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.existingRunId).toBe(winner);
  });

  it('honours a flow concurrency of 2 and of null (unlimited)', async () => {
    closeGate();
    const pair = await Promise.all([1, 2, 3, 4].map(() => run('pair', {})));
    expect(pair.filter((r) => r.status === 202)).toHaveLength(2);
    const unlimited = await Promise.all([1, 2, 3, 4, 5, 6].map(() => run('parallel', {})));
    expect(unlimited.every((r) => r.status === 202)).toBe(true);
  });

  it('GET /api/runs/:id returns the run with its steps; another tenant gets 404 on every run endpoint', async () => {
    const { body } = await run('twoSteps', {});
    await waitForRun(get().db, body.runId);
    const detail = await json(await t.api(`/api/runs/${body.runId}`));
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({
      id: body.runId,
      flowName: 'twoSteps',
      status: 'completed',
      attempt: 1,
      trigger: 'api',
      shop: SHOP,
      output: 'done',
    });
    expect(detail.body.steps.map((s: any) => [s.name, s.status, s.attempt])).toEqual([
      ['first', 'completed', 1],
      ['second', 'completed', 1],
    ]);
    expect(typeof detail.body.steps[0].durationMs).toBe('number');
    const other = { shop: OTHER_SHOP };
    expect((await t.api(`/api/runs/${body.runId}`, other)).status).toBe(404);
    expect((await t.api(`/api/runs/${body.runId}/cancel`, { method: 'POST', ...other })).status).toBe(404);
    expect((await t.api(`/api/runs/${body.runId}/retry`, { method: 'POST', ...other })).status).toBe(404);
    expect((await t.api(`/api/runs/${body.runId}`, { method: 'DELETE', ...other })).status).toBe(404);
    expect((await json(await t.api('/api/runs/bulk-delete', { method: 'POST', json: { ids: [body.runId] }, ...other }))).body).toEqual({
      deleted: 0,
      skipped: 1,
    });
    expect((await t.api('/api/runs/not-a-uuid')).status).toBe(404);
    expect((await t.api(`/api/runs/${body.runId}`)).status).toBe(200); // still there
  });

  it('cancel: an active run becomes canceled; a finished run answers 409', async () => {
    closeGate();
    const { body } = await run('sync', { since: 'x' });
    await waitForRun(get().db, body.runId, (r) => r.status === 'running');
    const canceled = await json(await t.api(`/api/runs/${body.runId}/cancel`, { method: 'POST' }));
    expect(canceled).toEqual({ status: 200, body: { runId: body.runId, status: 'canceled', previousStatus: 'running' } });
    openGate();
    await new Promise((r) => setTimeout(r, 100));
    expect((await waitForRun(get().db, body.runId)).status).toBe('canceled');
    const again = await json(await t.api(`/api/runs/${body.runId}/cancel`, { method: 'POST' }));
    expect(again.status).toBe(409);
    expect(again.body.status).toBe('canceled');
  });

  it("retry resume keeps completed step results and re-runs the rest, with the run's retry policy", async () => {
    failNext = 1;
    const { body } = await run('twoSteps', {});
    const failed = await waitForRun(get().db, body.runId);
    expect(failed.status).toBe('failed');
    const retried = await json(await t.api(`/api/runs/${body.runId}/retry?mode=resume`, { method: 'POST' }));
    expect(retried.status).toBe(202);
    expect(retried.body).toEqual({ runId: body.runId, status: 'pending', mode: 'resume', previousStatus: 'failed', deletedSteps: 1 });
    const done = await waitForRun(get().db, body.runId);
    expect(done.status).toBe('completed');
    expect(done.attempt).toBe(1); // the retry budget starts again
    expect([executions.get('first'), executions.get('second')]).toEqual([1, 2]);
    const [policy] = await get().db.query<{ p: any }>(sql`select retry_policy as p from runs where id = ${body.runId}::uuid`);
    expect(policy.p.maxAttempts).toBe(1); // the flow's policy, frozen at dispatch, kept by the retry
  });

  it('retry reset deletes every step result first; unknown modes resume; active runs answer 409', async () => {
    const { body } = await run('twoSteps', {});
    await waitForRun(get().db, body.runId);
    const reset = await json(await t.api(`/api/runs/${body.runId}/retry?mode=reset`, { method: 'POST' }));
    expect(reset.body).toMatchObject({ mode: 'reset', deletedSteps: 2 });
    await waitForRun(get().db, body.runId);
    expect([executions.get('first'), executions.get('second')]).toEqual([2, 2]);
    const other = await json(await t.api(`/api/runs/${body.runId}/retry?mode=whatever`, { method: 'POST' }));
    expect(other.body).toMatchObject({ mode: 'resume', deletedSteps: 0 });
    await waitForRun(get().db, body.runId);
    expect([executions.get('first'), executions.get('second')]).toEqual([2, 2]);

    closeGate();
    const active = await run('sync', { since: 'x' });
    const conflict = await json(await t.api(`/api/runs/${active.body.runId}/retry`, { method: 'POST' }));
    expect(conflict.status).toBe(409);
  });

  it('retry obeys the concurrency rule: 409 with existingRunId when another run of the flow is active', async () => {
    const first = await run('sync', { since: 'x' });
    await waitForRun(get().db, first.body.runId);
    closeGate();
    const second = await run('sync', { since: 'y' });
    const conflict = await json(await t.api(`/api/runs/${first.body.runId}/retry`, { method: 'POST' }));
    expect(conflict).toMatchObject({ status: 409, body: { existingRunId: second.body.runId } });
  });

  it('delete removes an inactive run with its steps and logs; an active run is 409', async () => {
    const { body } = await run('twoSteps', {});
    await waitForRun(get().db, body.runId);
    await get().db.query(
      sql`insert into logs (run_id, app_handle, shop, level, message, attempt) values (${body.runId}::uuid, 'default', ${SHOP}, 'info', 'x', 1)`,
    );
    expect(await json(await t.api(`/api/runs/${body.runId}`, { method: 'DELETE' }))).toEqual({
      status: 200,
      body: { ok: true, runId: body.runId },
    });
    const [counts] = await get().db.query<{ r: number; s: number; l: number }>(
      sql`select (select count(*) from runs)::int as r, (select count(*) from steps)::int as s, (select count(*) from logs)::int as l`,
    );
    expect(counts).toEqual({ r: 0, s: 0, l: 0 });
    expect((await t.api(`/api/runs/${body.runId}`, { method: 'DELETE' })).status).toBe(404);
    closeGate();
    const active = await run('sync', { since: 'x' });
    expect((await t.api(`/api/runs/${active.body.runId}`, { method: 'DELETE' })).status).toBe(409);
  });

  it('bulk delete: at most 100 ids, inactive ones deleted, active and unknown ones skipped, bad input 400', async () => {
    const done = await run('twoSteps', {});
    await waitForRun(get().db, done.body.runId);
    closeGate();
    const active = await run('sync', { since: 'x' });
    const unknown = '00000000-0000-4000-8000-000000000000';
    const result = await json(
      await t.api('/api/runs/bulk-delete', { method: 'POST', json: { ids: [done.body.runId, active.body.runId, unknown] } }),
    );
    expect(result).toEqual({ status: 200, body: { deleted: 1, skipped: 2 } });
    const tooMany = Array.from({ length: 101 }, () => unknown);
    expect((await json(await t.api('/api/runs/bulk-delete', { method: 'POST', json: { ids: tooMany } }))).body).toMatchObject({
      field: 'ids',
    });
    for (const bad of [{}, { ids: 'x' }, { ids: [] }, { ids: ['nope'] }]) {
      expect((await t.api('/api/runs/bulk-delete', { method: 'POST', json: bad })).status).toBe(400);
    }
  });
});
