/**
 * The `ctx` a flow runs with, for one execution of a claimed run: ctx.step (replay of stored results, step timeout,
 * fenced result write), ctx.sleep (park and resume), ctx.dispatchFlow, ctx.providers, ctx.admin and ctx.log. It records
 * what the engine needs to decide the outcome: whether the flow slept, a fatal error it may have swallowed, and the
 * last step that threw.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AdminGraphqlClient, FlowContext, FlowLogger, ProviderConnectors } from '../app/types.ts';
import type { Exec } from '../db/sql.ts';
import { findBadText, jsonHasBadText } from '../db/text.ts';
import type { Logger } from '../logger.ts';
import type { RuntimeEvents } from '../events.ts';
import { ATTR, type Tracing, activeSpan } from '../telemetry/tracing.ts';
import { type DispatchFn, dispatchFlowFor } from './dispatch.ts';
import {
  DeterminismError,
  RunInterruptedError,
  SleepInterrupt,
  StepOptionsError,
  StepResultNotSerializableError,
  StepResultTooLargeError,
  TimeoutError,
  serializeError,
} from './errors.ts';
import { MAX_TIMER_MS, isTimerDelay, parseDuration } from './policy.ts';
import { Abort, raceAbort } from './abort.ts';
import { type ClaimedRun, parkSleeping } from './store/leases.ts';
import { type StepWrite, completeSleep, completedStepResults, markStepRunning, storeStepFailure, storeStepResult } from './store/steps.ts';

/** A completed step's result may not exceed this many bytes of JSON. */
export const MAX_STEP_RESULT_BYTES = 1024 * 1024;

/** A log line of a run (the logs capability stores it; `attempt` is the absolute attempt). */
export interface RunLogLine {
  runId: string;
  appHandle: string;
  shop: string | null;
  level: 'info' | 'warn' | 'error';
  message: string;
  data?: Record<string, unknown> | null;
  step?: string | null;
  attempt: number;
  /** Position of an outside-step line in its execution of the flow body (1, 2, …); null for every other line. */
  bodySeq?: number | null;
}

/**
 * The run logs port, given to the engine by the composition (logs/writer.ts: createRunLogger, writeLog), so flows/
 * does not import logs/.
 */
export interface RunLogs {
  /**
   * A FlowLogger bound to one execution; `currentStep()` names the step a line is written in. Its writes never reject
   * (a failure goes to `onWriteError`); `flush()` settles when every write started so far has settled.
   */
  create(
    exec: Exec,
    base: Pick<RunLogLine, 'runId' | 'appHandle' | 'shop' | 'attempt'>,
    currentStep: () => string | null,
    onWriteError: (error: unknown, line: RunLogLine) => void,
  ): { log: FlowLogger; flush(): Promise<void> };
  /** Stores one line. */
  write(exec: Exec, line: RunLogLine): Promise<void>;
}

/** What ctx is built from (a subset of the engine's deps). */
export interface ContextDeps {
  exec: Exec;
  logger: Logger;
  runLogs: RunLogs;
  dispatch: DispatchFn;
  connectors?: (appHandle: string, shop: string | null) => ProviderConnectors<any>;
  /** `run`: the run whose logs get a `warn` line per throttle wait of ctx.admin (its runtime event names the run). */
  adminClient?: (appHandle: string, shop: string, signal?: AbortSignal, run?: AdminClientRunScope) => AdminGraphqlClient;
  maxStepResultBytes?: number;
  /** step.finished is emitted when someone hears it (the metrics). */
  events?: RuntimeEvents;
  /** A `step <name>` span per executed step and a `sleep <name>` span per parking sleep (docs/tracing.md). */
  tracing?: Tracing;
}

/** What ctx.admin tells its client about the run (platform/admin-client.ts, AdminClientRun). */
export interface AdminClientRunScope {
  runId: string;
  flow: string;
  log: Pick<FlowLogger, 'warn'>;
}

