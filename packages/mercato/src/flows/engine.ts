/**
 * Executes one claimed run: builds `ctx`, replays completed steps, runs the flow under its signal and timeout,
 * and writes the outcome. Every write is fenced on the claim's lease token.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AdminGraphqlClient, FlowContext, ProviderConnectors, ResolvedConfig } from '../app/types.ts';
import { type RuntimeEvents, errorMessage } from '../events.ts';
import type { Logger } from '../logger.ts';
import { createRunLogger, writeLog } from '../logs/writer.ts';
import {
  DeterminismError,
  RetryAfterError,
  RunInterruptedError,
  SleepInterrupt,
  StepOptionsError,
  StepResultNotSerializableError,
  StepResultTooLargeError,
  TimeoutError,
  serializeError,
} from './errors.ts';
import { MAX_TIMER_MS, isTimerDelay, parseDuration, retryDelayMs } from './policy.ts';
import type { FlowRegistry } from './registry.ts';
import { type DispatchFn, dispatchFlowFor } from './dispatch.ts';
import * as store from './store.ts';
import type { ClaimedRun, StepWrite } from './store.ts';
import type { Exec } from '../db/sql.ts';
import { findBadText, jsonHasBadText } from '../db/text.ts';

/** A completed step's result may not exceed this many bytes of JSON. */
export const MAX_STEP_RESULT_BYTES = 1024 * 1024;

export interface EngineDeps {
  exec: Exec;
  registry: FlowRegistry;
  config: Pick<ResolvedConfig, 'onError'>;
  logger: Logger;
  /** The one dispatch door, used by ctx.dispatchFlow (trigger `flow`, the run as parent). */
  dispatch: DispatchFn;
  /** Provider connectors of a tenant (providers capability). */
  connectors?: (appHandle: string, shop: string | null) => ProviderConnectors<any>;
  /** Admin GraphQL client of a tenant (platform capability). */
  adminClient?: (appHandle: string, shop: string, signal?: AbortSignal) => AdminGraphqlClient;
  maxStepResultBytes?: number;
  /** Waits before each retry of a run's final state write that failed with a database error. */
  finalWriteRetryDelaysMs?: readonly number[];
  /** Told when an execution starts and when its outcome is stored (runtime.events). */
  events?: RuntimeEvents;
}

export const FINAL_WRITE_RETRY_DELAYS_MS: readonly number[] = [50, 200, 800];

export interface RunExecution {
  runId: string;
  leaseToken: string;
  /** Aborts the run's signal; nothing more is stored for this execution. */
  interrupt(reason: 'canceled' | 'lease-lost' | 'worker-stopping'): void;
  /** Settles when the execution has finished its last write (or given up). Never rejects. */
  done: Promise<void>;
  /** Execution time the run's current attempt has used, earlier executions included (flow timeout), in ms. */
  elapsedMs(): number;
}

const stepScope = new AsyncLocalStorage<string>();

export function executeRun(deps: EngineDeps, run: ClaimedRun, leaseToken: string): RunExecution {
  const controller = new AbortController();
  const interrupt = (reason: 'canceled' | 'lease-lost' | 'worker-stopping') => {
    if (!controller.signal.aborted) controller.abort(new RunInterruptedError(reason));
  };
  const startedAt = performance.now();
  const elapsedMs = () => (run.attemptElapsedMs ?? 0) + (performance.now() - startedAt);
  const done = runExecution(deps, run, leaseToken, controller, elapsedMs).catch((error) => {
    deps.logger.error({ err: error, runId: run.id }, 'run execution failed unexpectedly');
  });
  return { runId: run.id, leaseToken, interrupt, done, elapsedMs };
}

