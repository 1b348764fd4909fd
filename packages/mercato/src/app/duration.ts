/** Durations of the app contract (timeouts, sleeps, retry delays): parsing and the limit of a Node.js timer. */
import type { Duration } from './types.ts';

/** The longest delay a Node.js timer honours (2^31 − 1 ms, about 24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A positive, finite number of ms that a Node.js timer honours. */
export function isTimerDelay(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 && value <= MAX_TIMER_MS;
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
