/**
 * Logs are written once: outside-step ctx.log lines are not written again when the flow body replays (after a sleep,
 * a run-level retry, a crash reclaim, a manual resume); lines written in a step belong to that execution of the step
 * and are written again when the step runs again. Real worker, real database, real HTTP.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { FAST_WORKER, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';

let heldExecutions = 0;
let releaseFirstHeld: (() => void) | undefined;
let outsideFailures = 0;

const app = defineApp();
const quickRetry = { maxAttempts: 3, initialIntervalMs: 10 };
const instance = app.defineConfig({
  flows: {
    sleepy: app.defineFlow({
      name: 'sleepy',
      input: z.object({}),
      async run(ctx) {
        await ctx.log.info('start');
        await ctx.step('a', async () => {
          await ctx.log.info('in a');
          return 1;
        });
        void ctx.log.info('before nap', { n: 1 }); // not awaited: numbered at the call all the same
        await ctx.sleep('nap', '150ms');
        await ctx.log.warn('after nap');
        await ctx.step('b', () => {
          void ctx.log.info('in b');
          return 2;
        });
        await ctx.log.info('end');
        return 'done';
      },
    }),
    flakyStep: app.defineFlow({
      name: 'flakyStep',
      input: z.object({}),
      retryPolicy: quickRetry,
      async run(ctx) {
        await ctx.log.info('start');
        await ctx.step('ok', () => ctx.log.info('in ok'));
        await ctx.log.info('before flaky');
        await ctx.step('flaky', async ({ attempt }) => {
          await ctx.log.warn('in flaky', { attempt });
          if (attempt < 3) throw new Error(`flaky ${attempt}`);
          return 'ok';
        });
        await ctx.log.info('after flaky');
      },
    }),
    failsOutside: app.defineFlow({
      name: 'failsOutside',
      input: z.object({}),
      retryPolicy: quickRetry,
      async run(ctx) {
        await ctx.log.info('start');
        await ctx.step('s', () => ctx.log.info('in s'));
        await ctx.log.info('checking');
        if (outsideFailures++ === 0) throw new Error('not ready yet'); // thrown by the flow body, not by a step
        await ctx.log.info('done');
      },
    }),
    diverges: app.defineFlow({
      name: 'diverges',
      input: z.object({}),
      retryPolicy: quickRetry,
      async run(ctx) {
        await ctx.log.info('attempt start', { attempt: ctx.attempt }); // other data on each attempt: a new line
        await ctx.log.info('same every time');
        if (ctx.attempt === 1) throw new Error('first attempt fails');
      },
    }),
    crashy: app.defineFlow({
      name: 'crashy',
      input: z.object({}),
      async run(ctx) {
        await ctx.log.info('start');
        await ctx.step('a', () => 'a');
        await ctx.log.info('between');
        await ctx.step('held', () => {
          void ctx.log.info('in held');
          // the first execution hangs (its worker "dies"); the execution after the reclaim goes through
          if (heldExecutions++ === 0) return new Promise((resolve) => (releaseFirstHeld = () => resolve('stale')));
          return 'released';
        });
        await ctx.log.info('end');
      },
    }),
  },
  worker: FAST_WORKER,
});

interface Line {
  level: string;
  message: string;
  step: string | null;
  attempt: number;
  data?: unknown;
}

describeEngines('logs are written once', (get) => {
  let t: TestRuntime;
  const dispatch = (flowName: string) =>
    t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input: {}, trigger: 'api' }).then((r) => r.runId);
  /** Every stored line of the run, oldest first. */
  const lines = (runId: string) =>
    get().db.query<Line>(sql`select level, message, step, attempt, data from logs where run_id = ${runId}::uuid order by id`);
  const short = (rows: Line[]) => rows.map((l) => [l.message, l.step, l.attempt]);
  /** The lines as GET /api/runs/:id/logs shows them, turned oldest first. */
  const apiLines = async (runId: string) => {
    const res = await t.api(`/api/runs/${runId}/logs?limit=200`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { logs: Array<Line & { id: number }>; total: number };
    expect(body.total).toBe(body.logs.length);
    return body.logs.reverse();
  };

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true, http: true });
  });
  afterAll(() => t?.close());
  beforeEach(() => {
    heldExecutions = 0;
    outsideFailures = 0;
    releaseFirstHeld = undefined;
  });

  it('writes the lines before and after a sleep once (the body replays after the wake-up)', async () => {
    const runId = await dispatch('sleepy');
    const run = await waitForRun(get().db, runId);
    expect([run.status, run.output, run.attempt]).toEqual(['completed', 'done', 1]);
    const expected = [
      { level: 'info', message: 'start', step: null, attempt: 1, data: null },
      { level: 'info', message: 'in a', step: 'a', attempt: 1, data: null },
      { level: 'info', message: 'before nap', step: null, attempt: 1, data: { n: 1 } },
      { level: 'warn', message: 'after nap', step: null, attempt: 1, data: null },
      { level: 'info', message: 'in b', step: 'b', attempt: 1, data: null },
      { level: 'info', message: 'end', step: null, attempt: 1, data: null },
    ];
    expect(await lines(runId)).toEqual(expected);
    // the API shows the same lines, and nothing of the bookkeeping
    const shown = await apiLines(runId);
    expect(shown.map(({ level, message, step, attempt, data }) => ({ level, message, step, attempt, data }))).toEqual(expected);
    expect(Object.keys(shown[0]).sort()).toEqual(['attempt', 'context', 'createdAt', 'data', 'id', 'level', 'message', 'step']);
  });

  it('a failing step retried by the run: outside lines once, the step lines of each of its attempts', async () => {
    const runId = await dispatch('flakyStep');
    const run = await waitForRun(get().db, runId);
    expect([run.status, run.attempt]).toEqual(['completed', 3]);
    expect(short(await lines(runId))).toEqual([
      ['start', null, 1],
      ['in ok', 'ok', 1],
      ['before flaky', null, 1],
      ['in flaky', 'flaky', 1],
      ['Attempt 1 failed, retrying in 10 ms: flaky 1', null, 1],
      ['in flaky', 'flaky', 2], // a new attempt of the step: its lines again
      ['Attempt 2 failed, retrying in 20 ms: flaky 2', null, 2],
      ['in flaky', 'flaky', 3],
      ['after flaky', null, 3], // first reached in attempt 3, written then
    ]);
    expect((await lines(runId)).filter((l) => l.message === 'in flaky').map((l) => l.data)).toEqual([
      { attempt: 1 },
      { attempt: 2 },
      { attempt: 3 },
    ]);
  });

  it('a run-level retry after the flow body threw: the lines before the failure are not written again', async () => {
    const runId = await dispatch('failsOutside');
    const run = await waitForRun(get().db, runId);
    expect([run.status, run.attempt]).toEqual(['completed', 2]);
    expect(short(await apiLines(runId))).toEqual([
      ['start', null, 1],
      ['in s', 's', 1],
      ['checking', null, 1],
      ['Attempt 1 failed, retrying in 10 ms: not ready yet', null, 1],
      ['done', null, 2],
    ]);
  });

  it('a line whose data differs from the stored one at its position is a new line: written', async () => {
    const runId = await dispatch('diverges');
    expect((await waitForRun(get().db, runId)).status).toBe('completed');
    const rows = await lines(runId);
    expect(rows.map((l) => [l.message, l.data, l.attempt])).toEqual([
      ['attempt start', { attempt: 1 }, 1],
      ['same every time', null, 1],
      [
        'Attempt 1 failed, retrying in 10 ms: first attempt fails',
        { error: { name: 'Error', message: 'first attempt fails' }, final: false },
        1,
      ],
      ['attempt start', { attempt: 2 }, 2],
    ]);
  });

  it('a crash reclaim replays the same attempt: outside lines once, the interrupted step writes its lines again', async () => {
    const runId = await dispatch('crashy');
    await expect.poll(() => heldExecutions, { timeout: 5000 }).toBe(1);
    await expect.poll(async () => (await lines(runId)).length, { timeout: 5000 }).toBe(3);
    // the worker "dies": its lease expires without a heartbeat, and a worker reclaims the run for the same attempt
    await get().db.query(
      sql`update runs set lease_owner = 'dead-worker/1', lease_expires_at = now() - interval '1 second' where id = ${runId}::uuid`,
    );
    const run = await waitForRun(get().db, runId);
    expect([run.status, run.attempt, run.lost_leases]).toEqual(['completed', 1, 1]);
    releaseFirstHeld?.(); // the stale execution goes on: its result and anything after it are refused
    await new Promise((r) => setTimeout(r, 100));
    expect(short(await lines(runId))).toEqual([
      ['start', null, 1],
      ['between', null, 1],
      ['in held', 'held', 1],
      ['in held', 'held', 1], // the step ran again (cut off by the crash): a new execution of it
      ['end', null, 1],
    ]);
  });

  it('a manual resume writes nothing again; a reset writes every line again, with the new attempt', async () => {
    const runId = await dispatch('sleepy');
    expect((await waitForRun(get().db, runId)).status).toBe('completed');
    const first = await lines(runId);
    expect(first).toHaveLength(6);

    const resumed = await t.api(`/api/runs/${runId}/retry?mode=resume`, { method: 'POST' });
    expect(resumed.status).toBe(202);
    expect((await waitForRun(get().db, runId, (r) => r.status === 'completed' && r.attempt === 1)).status).toBe('completed');
    const [{ attempt: absolute }] = await get().db.query<{ attempt: number }>(sql`select attempt from runs where id = ${runId}::uuid`);
    expect(absolute).toBe(2); // it did run again
    expect(await lines(runId)).toEqual(first);

    const reset = await t.api(`/api/runs/${runId}/retry?mode=reset`, { method: 'POST' });
    expect(reset.status).toBe(202);
    await waitForRun(get().db, runId, (r) => r.status === 'completed');
    const after = await lines(runId);
    expect(after.slice(0, 6)).toEqual(first);
    expect(short(after.slice(6))).toEqual([
      ['start', null, 3],
      ['in a', 'a', 3],
      ['before nap', null, 3],
      ['after nap', null, 3],
      ['in b', 'b', 3],
      ['end', null, 3],
    ]);
  });
});