async function runExecution(deps: EngineDeps, run: ClaimedRun, leaseToken: string, controller: AbortController, elapsedMs: () => number): Promise<void> {
  const { exec } = deps;
  const signal = controller.signal;
  const timers: NodeJS.Timeout[] = [];
  const registered = deps.registry.get(run.flowName);
  const policy = run.retryPolicy;
  const onLogWriteError = (error: unknown) => deps.logger.warn({ err: error, runId: run.id }, 'a log line of the run could not be stored; the run goes on');
  const finalWrite = (what: string, write: () => Promise<boolean>) => writeFinalState(deps, run.id, what, write);
  let flushLogs = async () => {};
  const about = { runId: run.id, flow: run.flowName, shop: run.shop, app: run.appHandle };
  /** The last step that threw in this execution (the run's events name it when its error fails the attempt). */
  let failedStep: { name: string; error: unknown } | undefined;
  deps.events?.emit('run.started', { ...about, attempt: run.budgetAttempt });

  const fail = async (error: unknown, retryable: boolean) => {
    const final = !retryable || run.budgetAttempt >= policy.maxAttempts;
    // a RetryAfterError names the delay itself (a 429's Retry-After), instead of the policy's backoff
    const delay = final ? 0 : error instanceof RetryAfterError ? error.retryAfterMs : retryDelayMs(policy, run.budgetAttempt);
    const serialized = serializeError(error);
    await flushLogs();
    await writeLog(exec, {
      runId: run.id,
      appHandle: run.appHandle,
      shop: run.shop,
      level: 'error',
      message: final ? `Attempt ${run.budgetAttempt} failed: ${serialized.message}` : `Attempt ${run.budgetAttempt} failed, retrying in ${delay} ms: ${serialized.message}`,
      data: { error: { name: serialized.name, message: serialized.message }, final },
      attempt: run.attempt,
    }).catch(onLogWriteError);
    const written = await finalWrite(final ? 'failed' : 'retry', () => store.finishFailed(exec, run.id, leaseToken, serialized, final, delay));
    if (written && deps.events) {
      const step = failedStep !== undefined && failedStep.error === error ? failedStep.name : null;
      const message = errorMessage(serialized.message);
      if (step !== null && !final) {
        deps.events.emit('step.retried', { ...about, step, attempt: run.budgetAttempt, nextAttempt: run.budgetAttempt + 1, error: message, retryInMs: delay, nextTryAt: new Date(Date.now() + delay) });
      }
      deps.events.emit('run.failed', { ...about, attempt: run.budgetAttempt, durationMs: elapsedMs(), error: message, willRetry: !final, retryInMs: final ? null : delay, step });
    }
    if (written && deps.config.onError) {
      try {
        await deps.config.onError(error, { runId: run.id, flowName: run.flowName, appHandle: run.appHandle, shop: run.shop, attempt: run.budgetAttempt, final });
      } catch (hookError) {
        deps.logger.error({ err: hookError, runId: run.id }, 'onError hook failed');
      }
    }
  };

  if (!registered) {
    await fail(new Error(`Flow "${run.flowName}" is not registered in this worker's configuration`), false);
    return;
  }
  const parsed = await registered.definition.input.safeParseAsync(run.input);
  if (!parsed.success) {
    await fail(new Error(`The run's input no longer matches the flow's input schema: ${parsed.error.message}`), false);
    return;
  }

  // Per attempt, over execution time: what earlier executions of this attempt used (before a sleep, before a lost
  // lease) counts, the time asleep does not.
  const flowTimeout = registered.definition.timeout;
  if (flowTimeout) {
    const timedOut = () => controller.abort(new TimeoutError(`Flow "${run.flowName}" attempt`, flowTimeout));
    const remaining = Math.min(flowTimeout - elapsedMs(), MAX_TIMER_MS);
    if (remaining <= 0) timedOut();
    else timers.push(setTimeout(timedOut, remaining));
  }

  const stored = new Map((await store.completedStepResults(exec, run.id)).map((s) => [s.name, s]));
  const used = new Set<string>();
  let slept = false;
  let fatal: Error | undefined;
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
      fatal = new DeterminismError(
        `Step name "${name}" was used twice in one execution of run ${run.id}. Step and sleep names must be unique within a run, so that a replay finds each stored result under exactly one name.`,
      );
      throw fatal;
    }
    used.add(name);
  };
  const throwIfAborted = () => {
    if (signal.aborted) throw signal.reason;
  };

  const runLogger = createRunLogger(
    async (statement) => {
      if (signal.aborted) return []; // an interrupted execution stores nothing more
      return exec(statement);
    },
    { runId: run.id, appHandle: run.appHandle, shop: run.shop, attempt: run.attempt },
    () => stepScope.getStore() ?? null,
    onLogWriteError,
  );
  const log = runLogger.log;
  flushLogs = runLogger.flush;

  const ctx: FlowContext<any> = {
    runId: run.id,
    flowName: run.flowName,
    appHandle: run.appHandle,
    shop: run.shop,
    attempt: run.budgetAttempt,
    signal,
    log,
    async step(name, fn, options) {
      throwIfAborted();
      claimName('step', name);
      const previous = stored.get(name);
      if (previous?.status === 'completed') return previous.result as any;
      const stepController = new AbortController();
      const onRunAbort = () => stepController.abort(signal.reason);
      signal.addEventListener('abort', onRunAbort, { once: true });
      let stepTimer: NodeJS.Timeout | undefined;
      const startedAt = new Date();
      try {
        const timeout = options?.timeout;
        if (timeout !== undefined) {
          if (!isTimerDelay(timeout)) {
            // the same code would pass the same value again: fail the run now, even if the flow swallows this
            fatal = new StepOptionsError(`ctx.step("${name}") timeout must be a positive number of ms up to ${MAX_TIMER_MS} (got ${String(timeout)})`);
            throw fatal;
          }
          stepTimer = setTimeout(() => stepController.abort(new TimeoutError(`Step "${name}"`, timeout)), timeout);
        }
        const value = await raceAbort(
          stepScope.run(name, () => Promise.resolve().then(() => fn({ signal: stepController.signal, attempt: run.budgetAttempt }))),
          stepController.signal,
        );
        throwIfAborted();
        const json = toJson(name, value, maxBytes);
        await flushLogs();
        if (!(await store.storeStepResult(exec, stepWrite(name, startedAt), json))) {
          controller.abort(new RunInterruptedError('lease-lost'));
          throw signal.reason;
        }
        return JSON.parse(json);
      } catch (error) {
        if (!signal.aborted && !(error instanceof DeterminismError)) {
          failedStep = { name, error };
          await flushLogs();
          await store.storeStepFailure(exec, stepWrite(name, startedAt), serializeError(error)).catch((storeError) => {
            deps.logger.warn({ err: storeError, runId: run.id, step: name }, 'could not store a failed step');
          });
        }
        throw error;
      } finally {
        if (stepTimer) clearTimeout(stepTimer);
        signal.removeEventListener('abort', onRunAbort);
      }
    },
    async sleep(name, duration) {
      throwIfAborted();
      claimName('sleep', name);
      const ms = parseDuration(duration);
      const previous = stored.get(name);
      if (previous?.status === 'completed') return;
      if (previous?.status === 'sleeping') {
        // claimed again, so its wake time has passed
        await flushLogs();
        if (!(await store.completeSleep(exec, stepWrite(name, new Date())))) {
          controller.abort(new RunInterruptedError('lease-lost'));
          throw signal.reason;
        }
        return;
      }
      await flushLogs();
      const wakeAt = await store.parkSleeping(exec, stepWrite(name, new Date()), ms, elapsedMs());
      if (!wakeAt) {
        controller.abort(new RunInterruptedError('lease-lost'));
        throw signal.reason;
      }
      slept = true;
      throw new SleepInterrupt(name, wakeAt);
    },
    dispatchFlow(options) {
      return dispatchFlowFor(deps.dispatch, 'flow', { appHandle: run.appHandle, shop: run.shop, parentRunId: run.id })(options);
    },
    get providers() {
      if (!deps.connectors) throw new Error('Provider connectors are not available in this runtime');
      return deps.connectors(run.appHandle, run.shop);
    },
    get admin() {
      if (!run.shop) throw new Error('ctx.admin is not available in a global run (it has no shop)');
      if (!deps.adminClient) throw new Error('The Admin GraphQL client is not available in this runtime');
      return deps.adminClient(run.appHandle, run.shop, signal);
    },
  };

  try {
    let json: string;
    try {
      const output = await raceAbort(Promise.resolve().then(() => registered.definition.run(ctx, parsed.data)), signal);
      if (slept) return; // the flow swallowed a SleepInterrupt: it is parked anyway
      throwIfAborted();
      if (fatal) throw fatal; // the flow swallowed a determinism error
      json = toJson('(flow output)', output, Infinity, 'output');
    } catch (error) {
      if (slept || error instanceof SleepInterrupt) return;
      if (error instanceof RunInterruptedError || (signal.aborted && signal.reason instanceof RunInterruptedError)) return; // canceled, lost or handed back
      const cause = fatal ?? (signal.aborted ? signal.reason : error);
      await fail(cause, !(cause instanceof DeterminismError) && (cause as { retryable?: boolean })?.retryable !== false);
      return;
    }
    await flushLogs();
    if (await finalWrite('completed', () => store.finishCompleted(exec, run.id, leaseToken, json))) {
      deps.events?.emit('run.completed', { ...about, attempt: run.budgetAttempt, durationMs: elapsedMs() });
    }
  } finally {
    for (const t of timers) clearTimeout(t);
    if (!signal.aborted) controller.abort(new RunInterruptedError('worker-stopping')); // release listeners of finished runs
  }
}