/** One execution's ctx, and what it saw. */
export interface ExecutionContext {
  ctx: FlowContext<any>;
  /** Settles when every log line written so far is stored (before a result or final state is written). */
  flushLogs(): Promise<void>;
  /** ctx.sleep parked the run (the flow may have swallowed the SleepInterrupt). */
  readonly slept: boolean;
  /** A DeterminismError or StepOptionsError: fails the run even if the flow swallowed it. */
  readonly fatal: Error | undefined;
  /** The last step that threw in this execution (the run's events name it when its error fails the attempt). */
  readonly failedStep: { name: string; error: unknown } | undefined;
  /**
   * The checkpoint of a step that completed in the current turn of the event loop and is not stored yet (see "Deferred
   * checkpoint" below), handed over so that the run's completion stores it in the same statement; undefined when there is
   * none or more than one. Any other pending checkpoint is stored before this resolves.
   */
  takeLastCheckpoint(): Promise<PendingCheckpoint | undefined>;
  /** Stores every pending checkpoint (before a failed attempt's writes). */
  storeCheckpoints(): Promise<void>;
}

/** A completed step's result that is not stored yet. */
export interface PendingCheckpoint {
  write: StepWrite;
  resultJson: string;
}

const stepScope = new AsyncLocalStorage<string>();

/**
 * A step still running this long after it started is written as `running` (one write), so the admin shows the step a
 * run is in; shorter steps write nothing more than their result.
 */
export const RUNNING_STEP_MARK_MS = 500;

