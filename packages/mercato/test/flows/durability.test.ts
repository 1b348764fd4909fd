/**
 * What the engine guarantees when things go wrong: log lines are written before the result that follows them and a
 * failing log write never fails the run; the final state write is retried; bad step timeouts; the flow timeout counts
 * execution time per attempt; dispatch-level retry policies; a throwing onError hook.
 * Database failures are real: test triggers make PostgreSQL (or PGlite) refuse or slow down a write.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { FAST_WORKER, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { capturingLogger } from '../kit/index.ts';

const executions = new Map<string, number>();
const count = (key: string) => executions.set(key, (executions.get(key) ?? 0) + 1);
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const { logger: warnLogger, lines: logged } = capturingLogger('warn');
let onErrorThrows = false;

const app = defineApp();
const once = { maxAttempts: 1 };
const flows = {
  slowLogs: app.defineFlow({
    name: 'slowLogs',
    input: z.object({}),
    retryPolicy: once,
    async run(ctx) {
      await ctx.step('s', () => {
        void ctx.log.info('slow in step');
        return 1;
      });
      void ctx.log.info('slow last');
      return 'ok';
    },
  }),
  failingLogs: app.defineFlow({
    name: 'failingLogs',
    input: z.object({}),
    retryPolicy: once,
    async run(ctx) {
      void ctx.log.info('explode');
      await ctx.log.info('explode');
      await ctx.step('s', () => ctx.log.info('explode'));
      await ctx.log.info('after');
      return 'survived';
    },
  }),
  flakyFinal: app.defineFlow({
    name: 'flakyFinal',
    input: z.object({}),
    run: () => {
      count('flakyFinal');
      return 'stored';
    },
  }),
  badStepTimeout: app.defineFlow({
    name: 'badStepTimeout',
    input: z.object({ timeout: z.string() }),
    retryPolicy: { maxAttempts: 3, initialIntervalMs: 10 },
    async run(ctx, input) {
      count('badStepTimeout');
      try {
        await ctx.step('t', () => count('step-ran'), { timeout: Number(input.timeout) });
      } catch {
        // swallowed on purpose: the run fails anyway
      }
      return 'swallowed';
    },
  }),
  timeoutAcrossSleep: app.defineFlow({
    name: 'timeoutAcrossSleep',
    input: z.object({ workMs: z.number(), sleepMs: z.number() }),
    timeout: 1500,
    retryPolicy: once,
    async run(ctx, input) {
      await ctx.step('before', () => wait(input.workMs));
      await ctx.sleep('nap', input.sleepMs);
      await ctx.step('after', () => wait(input.workMs));
      return 'in time';
    },
  }),
  reclaimedLate: app.defineFlow({
    name: 'reclaimedLate',
    input: z.object({}),
    timeout: 5000,
    retryPolicy: once,
    run: (ctx) =>
      ctx.step(
        'long',
        ({ signal }) =>
          new Promise((resolve) => {
            const timer = setTimeout(() => resolve('finished'), 3000);
            signal.addEventListener('abort', () => clearTimeout(timer));
          }),
      ),
  }),
  busy: app.defineFlow({
    name: 'busy',
    input: z.object({}),
    timeout: 60_000,
    retryPolicy: once,
    run: (ctx) => ctx.step('busy', () => wait(800)),
  }),
  alwaysFails: app.defineFlow({
    name: 'alwaysFails',
    input: z.object({}),
    concurrency: null,
    retryPolicy: { maxAttempts: 5, backoffCoefficient: 3 },
    run: (ctx) => {
      throw new Error(`boom ${ctx.attempt}`);
    },
  }),
};
const instance = app.defineConfig({
  flows,
  worker: FAST_WORKER,
  retryPolicy: { initialIntervalMs: 10, maxIntervalMs: 5000 },
  onError: () => {
    if (onErrorThrows) throw new Error('hook exploded');
  },
});

describeEngines('engine durability', (get) => {
  let t: TestRuntime;
  const dispatch = (flowName: string, input: unknown = {}, retryPolicy?: Record<string, number>) =>
    t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input, trigger: 'api', retryPolicy }).then((r) => r.runId);
  const logsOf = (runId: string) =>
    get().db.query<{ message: string }>(sql`select message from logs where run_id = ${runId}::uuid order by id`);

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: { heartbeatIntervalMs: 100 }, logger: warnLogger });
    const db = get().db;
    // Test triggers: "slow…" log lines take 300 ms to insert (and are timestamped when stored), "explode" lines are
    // refused, and the first two final writes of flakyFinal fail (a sequence is not rolled back by the error).
    await db.exec(`
      create sequence test_flaky_final;
      create function test_logs_trigger() returns trigger language plpgsql as $$
      begin
        if new.message like 'slow%' then perform pg_sleep(0.3); new.created_at := clock_timestamp(); end if;
        if new.message = 'explode' then raise exception 'log store is down'; end if;
        return new;
      end $$;
      create trigger test_logs before insert on logs for each row execute function test_logs_trigger();
      create function test_runs_trigger() returns trigger language plpgsql as $$
      begin
        if new.flow_name = 'flakyFinal' and new.status = 'completed' then
          if nextval('test_flaky_final') <= 2 then raise exception 'database briefly unavailable'; end if;
        end if;
        return new;
      end $$;
      create trigger test_runs before update on runs for each row execute function test_runs_trigger();`);
  });
  afterAll(() => t?.close());
  beforeEach(() => {
    executions.clear();
    logged.length = 0;
    onErrorThrows = false;
  });

  it('writes log lines before the step result and the final state that follow them, awaited or not', async () => {
    const runId = await dispatch('slowLogs');
    const run = await waitForRun(get().db, runId);
    expect(run.status).toBe('completed');
    // read right when the run is seen completed: both lines are already there. The last step's checkpoint is stored
    // with the completion (one commit), so the line logged after the step is stored before it too.
    const rows = await get().db.query<{ message: string; before_step: boolean; before_end: boolean }>(sql`
      select l.message, l.created_at <= s.finished_at as before_step, l.created_at <= r.finished_at as before_end
      from logs l join runs r on r.id = l.run_id join steps s on s.run_id = l.run_id and s.name = 's'
      where l.run_id = ${runId}::uuid order by l.id`);
    expect(rows).toEqual([
      { message: 'slow in step', before_step: true, before_end: true },
      { message: 'slow last', before_step: true, before_end: true },
    ]);
  });

  it('a log write the database refuses is reported and neither crashes the worker nor fails the run', async () => {
    const runId = await dispatch('failingLogs');
    const run = await waitForRun(get().db, runId);
    expect([run.status, run.output]).toEqual(['completed', 'survived']);
    expect((await logsOf(runId)).map((l) => l.message)).toEqual(['after']);
    const reports = logged.filter((l) => l.msg === 'a log line of the run could not be stored; the run goes on');
    expect(reports).toHaveLength(3);
    expect(reports[0]).toMatchObject({ runId, err: { message: expect.stringContaining('log store is down') } });
  });

  it('retries a final state write that fails with a database error instead of leaving the run running', async () => {
    const runId = await dispatch('flakyFinal');
    const run = await waitForRun(get().db, runId);
    expect([run.status, run.output, run.attempt, run.lost_leases]).toEqual(['completed', 'stored', 1, 0]);
    expect(executions.get('flakyFinal')).toBe(1);
    expect(logged.filter((l) => l.msg === "storing the run's final state failed; retrying")).toHaveLength(2);
  });

  it.each(['2147483648', '0', '-5', 'Infinity', 'NaN'])(
    'records a step with timeout %s as failed and fails the run without retrying',
    async (timeout) => {
      const runId = await dispatch('badStepTimeout', { timeout });
      const run = await waitForRun(get().db, runId);
      expect(run.status).toBe('failed');
      expect(run.attempt).toBe(1);
      expect(run.error.name).toBe('StepOptionsError');
      expect(run.error.message).toBe(`ctx.step("t") timeout must be a positive number of ms up to 2147483647 (got ${timeout})`);
      const steps = await get().db.query<{ name: string; status: string; error: any }>(
        sql`select name, status, error from steps where run_id = ${runId}::uuid`,
      );
      expect(steps).toEqual([{ name: 't', status: 'failed', error: expect.objectContaining({ name: 'StepOptionsError' }) }]);
      expect([executions.get('badStepTimeout'), executions.get('step-ran')]).toEqual([1, undefined]);
    },
  );

  it('the flow timeout counts execution time before a sleep, not the time asleep', async () => {
    // 2 × 300 ms of work around a 2 s sleep fits a 1.5 s timeout
    const inTime = await waitForRun(get().db, await dispatch('timeoutAcrossSleep', { workMs: 300, sleepMs: 2000 }));
    expect(inTime.status).toBe('completed');
    // 2 × 900 ms of work around a 400 ms sleep does not: the second execution starts with 900 ms used (the sleep is long
    // enough for the test to see the run parked, even on a loaded machine)
    const runId = await dispatch('timeoutAcrossSleep', { workMs: 900, sleepMs: 400 });
    await waitForRun(get().db, runId, (r) => r.status === 'sleeping');
    const [parked] = await get().db.query<{ ms: number }>(sql`select attempt_elapsed_ms as ms from runs where id = ${runId}::uuid`);
    expect(parked.ms).toBeGreaterThanOrEqual(900);
    const late = await waitForRun(get().db, runId);
    expect(late.status).toBe('failed');
    expect(late.error).toMatchObject({ name: 'TimeoutError', message: 'Flow "timeoutAcrossSleep" attempt timed out after 1500 ms' });
  });

  it('the flow timeout counts execution time before a crash-reclaim, recorded by the heartbeat', async () => {
    const runId = await dispatch('busy');
    await waitForRun(get().db, runId, (r) => r.status === 'running');
    const elapsed = async () =>
      (await get().db.query<{ ms: number }>(sql`select attempt_elapsed_ms as ms from runs where id = ${runId}::uuid`))[0].ms;
    await expect.poll(elapsed, { timeout: 5000 }).toBeGreaterThan(0);
    expect((await waitForRun(get().db, runId)).status).toBe('completed');

    // a run whose dead worker had used 4 s of its 5 s: reclaimed, it has 1 s left, not 5 s
    const [row] = await get().db.query<{ id: string }>(sql`
      insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, attempt, lease_owner, lease_expires_at, started_at, attempt_elapsed_ms)
      values ('default', ${SHOP}, 'reclaimedLate', 'api', '{}'::jsonb, ${JSON.stringify({ maxAttempts: 1, initialIntervalMs: 10, backoffCoefficient: 2, maxIntervalMs: 100 })}::jsonb,
              'running', 1, 'dead-worker/1', now() - interval '1 second', now(), 4000)
      returning id`);
    const run = await waitForRun(get().db, row.id);
    expect([run.status, run.lost_leases, run.error?.name]).toEqual(['failed', 1, 'TimeoutError']);
  });

  it('merges a dispatch-level retry policy over the flow and app policies, stores it and uses it', async () => {
    const runId = await dispatch('alwaysFails', {}, { maxAttempts: 2 });
    const [stored] = await get().db.query<{ policy: any }>(sql`select retry_policy as policy from runs where id = ${runId}::uuid`);
    expect(stored.policy).toEqual({ maxAttempts: 2, initialIntervalMs: 10, backoffCoefficient: 3, maxIntervalMs: 5000 });
    const run = await waitForRun(get().db, runId);
    expect([run.status, run.attempt, run.error.message]).toEqual(['failed', 2, 'boom 2']);
    await expect(dispatch('alwaysFails', {}, { maxIntervalMs: 2 ** 31 })).rejects.toMatchObject({
      name: 'InvalidDispatchError',
      field: 'retryPolicy.maxIntervalMs',
      message: 'retryPolicy.maxIntervalMs: must be at most 2147483647 ms',
    });
  });

  it('logs an onError hook that throws and goes on with the retries', async () => {
    onErrorThrows = true;
    const runId = await dispatch('alwaysFails', {}, { maxAttempts: 2 });
    const run = await waitForRun(get().db, runId);
    expect([run.status, run.attempt]).toEqual(['failed', 2]);
    const reports = logged.filter((l) => l.msg === 'onError hook failed');
    expect(reports).toHaveLength(2);
    expect(reports[0]).toMatchObject({ runId, err: { message: 'hook exploded' } });
  });
});
