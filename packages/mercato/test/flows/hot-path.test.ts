/**
 * The run's hot path, statement by statement (docs/architecture.md "The run's hot path"): what the worker sends to the
 * database for a run, counted on a real database through a counting `db.query`. A one-step run that never ran before is
 * one claim (shared by the runs it claims) and one completion statement that also stores its step (shared by the runs
 * completing in the same turn): no read of stored steps, no separate step write. A step followed by more flow code is
 * stored at the end of its turn, not held until the run completes.
 */
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import type { Database } from '../../src/db/engine.ts';
import { isPrepared } from '../../src/db/sql.ts';
import { MAX_COMPLETION_BATCH, MAX_COMPLETION_BATCH_CHARS, nextBatchSize } from '../../src/flows/completions.ts';
import type { Completion } from '../../src/flows/store/leases.ts';
import { describeEngines } from '../../src/db/testing.ts';
import type { Worker } from '../../src/worker/index.ts';
import { SHOP, type TestRuntime, startTestRuntime, testWorker, waitForRun } from '../helpers/runtime.ts';

let failFirst = true;
let afterStepSeen: ((stored: boolean) => void) | undefined;
const app = defineApp();
const instance = app.defineConfig({
  flows: {
    oneStep: app.defineFlow({
      name: 'oneStep',
      input: z.object({ n: z.number() }),
      concurrency: null,
      run: (ctx, input) => ctx.step('only', () => input.n * 2),
    }),
    threeSteps: app.defineFlow({
      name: 'threeSteps',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) => {
        const a = await ctx.step('a', () => 1);
        const b = await ctx.step('b', () => a + 1);
        return ctx.step('c', () => b + 1);
      },
    }),
    failsOnce: app.defineFlow({
      name: 'failsOnce',
      input: z.object({}),
      concurrency: null,
      retryPolicy: { maxAttempts: 2, initialIntervalMs: 1 },
      run: async (ctx) => {
        await ctx.step('kept', () => 'v');
        if (failFirst) {
          failFirst = false;
          throw new Error('once');
        }
        return 'ok';
      },
    }),
    slowAfterStep: app.defineFlow({
      name: 'slowAfterStep',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) => {
        await ctx.step('early', () => 'stored before the flow ends');
        // flow code outside a step that takes a while: the step's checkpoint does not wait for it
        await new Promise<void>((resolve) => {
          afterStepSeen = () => resolve();
        });
        return 'done';
      },
    }),
  },
  worker: { pollIntervalMs: 50, pollMaxIntervalMs: 200, leaseDurationMs: 5000, concurrency: 10 },
});

/** The database, with every statement of `query` recorded by name (a prepared statement's name, else its first words). */
function counting(db: Database, seen: string[]): Database {
  const query: Database['query'] = (statement) => {
    seen.push(isPrepared(statement) ? statement.name : 'sql');
    return db.query(statement);
  };
  return { ...db, query };
}

