/**
 * NonRetriableError and RetryAfterError, thrown by flow code (in a step and in the flow body), on both engines:
 * the run fails after one attempt whatever maxAttempts says; the next attempt waits the named delay, not the backoff.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NonRetriableError, RetryAfterError } from 'mercato';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { FAST_WORKER, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';

const app = defineApp();
const attempts = new Map<string, number>();
const onErrorCalls: Array<{ name: string; attempt: number; final: boolean }> = [];
const count = (key: string) => {
  const n = (attempts.get(key) ?? 0) + 1;
  attempts.set(key, n);
  return n;
};

const flows = {
  nonRetriableInStep: app.defineFlow({
    name: 'nonRetriableInStep',
    input: z.object({}),
    async run(ctx) {
      await ctx.step('push', async () => {
        count('nonRetriableInStep');
        throw new NonRetriableError('customer 42 does not exist', { cause: new Error('404') });
      });
    },
  }),
  nonRetriableInBody: app.defineFlow({
    name: 'nonRetriableInBody',
    input: z.object({}),
    async run() {
      count('nonRetriableInBody');
      throw new NonRetriableError('input refused by the CRM');
    },
  }),
  retryAfter: app.defineFlow({
    name: 'retryAfter',
    input: z.object({ delay: z.union([z.number(), z.string()]) }),
    async run(ctx, input) {
      return ctx.step('call', async () => {
        const n = count('retryAfter');
        if (n === 1) throw new RetryAfterError('rate limited', input.delay);
        return { attempt: n };
      });
    },
  }),
  retryAfterEveryTime: app.defineFlow({
    name: 'retryAfterEveryTime',
    input: z.object({}),
    async run() {
      count('retryAfterEveryTime');
      throw new RetryAfterError('still rate limited', 20);
    },
  }),
};

const instance = app.defineConfig({
  flows,
  worker: FAST_WORKER,
  // a backoff far longer than the delays the errors ask for: a retry that follows it would not finish in the test
  retryPolicy: { maxAttempts: 3, initialIntervalMs: 600_000 },
  onError: async (error, context) => {
    onErrorCalls.push({ name: (error as Error).name, attempt: context!.attempt, final: context!.final });
  },
});

describe('RetryAfterError', () => {
  it('takes milliseconds, a duration or a Date, and refuses anything else where it is made', () => {
    expect(new RetryAfterError('x', 250).retryAfterMs).toBe(250);
    expect(new RetryAfterError('x', '30s').retryAfterMs).toBe(30_000);
    expect(new RetryAfterError('x', new Date(Date.now() - 5000)).retryAfterMs).toBe(0);
    const inAMinute = new RetryAfterError('x', new Date(Date.now() + 60_000)).retryAfterMs;
    expect(inAMinute).toBeGreaterThan(59_000);
    expect(inAMinute).toBeLessThanOrEqual(60_000);
    for (const bad of [-1, Number.NaN, Infinity, 'soon', 31 * 86_400_000]) {
      expect(() => new RetryAfterError('x', bad as number), String(bad)).toThrow(RangeError);
    }
    const e = new NonRetriableError('y', { cause: 'z' });
    expect([e.name, e.retryable, e.cause]).toEqual(['NonRetriableError', false, 'z']);
  });
});

describeEngines('errors that steer retries', (get) => {
  let t: TestRuntime;
  const dispatch = (flowName: string, input: unknown = {}) =>
    t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input, trigger: 'api' }).then((r) => r.runId);
  const errorLines = (runId: string) =>
    get().db.query<{ message: string }>(sql`select message from logs where run_id = ${runId}::uuid and level = 'error' order by id`);

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true });
  });
  afterAll(() => t?.close());
  beforeEach(() => {
    attempts.clear();
    onErrorCalls.length = 0;
  });

  it.each(['nonRetriableInStep', 'nonRetriableInBody'])('%s: fails after one attempt although 3 are allowed', async (flowName) => {
    const run = await waitForRun(get().db, await dispatch(flowName));
    expect(run.status).toBe('failed');
    expect(run.attempt).toBe(1);
    expect(run.error).toMatchObject({ name: 'NonRetriableError' });
    expect(attempts.get(flowName)).toBe(1);
    await expect.poll(() => onErrorCalls.length).toBe(1);
    expect(onErrorCalls).toEqual([{ name: 'NonRetriableError', attempt: 1, final: true }]);
  });

  it.each([
    [150, 'retrying in 150 ms'],
    ['1s', 'retrying in 1000 ms'],
  ])('a RetryAfterError(%s) schedules the next attempt after that delay, not the 10-minute backoff', async (delay, logged) => {
    const runId = await dispatch('retryAfter', { delay });
    const run = await waitForRun(get().db, runId, undefined, 15_000);
    expect(run.status).toBe('completed');
    expect(run.attempt).toBe(2);
    expect(run.output).toEqual({ attempt: 2 });
    expect(await errorLines(runId)).toEqual([{ message: `Attempt 1 failed, ${logged}: rate limited` }]);
  });

  it('a RetryAfterError on the last attempt fails the run', async () => {
    const runId = await dispatch('retryAfterEveryTime');
    const run = await waitForRun(get().db, runId, undefined, 15_000);
    expect(run.status).toBe('failed');
    expect(run.attempt).toBe(3);
    expect(attempts.get('retryAfterEveryTime')).toBe(3);
    expect((await errorLines(runId)).map((l) => l.message)).toEqual([
      'Attempt 1 failed, retrying in 20 ms: still rate limited',
      'Attempt 2 failed, retrying in 20 ms: still rate limited',
      'Attempt 3 failed: still rate limited',
    ]);
  });
});
