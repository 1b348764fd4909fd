/**
 * Executes one claimed run: checks the flow and its input, arms the flow timeout, builds `ctx` (context.ts), runs the
 * flow under its signal, classifies a failure (failure.ts) and writes the outcome (final-write.ts). Every write is
 * fenced on the claim's lease token.
 */
import type { AdminGraphqlClient, ProviderConnectors, ResolvedConfig } from '../app/types.ts';
import type { Exec } from '../db/sql.ts';
import { type RuntimeEvents, errorMessage, eventMs } from '../events.ts';
import type { Logger } from '../logger.ts';
import { ATTR, type Span, SpanKind, type Tracing, recordError, tenantAttributes } from '../telemetry/tracing.ts';
import { Abort, raceAbort } from './abort.ts';
import { type RunLogs, createExecutionContext, toJson } from './context.ts';
import type { DispatchFn } from './dispatch.ts';
import { RunInterruptedError, SleepInterrupt, TimeoutError, serializeError } from './errors.ts';
import { failureOf, isRetryable } from './failure.ts';
import { writeFinalState } from './final-write.ts';
import { MAX_TIMER_MS } from './policy.ts';
import type { FlowRegistry } from './registry.ts';
import { type ClaimedRun, type Completion, completeRuns, finishFailed } from './store/leases.ts';

export { MAX_STEP_RESULT_BYTES, type RunLogLine, type RunLogs } from './context.ts';
export { FINAL_WRITE_RETRY_DELAYS_MS } from './final-write.ts';

/** The abort reason of an execution that has finished (one shared instance: no Error with a stack per run). */
const FINISHED = new RunInterruptedError('worker-stopping');

export interface EngineDeps {
  exec: Exec;
  registry: FlowRegistry;
  config: Pick<ResolvedConfig, 'onError'>;
  logger: Logger;
  /** Stores the run's log lines (logs/writer.ts, given by the composition). */
  runLogs: RunLogs;
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
  /**
   * Stores a completion (the worker's batcher, completions.ts, shares one statement among the runs completing in the same
   * turn); default: one statement per run (`completeRuns` of that one).
   */
  complete?: (completion: Completion) => Promise<boolean>;
  /** A `run <flow>` span per execution, child of the dispatch's stored trace context (docs/tracing.md). */
  tracing?: Tracing;
}

export interface RunExecution {
  runId: string;
  leaseToken: string;
  /** Aborts the run's signal; nothing more is stored for this execution. */
  interrupt(reason: 'canceled' | 'lease-lost' | 'worker-stopping'): void;
  /** Settles when the execution has finished its last write (or given up). Never rejects. */
  done: Promise<void>;
  /** Execution time the run's current attempt has used, earlier executions included (flow timeout), in ms. */
  elapsedMs(): number;
  /**
   * Settles when the flow's code is done (returned, threw, slept or was interrupted), before the outcome's write: the
   * worker gives the slot to another run while the write commits. Never rejects.
   */
  bodyDone: Promise<void>;
}

export function executeRun(deps: EngineDeps, run: ClaimedRun, leaseToken: string): RunExecution {
  const abort = new Abort();
  const interrupt = (reason: 'canceled' | 'lease-lost' | 'worker-stopping') => {
    if (!abort.aborted) abort.abort(new RunInterruptedError(reason));
  };
  const startedAt = performance.now();
  const elapsedMs = () => (run.attemptElapsedMs ?? 0) + (performance.now() - startedAt);
  let bodyFinished!: () => void;
  const bodyDone = new Promise<void>((resolve) => (bodyFinished = resolve));
  const tracing = deps.tracing;
  const execution = tracing
    ? tracing.span(
        `run ${run.flowName}`,
        {
          kind: SpanKind.CONSUMER,
          parent: tracing.contextOf(run.traceContext),
          attributes: {
            ...tenantAttributes({ runId: run.id, flow: run.flowName, app: run.appHandle, shop: run.shop }),
            [ATTR.attempt]: run.budgetAttempt,
            'mercato.resumed': run.fresh !== true,
          },
        },
        (span) => runExecution(deps, run, leaseToken, abort, elapsedMs, bodyFinished, span),
      )
    : runExecution(deps, run, leaseToken, abort, elapsedMs, bodyFinished);
  const done = execution
    .catch((error) => {
      deps.logger.error(
        { err: error, runId: run.id, flow: run.flowName, shop: run.shop, app: run.appHandle },
        'run execution failed unexpectedly',
      );
    })
    .finally(bodyFinished);
  return { runId: run.id, leaseToken, interrupt, done, elapsedMs, bodyDone };
}