describeEngines('the run hot path', (get) => {
  let t: TestRuntime;
  let seen: string[] = [];
  let worker: Worker | undefined;
  const startWorker = async () => {
    worker = testWorker(t.runtime, counting(get().db, seen), { dispatch: t.runtime.dispatch });
    await worker.start();
  };
  const dispatch = (flowName: string, input: Record<string, unknown> = {}) =>
    t.runtime.dispatch({ appHandle: undefined, shop: SHOP, flowName, input, trigger: 'api' }).then((r) => r.runId);
  const count = (name: string) => seen.filter((s) => s === `mercato_${name}`).length;

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db);
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    await get().reset();
    seen = [];
    failFirst = true;
  });
  afterEach(async () => {
    afterStepSeen?.(true);
    await worker?.stop();
    worker = undefined;
  });

  it('a first execution of a one-step run: a claim and one completion statement that stores the step, nothing else', async () => {
    const id = await dispatch('oneStep', { n: 21 });
    await startWorker();
    const run = await waitForRun(get().db, id);
    expect([run.status, run.output]).toEqual(['completed', 42]);
    expect(count('stored_steps')).toBe(0);
    expect(count('store_step')).toBe(0);
    expect(count('complete_batch')).toBe(1);
    const steps = await get().db.query<{ name: string; status: string; result: unknown }>(
      sql`select name, status, result from steps where run_id = ${id}::uuid`,
    );
    expect(steps).toEqual([{ name: 'only', status: 'completed', result: 42 }]);
  });

  it('the runs of one claim complete in one statement', async () => {
    const ids = await Promise.all(Array.from({ length: 8 }, (_, n) => dispatch('oneStep', { n })));
    await startWorker();
    for (const id of ids) expect((await waitForRun(get().db, id)).status).toBe('completed');
    const completions = count('complete_batch');
    // every run was claimed and completed, in fewer statements than runs (the claim takes all 8 due runs at once)
    expect(completions).toBeLessThan(ids.length);
    expect(count('stored_steps')).toBe(0);
    const [row] = await get().db.query<{ n: number }>(sql`select count(*)::int as n from steps where status = 'completed'`);
    expect(row.n).toBe(ids.length);
  });

  it('steps before the last are stored one by one as the flow moves on; the last with the completion', async () => {
    const id = await dispatch('threeSteps');
    await startWorker();
    const run = await waitForRun(get().db, id);
    expect([run.status, run.output]).toEqual(['completed', 3]);
    expect(count('store_step')).toBe(2);
    expect(count('complete_batch')).toBe(1);
    const steps = await get().db.query<{ name: string; result: unknown }>(
      sql`select name, result from steps where run_id = ${id}::uuid order by name`,
    );
    expect(steps).toEqual([
      { name: 'a', result: 1 },
      { name: 'b', result: 2 },
      { name: 'c', result: 3 },
    ]);
  });

  it('a retry reads the stored steps (and replays them); the failed attempt kept its completed step', async () => {
    const id = await dispatch('failsOnce');
    await startWorker();
    const run = await waitForRun(get().db, id);
    expect([run.status, run.output, run.attempt]).toEqual(['completed', 'ok', 2]);
    expect(count('stored_steps')).toBe(1); // the second attempt only
    expect(count('store_step')).toBe(1); // 'kept', stored before the first attempt's failure was written
  });

  it('dispatches wake the workers with at most one NOTIFY per batch: a lone one in its insert, concurrent ones coalesced', async () => {
    const heard: string[] = [];
    const stop = await get().db.listen('mercato_runs', (payload) => heard.push(payload));
    const settle = () => new Promise((r) => setTimeout(r, 300));
    try {
      await dispatch('oneStep', { n: 1 });
      await settle();
      expect(heard).toEqual(['']); // one, sent by the insert statement itself
      heard.length = 0;
      const ids = await Promise.all(Array.from({ length: 20 }, (_, n) => dispatch('oneStep', { n })));
      await settle();
      expect(new Set(ids).size).toBe(20);
      expect(heard.length).toBeGreaterThanOrEqual(1);
      expect(heard.length).toBeLessThan(20);
    } finally {
      await stop();
    }
  });

  it('a completed step is stored at the end of its turn while the flow goes on outside any step', async () => {
    const id = await dispatch('slowAfterStep');
    await startWorker();
    await expect
      .poll(async () => (await get().db.query(sql`select name from steps where run_id = ${id}::uuid and status = 'completed'`)).length, {
        timeout: 5000,
      })
      .toBe(1);
    const [running] = await get().db.query<{ status: string }>(sql`select status from runs where id = ${id}::uuid`);
    expect(running.status).toBe('running');
    afterStepSeen?.(true);
    expect((await waitForRun(get().db, id)).output).toBe('done');
  });
});

describe('completion batches', () => {
  const completion = (chars: number): Completion => ({ runId: 'r', leaseToken: 't', outputJson: 'x'.repeat(chars) });
  it('take as many queued completions as fit the limits, and always at least one', () => {
    expect(nextBatchSize([])).toBe(0);
    expect(nextBatchSize(Array.from({ length: 5 }, () => completion(10)))).toBe(5);
    expect(nextBatchSize(Array.from({ length: MAX_COMPLETION_BATCH + 5 }, () => completion(1)))).toBe(MAX_COMPLETION_BATCH);
    // a completion larger than the limit goes alone; the next batch starts after it
    expect(nextBatchSize([completion(MAX_COMPLETION_BATCH_CHARS * 2), completion(10)])).toBe(1);
    expect(nextBatchSize([completion(10), completion(MAX_COMPLETION_BATCH_CHARS)])).toBe(1);
    expect(nextBatchSize([completion(MAX_COMPLETION_BATCH_CHARS / 2), completion(MAX_COMPLETION_BATCH_CHARS / 2 - 1), completion(5)])).toBe(
      2,
    );
  });
});
