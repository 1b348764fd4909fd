import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { MAX_STEP_RESULT_BYTES } from '../../src/flows/engine.ts';
import { cancelRun } from '../../src/flows/lifecycle.ts';
import { FAST_WORKER, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { InvalidDispatchError } from '../../src/routes/errors.ts';

// Per-test knobs and counters read by the flows below.
const calls = new Map<string, number>();
const count = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1);
const onErrorCalls: Array<{ message: string; attempt: number; final: boolean }> = [];
let release: (() => void) | undefined;
let onErrorThrows = false;

const app = defineApp();
const flows = {
  threeSteps: app.defineFlow({
    name: 'threeSteps',
    input: z.object({ n: z.number().default(1) }),
    async run(ctx, input) {
      const a = await ctx.step('a', () => {
        count('a');
        return { value: input.n, when: new Date(0) };
      });
      const b = await ctx.step('b', () => {
        count('b');
        return a.value * 2;
      });
      await ctx.log.info('between', { b });
      return ctx.step('c', () => {
        count('c');
        return { total: a.value + b, when: a.when };
      });
    },
  }),
  failsOnceAtC: app.defineFlow({
    name: 'failsOnceAtC',
    input: z.object({}),
    retryPolicy: { initialIntervalMs: 10, maxAttempts: 3 },
    async run(ctx) {
      await ctx.step('a', () => count('fa'));
      await ctx.step('b', () => count('fb'));
      return ctx.step('c', () => {
        count('fc');
        if ((calls.get('fc') ?? 0) === 1) throw new Error('transient failure');
        return 'ok';
      });
    },
  }),
  duplicateName: app.defineFlow({
    name: 'duplicateName',
    input: z.object({}),
    async run(ctx) {
      await ctx.step('same', () => 1);
      await ctx.step('same', () => 2);
    },
  }),
  bigResult: app.defineFlow({
    name: 'bigResult',
    input: z.object({}),
    retryPolicy: { maxAttempts: 1 },
    run: (ctx) => ctx.step('big', () => 'x'.repeat(MAX_STEP_RESULT_BYTES + 10)),
  }),
  stepTimeout: app.defineFlow({
    name: 'stepTimeout',
    input: z.object({}),
    retryPolicy: { maxAttempts: 1 },
    async run(ctx) {
      await ctx.step(
        'slow',
        ({ signal }) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener('abort', () => {
              count('step-signal-aborted');
              reject(signal.reason);
            });
          }),
        { timeout: 50 },
      );
    },
  }),
  sleeper: app.defineFlow({
    name: 'sleeper',
    input: z.object({}),
    async run(ctx) {
      await ctx.step('before', () => count('before-sleep'));
      await ctx.sleep('nap', '300ms');
      await ctx.step('after', () => count('after-sleep'));
      return { attempt: ctx.attempt };
    },
  }),
  alwaysFails: app.defineFlow({
    name: 'alwaysFails',
    input: z.object({}),
    retryPolicy: { maxAttempts: 3, initialIntervalMs: 40, backoffCoefficient: 2 },
    async run(ctx) {
      await ctx.log.info('attempt start', { attempt: ctx.attempt });
      count('always');
      throw new Error(`boom ${ctx.attempt}`);
    },
  }),
  flowTimeout: app.defineFlow({
    name: 'flowTimeout',
    input: z.object({}),
    timeout: 100,
    retryPolicy: { maxAttempts: 1 },
    async run(ctx) {
      // ignores the signal on purpose: its result must not be stored after the timeout
      await ctx.step('ignoresSignal', () => new Promise((r) => setTimeout(() => r('late'), 300)));
      await ctx.step('afterTimeout', () => count('after-timeout'));
    },
  }),
  waitsForCancel: app.defineFlow({
    name: 'waitsForCancel',
    input: z.object({}),
    async run(ctx) {
      await ctx.step(
        'wait',
        ({ signal }) =>
          new Promise((resolve) => {
            release = () => resolve('released');
            signal.addEventListener('abort', () => {
              count('cancel-seen');
              resolve('aborted');
            });
          }),
      );
      await ctx.step('afterCancel', () => count('after-cancel'));
    },
  }),
  swallowsDeterminism: app.defineFlow({
    name: 'swallowsDeterminism',
    input: z.object({}),
    async run(ctx) {
      await ctx.step('x', () => 1);
      try {
        await ctx.step('x', () => 2);
      } catch {
        /* swallowed on purpose */
      }
      return 'finished anyway';
    },
  }),
  dispatchesChild: app.defineFlow({
    name: 'dispatchesChild',
    input: z.object({}),
    async run(ctx) {
      const child = await ctx.step('dispatch', () => ctx.dispatchFlow({ flowName: 'threeSteps', input: { n: 5 } }));
      return child;
    },
  }),
  dispatchesToUnknownApp: app.defineFlow({
    name: 'dispatchesToUnknownApp',
    input: z.object({}),
    async run(ctx) {
      try {
        await ctx.dispatchFlow({ flowName: 'threeSteps', input: { n: 1 }, shopifyApp: 'unknown' });
        return { refused: false };
      } catch (error) {
        return {
          refused: true,
          name: (error as Error).name,
          message: (error as Error).message,
          field: (error as { field?: string }).field,
          typed: error instanceof InvalidDispatchError,
        };
      }
    },
  }),
};
const instance = app.defineConfig({
  flows,
  worker: FAST_WORKER,
  retryPolicy: { initialIntervalMs: 10 },
  onError: async (error, context) => {
    onErrorCalls.push({ message: (error as Error).message, attempt: context!.attempt, final: context!.final });
    if (onErrorThrows) throw new Error('hook exploded');
  },
});