async function runExecution(
  deps: EngineDeps,
  run: ClaimedRun,
  leaseToken: string,
  abort: Abort,
  elapsedMs: () => number,
  bodyFinished: () => void,
  span?: Span,
): Promise<void> {
  const { exec } = deps;
  const timers: NodeJS.Timeout[] = [];
  const registered = deps.registry.get(run.flowName);
  const about = { runId: run.id, flow: run.flowName, shop: run.shop, app: run.appHandle };
  const onLogWriteError = (error: unknown) =>
    deps.logger.warn({ err: error, ...about }, 'a log line of the run could not be stored; the run goes on');
  const finalWrite = (what: string, write: () => Promise<boolean>) => {
    bodyFinished(); // the flow's code is done: its slot may run another run while this write commits
    return writeFinalState(deps, about, what, write);
  };
  let flushLogs = async () => {};
  let storeCheckpoints = async () => {};
  let failedStep = (): { name: string; error: unknown } | undefined => undefined;
  deps.events?.emit('run.started', { ...about, attempt: run.budgetAttempt });

  /** A failed attempt: its log line, the fenced final write (retry or failed), the events and the onError hook. */
  const fail = async (error: unknown, retryable = isRetryable(error)) => {
    const { final, delayMs: delay } = failureOf(error, run, retryable);
    const serialized = serializeError(error);
    if (span) {
      recordError(span, error);
      span.setAttribute(ATTR.outcome, final ? 'failed' : 'retry');
      if (!final)
        span.addEvent('retry scheduled', { 'mercato.retry.delay_ms': delay, 'mercato.retry.next_attempt': run.budgetAttempt + 1 });
    }
    await storeCheckpoints(); // the steps that completed before the failure are kept (a retry replays them)
    await flushLogs();
    await deps.runLogs
      .write(exec, {
        runId: run.id,
        appHandle: run.appHandle,
        shop: run.shop,
        level: 'error',
        message: final
          ? `Attempt ${run.budgetAttempt} failed: ${serialized.message}`
          : `Attempt ${run.budgetAttempt} failed, retrying in ${delay} ms: ${serialized.message}`,
        data: { error: { name: serialized.name, message: serialized.message }, final },
        attempt: run.attempt,
      })
      .catch(onLogWriteError);
    const written = await finalWrite(final ? 'failed' : 'retry', () => finishFailed(exec, run.id, leaseToken, serialized, final, delay));
    if (written && deps.events) {
      const stepFailure = failedStep();
      const step = stepFailure !== undefined && stepFailure.error === error ? stepFailure.name : null;
      const message = errorMessage(serialized.message);
      if (step !== null && !final) {
        deps.events.emit('step.retried', {
          ...about,
          step,
          attempt: run.budgetAttempt,
          nextAttempt: run.budgetAttempt + 1,
          error: message,
          retryInMs: delay,
          nextTryAt: new Date(Date.now() + delay),
        });
      }
      deps.events.emit('run.failed', {
        ...about,
        attempt: run.budgetAttempt,
        durationMs: eventMs(elapsedMs()),
        error: message,
        willRetry: !final,
        retryInMs: final ? null : delay,
        step,
      });
    }
    if (written && deps.config.onError) {
      try {
        await deps.config.onError(error, {
          runId: run.id,
          flowName: run.flowName,
          appHandle: run.appHandle,
          shop: run.shop,
          attempt: run.budgetAttempt,
          final,
        });
      } catch (hookError) {
        deps.logger.error({ err: hookError, ...about }, 'onError hook failed');
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
    const timedOut = () => abort.abort(new TimeoutError(`Flow "${run.flowName}" attempt`, flowTimeout));
    const remaining = Math.min(flowTimeout - elapsedMs(), MAX_TIMER_MS);
    if (remaining <= 0) timedOut();
    else timers.push(setTimeout(timedOut, remaining));
  }

  const execution = await createExecutionContext(deps, run, leaseToken, abort, elapsedMs, onLogWriteError);
  flushLogs = execution.flushLogs;
  storeCheckpoints = execution.storeCheckpoints;
  failedStep = () => execution.failedStep;
  const throwIfAborted = () => {
    if (abort.aborted) throw abort.reason;
  };

  try {
    let json: string;
    try {
      const output = await raceAbort(
        Promise.resolve().then(() => registered.definition.run(execution.ctx, parsed.data)),
        abort,
      );
      if (execution.slept) return void span?.setAttribute(ATTR.outcome, 'sleeping'); // the flow swallowed a SleepInterrupt: it is parked anyway
      throwIfAborted();
      if (execution.fatal) throw execution.fatal; // the flow swallowed a determinism error
      json = toJson('(flow output)', output, Infinity, 'output');
    } catch (error) {
      if (execution.slept || error instanceof SleepInterrupt) return void span?.setAttribute(ATTR.outcome, 'sleeping');
      if (error instanceof RunInterruptedError || (abort.aborted && abort.reason instanceof RunInterruptedError)) {
        span?.setAttribute(ATTR.outcome, 'interrupted');
        return; // canceled, lost or handed back
      }
      const cause = execution.fatal ?? (abort.aborted ? abort.reason : error);
      await fail(cause);
      return;
    }
    const lastStep = await execution.takeLastCheckpoint();
    if (abort.aborted) {
      // a checkpoint found the lease gone (nothing more is stored), or failed with a database error (the attempt fails)
      if (!(abort.reason instanceof RunInterruptedError)) await fail(abort.reason);
      return;
    }
    await flushLogs();
    const completion: Completion = { runId: run.id, leaseToken, outputJson: json, lastStep };
    const complete = deps.complete
      ? () => deps.complete!(completion)
      : () => completeRuns(exec, [completion]).then((stored) => stored.has(run.id));
    const stored = await finalWrite('completed', complete);
    span?.setAttribute(ATTR.outcome, stored ? 'completed' : 'interrupted');
    if (stored) {
      deps.events?.emit('run.completed', { ...about, attempt: run.budgetAttempt, durationMs: eventMs(elapsedMs()) });
    }
  } finally {
    for (const t of timers) clearTimeout(t);
    abort.abort(FINISHED); // nothing more is stored; a signal the flow took, and its listeners, are released
  }
}
