/**
 * What a failed attempt means for the run: retried (after which delay) or failed for good. Flow code steers it with
 * NonRetriableError (fail now), RetryAfterError (retry after the delay it names) and the engine's own FlowErrors
 * (`retryable`); any error with `retryable: false` (e.g. ProviderNotConfiguredError) fails the run at once.
 */
import type { RetryPolicy } from '../app/types.ts';
import { DeterminismError, RetryAfterError } from './errors.ts';
import { retryDelayMs } from './policy.ts';

/** False for an error that another attempt cannot fix: `retryable: false` on the error, or a DeterminismError. */
export function isRetryable(error: unknown): boolean {
  return !(error instanceof DeterminismError) && (error as { retryable?: boolean } | null | undefined)?.retryable !== false;
}

export interface Failure {
  /** No attempt follows: the error is not retryable, or the retry budget is spent. */
  final: boolean;
  /** The wait before the next attempt (0 when final). */
  delayMs: number;
}

/**
 * The outcome of attempt `budgetAttempt` failing with `error` under `policy`: a RetryAfterError names its delay itself
 * (a 429's Retry-After), instead of the policy's backoff.
 */
export function failureOf(
  error: unknown,
  run: { budgetAttempt: number; retryPolicy: RetryPolicy },
  retryable = isRetryable(error),
): Failure {
  const final = !retryable || run.budgetAttempt >= run.retryPolicy.maxAttempts;
  const delayMs = final ? 0 : error instanceof RetryAfterError ? error.retryAfterMs : retryDelayMs(run.retryPolicy, run.budgetAttempt);
  return { final, delayMs };
}