describeEngines('run engine', (get) => {
  let t: TestRuntime;
  const dispatch = (flowName: string, input: unknown = {}) =>
    t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input, trigger: 'api' }).then((r) => r.runId);
  const steps = (runId: string) =>
    get().db.query<{ name: string; status: string; attempt: number; result: any; error: any }>(
      sql`select name, status, attempt, result, error from steps where run_id = ${runId}::uuid order by started_at, name`,
    );

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true });
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    calls.clear();
    onErrorCalls.length = 0;
    onErrorThrows = false;
  });

  it('runs a 3-step flow to completion and stores each step result', async () => {
    const runId = await dispatch('threeSteps', { n: 4 });
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('completed');
    expect(run.attempt).toBe(1);
    // the output is what the JSON round trip gives (the Date became a string), the same on replay
    expect(run.output).toEqual({ total: 12, when: '1970-01-01T00:00:00.000Z' });
    expect((await steps(runId)).map((s) => [s.name, s.status, s.result])).toEqual([
      ['a', 'completed', { value: 4, when: '1970-01-01T00:00:00.000Z' }],
      ['b', 'completed', 8],
      ['c', 'completed', { total: 12, when: '1970-01-01T00:00:00.000Z' }],
    ]);
    expect([calls.get('a'), calls.get('b'), calls.get('c')]).toEqual([1, 1, 1]);
  });

  it('replays completed steps on a retry without calling their functions again', async () => {
    const runId = await dispatch('failsOnceAtC');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('completed');
    expect(run.attempt).toBe(2);
    expect([calls.get('fa'), calls.get('fb'), calls.get('fc')]).toEqual([1, 1, 2]);
    const c = (await steps(runId)).find((s) => s.name === 'c')!;
    expect([c.status, c.attempt, c.result]).toEqual(['completed', 2, 'ok']);
  });

  it('fails the run at once with a determinism error when a step name is used twice', async () => {
    const runId = await dispatch('duplicateName');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('failed');
    expect(run.attempt).toBe(1); // not retried
    expect(run.error.name).toBe('DeterminismError');
    expect(run.error.message).toContain('Step name "same" was used twice');
  });

  it('fails the run even when the flow swallows the determinism error', async () => {
    const run = await waitForRun(get().db, await dispatch('swallowsDeterminism'));
    expect(run.status).toBe('failed');
    expect(run.error.name).toBe('DeterminismError');
  });

  it('fails a step whose result is over the size limit', async () => {
    const runId = await dispatch('bigResult');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('failed');
    expect(run.error.name).toBe('StepResultTooLargeError');
    expect(run.error.message).toMatch(/limit is 1048576 bytes/);
    const [big] = await steps(runId);
    expect([big.name, big.status, big.result]).toEqual(['big', 'failed', null]);
  });

  it('aborts the step signal at the step timeout and fails the attempt', async () => {
    const runId = await dispatch('stepTimeout');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ name: 'TimeoutError', message: 'Step "slow" timed out after 50 ms' });
    expect(calls.get('step-signal-aborted')).toBe(1);
    expect((await steps(runId))[0]).toMatchObject({ name: 'slow', status: 'failed' });
  });

  it('parks a sleeping run without holding a slot or using an attempt, then resumes it', async () => {
    const runId = await dispatch('sleeper');
    const sleeping = await waitForRun(get().db, runId, (r) => r.status === 'sleeping');
    expect(sleeping.attempt).toBe(1);
    await expect.poll(() => t.worker!.activeCount).toBe(0);
    const nap = (await steps(runId)).find((s) => s.name === 'nap')!;
    expect(nap.status).toBe('sleeping');
    expect(typeof nap.result.wakeAt).toBe('string');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('completed');
    expect(run.attempt).toBe(1);
    expect(run.output).toEqual({ attempt: 1 });
    expect([calls.get('before-sleep'), calls.get('after-sleep')]).toEqual([1, 1]);
    expect((await steps(runId)).map((s) => [s.name, s.status])).toEqual([
      ['before', 'completed'],
      ['nap', 'completed'],
      ['after', 'completed'],
    ]);
  });

  it('retries with backoff up to maxAttempts, calls onError for each failure, then fails', async () => {
    const runId = await dispatch('alwaysFails');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('failed');
    expect(run.attempt).toBe(3);
    expect(run.error.message).toBe('boom 3');
    expect(calls.get('always')).toBe(3);
    // onError runs after the final state is stored: the run can be read as failed a moment before the hook is called
    await expect.poll(() => onErrorCalls.length).toBe(3);
    expect(onErrorCalls).toEqual([
      { message: 'boom 1', attempt: 1, final: false },
      { message: 'boom 2', attempt: 2, final: false },
      { message: 'boom 3', attempt: 3, final: true },
    ]);
    // backoff: 40 ms then 80 ms between attempt starts (database clock)
    const starts = await get().db.query<{ ms: number }>(
      sql`select (extract(epoch from created_at) * 1000)::float8 as ms from logs where run_id = ${runId}::uuid and message = 'attempt start' order by id`,
    );
    expect(starts).toHaveLength(3);
    expect(starts[1].ms - starts[0].ms).toBeGreaterThanOrEqual(40);
    expect(starts[2].ms - starts[1].ms).toBeGreaterThanOrEqual(80);
  });

  it('keeps retrying when the onError hook itself throws', async () => {
    onErrorThrows = true;
    const run = await waitForRun(get().db, await dispatch('alwaysFails'));
    expect(run.status).toBe('failed');
    expect(run.attempt).toBe(3);
    expect(onErrorCalls).toHaveLength(3);
  });

  it('applies the flow timeout per attempt and stores no later step result', async () => {
    const runId = await dispatch('flowTimeout');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ name: 'TimeoutError', message: 'Flow "flowTimeout" attempt timed out after 100 ms' });
    await new Promise((r) => setTimeout(r, 400)); // the ignored step resolves meanwhile
    expect((await steps(runId)).filter((s) => s.status === 'completed')).toEqual([]);
    expect(calls.get('after-timeout')).toBeUndefined();
  });

  it('cancels a running run: its signal aborts and nothing more is stored', async () => {
    const runId = await dispatch('waitsForCancel');
    await waitForRun(get().db, runId, (r) => r.status === 'running');
    await expect.poll(() => release !== undefined).toBe(true);
    const result = await cancelRun(get().db, { appHandle: 'default', shop: SHOP }, runId);
    expect(result).toEqual({ runId, status: 'canceled', previousStatus: 'running' });
    await expect.poll(() => calls.get('cancel-seen'), { timeout: 2000 }).toBe(1);
    await new Promise((r) => setTimeout(r, 100));
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('canceled');
    expect(await steps(runId)).toEqual([]);
    expect(calls.get('after-cancel')).toBeUndefined();
    release = undefined;
  });

  it('instance.dispatchFlow enqueues through the running runtime (trigger dispatch)', async () => {
    const result = await instance.dispatchFlow({ flowName: 'threeSteps', input: { n: 2 }, shop: SHOP });
    expect(result.status).toBe('pending');
    expect((await waitForRun(get().db, result.runId)).output).toEqual({ total: 6, when: '1970-01-01T00:00:00.000Z' });
    const [row] = await get().db.query<{ trigger: string }>(sql`select trigger from runs where id = ${result.runId}::uuid`);
    expect(row.trigger).toBe('dispatch');
    await expect(instance.dispatchFlow({ flowName: 'threeSteps', input: { n: 1 }, shop: 'not a shop' })).rejects.toThrow(
      /not a shop domain/,
    );
  });

  it('lets a flow dispatch another flow for the same shop', async () => {
    const runId = await dispatch('dispatchesChild');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('completed');
    const child = await waitForRun(get().db, run.output.runId);
    expect(child.status).toBe('completed');
    const [row] = await get().db.query<{ shop: string; trigger: string; parent: string }>(
      sql`select shop, trigger, parent_run_id as parent from runs where id = ${run.output.runId}::uuid`,
    );
    expect(row).toEqual({ shop: SHOP, trigger: 'flow', parent: runId });
  });

  it('ctx.dispatchFlow refuses an unknown app handle with InvalidDispatchError and writes no run', async () => {
    const runId = await dispatch('dispatchesToUnknownApp');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('completed');
    expect(run.output).toEqual({
      refused: true,
      name: 'InvalidDispatchError',
      message: 'shopifyApp: unknown app handle "unknown"',
      field: 'shopifyApp',
      typed: true,
    });
    const rows = await get().db.query<{ n: number }>(sql`select count(*)::int as n from runs where app_handle = 'unknown'`);
    expect(rows).toEqual([{ n: 0 }]);
  });
});
