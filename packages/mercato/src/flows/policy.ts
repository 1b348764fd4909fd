import type { RetryPolicy } from '../app/types.ts';
import { MAX_TIMER_MS } from '../app/duration.ts';

// Durations are part of the app contract (app/duration.ts); re-exported for the engine.
export { MAX_TIMER_MS, isTimerDelay, parseDuration } from '../app/duration.ts';

/** app < flow < dispatch, field by field; undefined fields do not override. */
export function mergeRetryPolicy(...layers: Array<Partial<RetryPolicy> | undefined>): RetryPolicy {
  const merged: Partial<RetryPolicy> = {};
  for (const layer of layers) {
    if (!layer) continue;
    for (const [key, value] of Object.entries(layer)) if (value !== undefined) (merged as any)[key] = value;
  }
  return merged as RetryPolicy;
}

/** `initial × coefficient^(n − 1)` capped at `max` and at MAX_TIMER_MS (a huge coefficient gives Infinity, never more). */
export function backoffDelayMs(initialMs: number, coefficient: number, n: number, maxMs: number): number {
  const raw = initialMs * coefficient ** Math.max(0, n - 1);
  const capped = Math.min(Number.isNaN(raw) ? maxMs : raw, maxMs, MAX_TIMER_MS);
  return Math.max(0, Math.round(capped));
}

/** Delay before attempt `failedAttempt + 1`: initial × coefficient^(failedAttempt − 1), capped at maxIntervalMs. */
export function retryDelayMs(policy: RetryPolicy, failedAttempt: number): number {
  return backoffDelayMs(policy.initialIntervalMs, policy.backoffCoefficient, failedAttempt, policy.maxIntervalMs);
}