/**
 * The JSON of a step result (or of the flow's output). PostgreSQL's jsonb cannot store NUL characters or lone
 * surrogates: such a value fails the step like any unserialisable one, naming where the character is.
 */
function toJson(step: string, value: unknown, maxBytes: number, root = 'result'): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value === undefined ? null : value);
  } catch (error) {
    throw new StepResultNotSerializableError(step, (error as Error).message);
  }
  if (json === undefined) json = 'null'; // a function or a symbol
  if (jsonHasBadText(json)) {
    const found = findBadText(JSON.parse(json), root);
    throw new StepResultNotSerializableError(step, `${found?.path ?? root} contains ${found?.what ?? 'a NUL character or a lone surrogate'}, which PostgreSQL cannot store`);
  }
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) throw new StepResultTooLargeError(step, bytes, maxBytes);
  return json;
}

/**
 * Stores a run's final state (fenced on the lease by `write`). A database error is retried a few times with a short
 * backoff before giving up; then the run stays `running` until its lease expires and another worker reclaims it.
 */
async function writeFinalState(deps: EngineDeps, runId: string, what: string, write: () => Promise<boolean>): Promise<boolean> {
  const delays = deps.finalWriteRetryDelaysMs ?? FINAL_WRITE_RETRY_DELAYS_MS;
  for (let i = 0; ; i++) {
    try {
      return await write();
    } catch (error) {
      if (i >= delays.length) {
        deps.logger.error({ err: error, runId, state: what }, "could not store the run's final state; it will be reclaimed when its lease expires");
        return false;
      }
      deps.logger.warn({ err: error, runId, state: what, retryInMs: delays[i] }, "storing the run's final state failed; retrying");
      await new Promise((resolve) => setTimeout(resolve, delays[i]));
    }
  }
}

/** Resolves or rejects like `promise`, or rejects with the signal's reason as soon as it aborts. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
