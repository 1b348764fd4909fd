/**
 * The errors of flows: the dispatcher's typed refusals (what `dispatchFlow` rejects with, for every caller), the run
 * engine's own errors, and the retry-steering errors flow code throws (NonRetriableError, RetryAfterError).
 */
import { cleanText } from '../db/text.ts';
import type { Duration } from '../app/types.ts';
import { ConflictError, InvalidInputError, NotFoundError } from '../errors.ts';
import { parseDuration } from './policy.ts';

/** dispatchFlow: the flow already has as many active runs for this shop as its concurrency allows (409 over HTTP). */
export class FlowConcurrencyError extends ConflictError {
  constructor(
    message: string,
    readonly flowName: string,
    readonly existingRunId: string,
  ) {
    super(message, { existingRunId });
  }
}

/** dispatchFlow: no flow of that name is registered (404 over HTTP). */
export class FlowNotFoundError extends NotFoundError {
  constructor(
    message: string,
    readonly flowName: string,
  ) {
    super(message);
  }
}

/** dispatchFlow: the input does not match the flow's schema, or the shop, app or retry policy is invalid (400 over HTTP). */
export class InvalidDispatchError extends InvalidInputError {
  constructor(message: string, options: { field?: string; issues?: unknown[] } = {}) {
    super(message, options);
  }
}

/** Errors of the run engine. `retryable: false` fails the run at once, whatever the retry policy says. */
export class FlowError extends Error {
  readonly retryable: boolean;
  constructor(name: string, message: string, retryable: boolean) {
    super(message);
    this.name = name;
    this.retryable = retryable;
  }
}

/** The same step or sleep name used twice in one execution of a run. */
export class DeterminismError extends FlowError {
  constructor(message: string) {
    super('DeterminismError', message, false);
  }
}

export class StepResultTooLargeError extends FlowError {
  constructor(step: string, bytes: number, limit: number) {
    super('StepResultTooLargeError', `Step "${step}" returned ${bytes} bytes of JSON; the limit is ${limit} bytes`, true);
  }
}

export class StepResultNotSerializableError extends FlowError {
  constructor(step: string, reason: string) {
    super('StepResultNotSerializableError', `Step "${step}" returned a value that is not JSON-serialisable: ${reason}`, false);
  }
}

/** Invalid options passed to ctx.step (e.g. a timeout that is not a positive number of ms up to 2^31 − 1): retrying cannot fix it. */
export class StepOptionsError extends FlowError {
  constructor(message: string) {
    super('StepOptionsError', message, false);
  }
}

export class TimeoutError extends FlowError {
  constructor(what: string, ms: number) {
    super('TimeoutError', `${what} timed out after ${ms} ms`, true);
  }
}

/** The run was canceled, or its lease was lost, while this code ran: nothing more is stored. */
export class RunInterruptedError extends FlowError {
  constructor(reason: 'canceled' | 'lease-lost' | 'worker-stopping') {
    super('RunInterruptedError', `The run was interrupted (${reason})`, true);
  }
}

/** Thrown by ctx.sleep to unwind the flow; the engine parks the run as `sleeping`. Never catch it in flow code. */
export class SleepInterrupt extends Error {
  constructor(
    readonly stepName: string,
    readonly wakeAt: Date,
  ) {
    super(`sleeping until ${wakeAt.toISOString()} (${stepName})`);
    this.name = 'SleepInterrupt';
  }
}

/** The stored form of an error; NUL characters and lone surrogates (which PostgreSQL refuses) become U+FFFD. */
export function serializeError(error: unknown): { name: string; message: string; stack?: string } {
  if (error instanceof Error) {
    const stack =
      typeof error.stack === 'string' && error.stack ? { stack: cleanText(error.stack.split('\n').slice(0, 12).join('\n')) } : {};
    return { name: cleanText(String(error.name)), message: cleanText(String(error.message)), ...stack };
  }
  return { name: 'Error', message: cleanText(typeof error === 'string' ? error : safeString(error)) };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Thrown by flow code (in a step or in the flow body): the run fails at once, without the retries its policy allows.
 * For errors that another attempt cannot fix (a refused input, a record that does not exist). docs/flows.md, Retries.
 */
export class NonRetriableError extends Error {
  readonly retryable = false;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetriableError';
  }
}

/** The longest delay a RetryAfterError may ask for: 30 days. */
export const MAX_RETRY_AFTER_MS = 30 * 86_400_000;

/**
 * Thrown by flow code: this attempt failed, and the next one must not start before `retryAfter` (milliseconds, a
 * duration such as `'30s'`, or a Date) — instead of the policy's backoff. Still a failed attempt: on the last attempt
 * the run fails. For a platform or API that said when to come back (HTTP 429 `Retry-After`). docs/flows.md, Retries.
 */
export class RetryAfterError extends Error {
  /** The delay before the next attempt, in milliseconds (a Date is turned into the time left until it, at least 0). */
  readonly retryAfterMs: number;
  constructor(message: string, retryAfter: number | string | Date, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryAfterError';
    let ms: number;
    try {
      ms = retryAfter instanceof Date ? Math.max(0, retryAfter.getTime() - Date.now()) : parseDuration(retryAfter as Duration);
    } catch {
      ms = Number.NaN;
    }
    if (!Number.isFinite(ms) || ms < 0 || ms > MAX_RETRY_AFTER_MS) {
      throw new RangeError(
        `RetryAfterError: retryAfter must be from 0 ms to 30 days (a number of milliseconds, a duration like '30s', or a Date); got ${String(retryAfter)}`,
      );
    }
    this.retryAfterMs = Math.round(ms);
  }
}
