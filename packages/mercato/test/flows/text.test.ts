/**
 * Text PostgreSQL refuses (NUL, lone surrogates) never breaks a run or answers 500; log size limits; async input schemas.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { MAX_DATA_JSON_CHARS, MAX_MESSAGE_CHARS, TRUNCATED_MARKER } from '../../src/logs/writer.ts';
import { FAST_WORKER, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';

const onErrorCalls: Array<{ message: string; final: boolean }> = [];
const executions = new Map<string, number>();
const count = (key: string) => executions.set(key, (executions.get(key) ?? 0) + 1);

const app = defineApp();
const once = { maxAttempts: 1 };
const flows = {
  nulLog: app.defineFlow({
    name: 'nulLog',
    input: z.object({}),
    retryPolicy: once,
    async run(ctx) {
      void ctx.log.info('not awaited \u0000 nul', { bad: 'x\u0000y', ['k\u0000']: 1 });
      await ctx.log.warn('awaited \ud800 lone surrogate', { lone: 'a\udc00b' });
      return 'done';
    },
  }),
  nulError: app.defineFlow({
    name: 'nulError',
    input: z.object({}),
    retryPolicy: { maxAttempts: 2, initialIntervalMs: 10 },
    run() {
      throw new Error('bad \u0000 message');
    },
  }),
  nulResult: app.defineFlow({
    name: 'nulResult',
    input: z.object({}),
    retryPolicy: { maxAttempts: 3, initialIntervalMs: 10 },
    run: (ctx) => ctx.step('nul', () => ({ items: [{ name: 'x\u0000y' }] })),
  }),
  nulOutput: app.defineFlow({ name: 'nulOutput', input: z.object({}), retryPolicy: once, run: () => ({ name: '\ud800' }) }),
  limits: app.defineFlow({
    name: 'limits',
    input: z.object({}),
    retryPolicy: once,
    async run(ctx) {
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      await ctx.log.info('m'.repeat(MAX_MESSAGE_CHARS + 500));
      await ctx.log.info('exact', { s: 'd'.repeat(MAX_DATA_JSON_CHARS - 8) }); // {"s":"…"} is exactly the limit
      await ctx.log.info('big data', { s: 'd'.repeat(MAX_DATA_JSON_CHARS) });
      await ctx.log.info('circular', circular);
    },
  }),
  asyncRefine: app.defineFlow({
    name: 'asyncRefine',
    input: z.object({ code: z.string() }).refine(async (v) => v.code !== 'taken', { message: 'code is taken' }),
    retryPolicy: once,
    run: (_ctx, input) => {
      count('asyncRefine');
      return input.code;
    },
  }),
};
const instance = app.defineConfig({
  flows,
  worker: FAST_WORKER,
  onError: (error, context) => {
    onErrorCalls.push({ message: (error as Error).message, final: context!.final });
  },
});

describeEngines('text PostgreSQL refuses, log limits, async schemas', (get) => {
  let t: TestRuntime;
  const dispatch = (flowName: string, input: unknown = {}) =>
    t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input, trigger: 'api' }).then((r) => r.runId);
  const logs = (runId: string) =>
    get().db.query<{ level: string; message: string; data: any }>(
      sql`select level, message, data from logs where run_id = ${runId}::uuid order by id`,
    );

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true, http: true });
  });
  afterAll(() => t?.close());
  beforeEach(() => {
    onErrorCalls.length = 0;
    executions.clear();
  });

  it('stores log lines with NUL characters and lone surrogates replaced by U+FFFD, awaited or not', async () => {
    const runId = await dispatch('nulLog');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('completed');
    expect(await logs(runId)).toEqual([
      { level: 'info', message: 'not awaited \uFFFD nul', data: { bad: 'x\uFFFDy', ['k\uFFFD']: 1 } },
      { level: 'warn', message: 'awaited \uFFFD lone surrogate', data: { lone: 'a\uFFFDb' } },
    ]);
  });

  it('stores a failure whose message holds a NUL character, retries it and calls onError', async () => {
    const runId = await dispatch('nulError');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('failed');
    expect(run.attempt).toBe(2);
    expect(run.lost_leases).toBe(0);
    expect(run.error).toMatchObject({ name: 'Error', message: 'bad \uFFFD message' });
    expect(run.error.stack).not.toContain('\u0000');
    // onError runs after the final state is stored: the run can be read as failed a moment before the hook is called
    await expect.poll(() => onErrorCalls.length).toBe(2);
    expect(onErrorCalls).toEqual([
      { message: 'bad \u0000 message', final: false },
      { message: 'bad \u0000 message', final: true },
    ]);
  });

  it('fails a step whose JSON result holds a NUL character, at once, naming where it is', async () => {
    const runId = await dispatch('nulResult');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('failed');
    expect(run.attempt).toBe(1); // like any unserialisable result: not retried
    expect(run.error.name).toBe('StepResultNotSerializableError');
    expect(run.error.message).toBe(
      'Step "nul" returned a value that is not JSON-serialisable: result.items[0].name contains a NUL character (\\u0000), which PostgreSQL cannot store',
    );
    const steps = await get().db.query<{ name: string; status: string }>(sql`select name, status from steps where run_id = ${runId}::uuid`);
    expect(steps).toEqual([{ name: 'nul', status: 'failed' }]);
  });

  it('fails a run whose output holds a lone surrogate with a clear error', async () => {
    const run = await waitForRun(get().db, await dispatch('nulOutput'));
    expect(run.status).toBe('failed');
    expect(run.error.message).toContain('output.name contains a lone UTF-16 surrogate');
  });

  it('answers 400 naming the field for a NUL in a flow input, a run search or a log query', async () => {
    const input = await json(await t.api('/api/flows/nulLog/run', { method: 'POST', json: { input: { customer: { name: 'a\u0000b' } } } }));
    expect(input.status).toBe(400);
    expect(input.body).toMatchObject({
      field: 'input.customer.name',
      error: 'input.customer.name: contains a NUL character (\\u0000), which cannot be stored',
    });
    const key = await json(await t.api('/api/flows/nulLog/run', { method: 'POST', json: { input: { list: ['ok', '\ud800'] } } }));
    expect([key.status, key.body.field]).toEqual([400, 'input.list[1]']);
    const search = await json(await t.api('/api/runs?search=%00'));
    expect([search.status, search.body.field]).toEqual([400, 'search']);
    const runId = await dispatch('nulLog');
    await waitForRun(get().db, runId);
    for (const path of [`/api/runs/${runId}/logs?q=%00`, `/api/runs/${runId}/logs/export?q=a%00b`]) {
      const res = await json(await t.api(path));
      expect([path, res.status, res.body.field]).toEqual([path, 400, 'q']);
    }
  });

  it('cuts long messages and replaces oversized or unserialisable data as documented', async () => {
    const runId = await dispatch('limits');
    expect((await waitForRun(get().db, runId)).status).toBe('completed');
    const [long, exact, big, circular] = await logs(runId);
    expect(long.message).toHaveLength(8192);
    expect(long.message.endsWith('…[truncated]')).toBe(true);
    expect(long.message).toBe('m'.repeat(8192 - TRUNCATED_MARKER.length) + TRUNCATED_MARKER);
    expect(JSON.stringify(exact.data)).toHaveLength(32768);
    expect(big.data).toEqual({
      _truncated: true,
      preview: JSON.stringify({ s: 'd'.repeat(MAX_DATA_JSON_CHARS) }).slice(0, 1024) + '…[truncated]',
    });
    expect(Object.keys(circular.data)).toEqual(['_unserializable']);
  });

  it('runs async refinements of the input schema at dispatch and in the worker', async () => {
    await expect(dispatch('asyncRefine', { code: 'taken' })).rejects.toMatchObject({
      name: 'InvalidDispatchError',
      message: 'Invalid input for flow "asyncRefine"',
    });
    const http = await json(await t.api('/api/flows/asyncRefine/run', { method: 'POST', json: { input: { code: 'taken' } } }));
    expect(http.status).toBe(400);
    expect(http.body.issues).toEqual([{ path: '', message: 'code is taken', code: 'custom' }]);
    const run = await waitForRun(get().db, await dispatch('asyncRefine', { code: 'free' }));
    expect([run.status, run.output]).toEqual(['completed', 'free']);
    expect(executions.get('asyncRefine')).toBe(1);
  });
});
