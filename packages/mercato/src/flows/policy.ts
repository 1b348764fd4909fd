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

/** Delay before attempt `failedAttempt + 1`: initial × coefficient^(failedAttempt − 1), capped at maxIntervalMs. */
export function retryDelayMs(policy: RetryPolicy, failedAttempt: number): number {
  const raw = policy.initialIntervalMs * policy.backoffCoefficient ** Math.max(0, failedAttempt - 1);
  return Math.round(Math.min(raw, policy.maxIntervalMs));
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
