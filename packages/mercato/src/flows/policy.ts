import type { Duration, RetryPolicy } from '../app/types.ts';

/** app < flow < dispatch, field by field; undefined fields do not override. */
export function mergeRetryPolicy(...layers: Array<Partial<RetryPolicy> | undefined>): RetryPolicy {
  const merged: Partial<RetryPolicy> = {};
  for (const layer of layers) {
    if (!layer) continue;
    for (const [key, value] of Object.entries(layer)) if (value !== undefined) (merged as any)[key] = value;
  }
  return merged as RetryPolicy;
}

/** The longest delay a Node.js timer honours (2^31 − 1 ms, about 24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A positive, finite number of ms that a Node.js timer honours. */
export function isTimerDelay(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 && value <= MAX_TIMER_MS;
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

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses a Duration (ms number, or `500ms`, `30s`, `5m`, `2h`, `1d`) into milliseconds. */
export function parseDuration(duration: Duration): number {
  if (typeof duration === 'number') {
    if (!Number.isFinite(duration) || duration < 0) throw new RangeError(`Invalid duration: ${duration}`);
    return duration;
  }
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(String(duration).trim());
  if (!match) throw new RangeError(`Invalid duration "${duration}": use a number of ms or a string like 30s, 5m, 2h, 1d`);
  return Math.round(Number(match[1]) * UNITS[match[2]]);
}