export async function createExecutionContext(
  deps: ContextDeps,
  run: ClaimedRun,
  leaseToken: string,
  abort: Abort,
  elapsedMs: () => number,
  onLogWriteError: (error: unknown) => void,
): Promise<ExecutionContext> {
  const { exec, tracing } = deps;
  // the stored steps of the run: a completed result is replayed, a sleeping one is resumed. A run that never started
  // before (fresh) has none, so its first execution does not read them.
  const stored = new Map(run.fresh ? [] : (await completedStepResults(exec, run.id)).map((s) => [s.name, s]));
  const used = new Set<string>();
  const state: { slept: boolean; fatal: Error | undefined; failedStep: { name: string; error: unknown } | undefined } = {
    slept: false,
    fatal: undefined,
    failedStep: undefined,
  };
  const maxBytes = deps.maxStepResultBytes ?? MAX_STEP_RESULT_BYTES;
  const stepWrite = (name: string, startedAt: Date): StepWrite => ({
    runId: run.id,
    leaseToken,
    appHandle: run.appHandle,
    shop: run.shop,
    name,
    attempt: run.attempt,
    startedAt,
  });
  const claimName = (kind: string, name: string) => {
    if (typeof name !== 'string' || name.length === 0) throw new TypeError(`ctx.${kind} needs a non-empty name`);
    if (used.has(name)) {
      state.fatal = new DeterminismError(
        `Step name "${name}" was used twice in one execution of run ${run.id}. Step and sleep names must be unique within a run, so that a replay finds each stored result under exactly one name.`,
      );
      throw state.fatal;
    }
    used.add(name);
  };
  const throwIfAborted = () => {
    if (abort.aborted) throw abort.reason;
  };
  /** The fenced write found the run no longer ours: stop the execution. */
  const leaseLost = () => {
    abort.abort(new RunInterruptedError('lease-lost'));
    return abort.reason;
  };

  const stepFinished = (step: string, status: 'completed' | 'failed', startedAt: Date) =>
    deps.events!.emit('step.finished', {
      runId: run.id,
      flow: run.flowName,
      shop: run.shop,
      app: run.appHandle,
      step,
      status,
      durationMs: Date.now() - startedAt.getTime(),
    });

  const runLogger = deps.runLogs.create(
    async (statement) => {
      if (abort.aborted) return []; // an interrupted execution stores nothing more
      return exec(statement);
    },
    { runId: run.id, appHandle: run.appHandle, shop: run.shop, attempt: run.attempt },
    () => stepScope.getStore() ?? null,
    onLogWriteError,
  );
  const flushLogs = runLogger.flush;

  // Deferred checkpoint. A step's result is stored at the end of the event-loop turn in which the step completed
  // (setImmediate), or earlier when the flow calls ctx.step, ctx.sleep or ctx.dispatchFlow again; a flow that returns
  // in that turn hands the last one to its completion, which stores both in one commit. The window in which a crash
  // loses a completed step's result (it then runs again, as documented) grows by no more than the microtasks of that
  // turn. A write that finds the lease gone interrupts the execution; a database error fails the attempt (retried).
  let pending: PendingCheckpoint[] = [];
  let storing: Promise<void> = Promise.resolve();
  let flushTimer: NodeJS.Immediate | undefined;
  const storeCheckpoints = (): Promise<void> => {
    if (flushTimer) clearImmediate(flushTimer);
    flushTimer = undefined;
    if (pending.length === 0) return storing;
    const batch = pending;
    pending = [];
    storing = storing.then(async () => {
      if (abort.aborted) return;
      try {
        await flushLogs();
        for (const c of batch) {
          if (!(await storeStepResult(exec, c.write, c.resultJson))) {
            leaseLost();
            return;
          }
        }
      } catch (error) {
        abort.abort(error);
      }
    });
    return storing;
  };
  /** Before the flow goes on through ctx: every completed step is stored; an interrupted execution stops here. */
  const checkpointed = async () => {
    if (pending.length > 0 || flushTimer) await storeCheckpoints();
    else await storing;
    throwIfAborted();
  };

  const ctx: FlowContext<any> = {
    runId: run.id,
    flowName: run.flowName,
    appHandle: run.appHandle,
    shop: run.shop,
    attempt: run.budgetAttempt,
    get signal() {
      return abort.signal;
    },
    log: runLogger.log,
    async step(name, fn, options) {
      await checkpointed();
      claimName('step', name);
      const previous = stored.get(name);
      if (previous?.status === 'completed') {
        if (tracing) activeSpan()?.addEvent('step replayed', { [ATTR.step]: name });
        return previous.result as any;
      }
      // A step without a timeout runs under the run's own abort state; one with a timeout gets one of its own that also
      // aborts with the run's. Either gives the step an AbortSignal only if it reads one.
      let stepAbort = abort;
      let unfollow: (() => void) | undefined;
      let stepTimer: NodeJS.Timeout | undefined;
      const startedAt = new Date();
      // A long step says so: chained on `storing`, so the step's own result or failure (stored after it) replaces it.
      const markTimer = setTimeout(() => {
        storing = storing.then(async () => {
          if (abort.aborted) return;
          await markStepRunning(exec, stepWrite(name, startedAt)).catch((error) =>
            deps.logger.warn(
              { err: error, runId: run.id, flow: run.flowName, shop: run.shop, app: run.appHandle, step: name },
              'could not mark a step as running',
            ),
          );
        });
      }, RUNNING_STEP_MARK_MS);
      markTimer.unref?.();
      try {
        const timeout = options?.timeout;
        if (timeout !== undefined) {
          if (!isTimerDelay(timeout)) {
            // the same code would pass the same value again: fail the run now, even if the flow swallows this
            state.fatal = new StepOptionsError(
              `ctx.step("${name}") timeout must be a positive number of ms up to ${MAX_TIMER_MS} (got ${String(timeout)})`,
            );
            throw state.fatal;
          }
          const own = new Abort();
          unfollow = own.follow(abort);
          stepTimer = setTimeout(() => own.abort(new TimeoutError(`Step "${name}"`, timeout)), timeout);
          stepAbort = own;
        }
        const body = () =>
          raceAbort(
            stepScope.run(name, () => Promise.resolve().then(() => fn(stepArgs(stepAbort, run.budgetAttempt)))),
            stepAbort,
          );
        const value = tracing
          ? await tracing.span(`step ${name}`, { attributes: { [ATTR.step]: name, [ATTR.attempt]: run.budgetAttempt } }, body)
          : await body();
        throwIfAborted();
        if (deps.events?.hears('step.finished')) stepFinished(name, 'completed', startedAt);
        const json = toJson(name, value, maxBytes);
        pending.push({ write: stepWrite(name, startedAt), resultJson: json });
        flushTimer ??= setImmediate(() => void storeCheckpoints());
        return JSON.parse(json);
      } catch (error) {
        if (!abort.aborted && !(error instanceof DeterminismError)) {
          if (deps.events?.hears('step.finished')) stepFinished(name, 'failed', startedAt);
          state.failedStep = { name, error };
          clearTimeout(markTimer);
          await storing; // a running mark in flight lands before the failure that replaces it
          await flushLogs();
          await storeStepFailure(exec, stepWrite(name, startedAt), serializeError(error)).catch((storeError) => {
            deps.logger.warn(
              { err: storeError, runId: run.id, flow: run.flowName, shop: run.shop, app: run.appHandle, step: name },
              'could not store a failed step',
            );
          });
        }
        throw error;
      } finally {
        clearTimeout(markTimer);
        if (stepTimer) clearTimeout(stepTimer);
        unfollow?.();
      }
    },
    async sleep(name, duration) {
      await checkpointed();
      claimName('sleep', name);
      const ms = parseDuration(duration);
      const previous = stored.get(name);
      if (previous?.status === 'completed') return;
      if (previous?.status === 'sleeping') {
        // claimed again, so its wake time has passed
        if (tracing) activeSpan()?.addEvent('sleep resumed', { [ATTR.step]: name });
        await flushLogs();
        if (!(await completeSleep(exec, stepWrite(name, new Date())))) throw leaseLost();
        return;
      }
      await flushLogs();
      const park = () => parkSleeping(exec, stepWrite(name, new Date()), ms, elapsedMs());
      const wakeAt = tracing
        ? await tracing.span(`sleep ${name}`, { attributes: { [ATTR.step]: name, 'mercato.sleep.duration_ms': ms } }, async (span) => {
            const at = await park();
            if (at) span.setAttribute('mercato.sleep.wake_at', at.toISOString());
            return at;
          })
        : await park();
      if (!wakeAt) throw leaseLost();
      state.slept = true;
      throw new SleepInterrupt(name, wakeAt);
    },
    async dispatchFlow(options) {
      await checkpointed();
      return dispatchFlowFor(deps.dispatch, 'flow', { appHandle: run.appHandle, shop: run.shop, parentRunId: run.id })(options);
    },
    get providers() {
      if (!deps.connectors) throw new Error('Provider connectors are not available in this runtime');
      return deps.connectors(run.appHandle, run.shop);
    },
    get admin() {
      if (!run.shop) throw new Error('ctx.admin is not available in a global run (it has no shop)');
      if (!deps.adminClient) throw new Error('The Admin GraphQL client is not available in this runtime');
      return deps.adminClient(run.appHandle, run.shop, abort.signal, { runId: run.id, flow: run.flowName, log: runLogger.log });
    },
  };

  return {
    ctx,
    flushLogs,
    get slept() {
      return state.slept;
    },
    get fatal() {
      return state.fatal;
    },
    get failedStep() {
      return state.failedStep;
    },
    async takeLastCheckpoint() {
      if (pending.length === 1 && flushTimer) {
        clearImmediate(flushTimer);
        flushTimer = undefined;
        const [last] = pending;
        pending = [];
        await storing;
        return abort.aborted ? undefined : last;
      }
      await storeCheckpoints();
      return undefined;
    },
    storeCheckpoints,
  };
}

/**
 * The JSON of a step result (or of the flow's output). PostgreSQL's jsonb cannot store NUL characters or lone
 * surrogates: such a value fails the step like any unserialisable one, naming where the character is.
 */
export function toJson(step: string, value: unknown, maxBytes: number, root = 'result'): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value === undefined ? null : value);
  } catch (error) {
    throw new StepResultNotSerializableError(step, (error as Error).message);
  }
  if (json === undefined) json = 'null'; // a function or a symbol
  if (jsonHasBadText(json)) {
    const found = findBadText(JSON.parse(json), root);
    throw new StepResultNotSerializableError(
      step,
      `${found?.path ?? root} contains ${found?.what ?? 'a NUL character or a lone surrogate'}, which PostgreSQL cannot store`,
    );
  }
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) throw new StepResultTooLargeError(step, bytes, maxBytes);
  return json;
}

/** What a step's function is called with: its signal is made when the step reads it. */
function stepArgs(abort: Abort, attempt: number): { readonly signal: AbortSignal; attempt: number } {
  return {
    get signal() {
      return abort.signal;
    },
    attempt,
  };
}
