/** Load shaping of flows and webhook handlers: keyed concurrency, rateLimit, debounce, priority (docs/flows.md). */
import { parseDuration } from '../duration.ts';
import { at, checkKnownKeys, got, isFunction, isPlainObject, isPositiveInteger, type Problems } from './util.ts';

/** Rate-limit and debounce periods are at most a day (the claim keeps a day of rate-limit starts at the most). */
export const MAX_SHAPING_PERIOD_MS = 86_400_000;
export const MIN_PRIORITY = -100;
export const MAX_PRIORITY = 100;

/**
 * `concurrency` as an object, `rateLimit`, `debounce` and `priority` of a flow (or a webhook definition, where a plain
 * number for `concurrency` is not a choice: handlers have no refusing limit).
 */
export function checkShaping(problems: Problems, path: string, def: Record<string, unknown>, numberConcurrency: boolean): void {
  const c = def.concurrency;
  if (c !== undefined && c !== null && !(numberConcurrency && typeof c === 'number')) {
    if (!isPlainObject(c)) {
      problems.add(
        at(path, 'concurrency'),
        numberConcurrency
          ? `must be a positive integer, null for no limit, or { limit, key } for runs that wait for a slot ${got(c)}`
          : `must be { limit, key } (runs wait for a slot) ${got(c)}`,
      );
    } else {
      checkKnownKeys(problems, at(path, 'concurrency'), c, ['limit', 'key'], 'concurrency option');
      if (!isPositiveInteger(c.limit)) problems.add(at(at(path, 'concurrency'), 'limit'), `must be a positive integer ${got(c.limit)}`);
      checkKey(problems, at(path, 'concurrency'), c.key);
    }
  } else if (numberConcurrency && typeof c === 'number' && !isPositiveInteger(c)) {
    problems.add(at(path, 'concurrency'), `must be a positive integer, null for no limit, or { limit, key } ${got(c)}`);
  }
  const r = def.rateLimit;
  if (r !== undefined) {
    if (!isPlainObject(r)) problems.add(at(path, 'rateLimit'), `must be { limit, period, key } ${got(r)}`);
    else {
      checkKnownKeys(problems, at(path, 'rateLimit'), r, ['limit', 'period', 'key'], 'rateLimit option');
      if (!isPositiveInteger(r.limit)) problems.add(at(at(path, 'rateLimit'), 'limit'), `must be a positive integer ${got(r.limit)}`);
      checkPeriod(problems, at(at(path, 'rateLimit'), 'period'), r.period, true);
      checkKey(problems, at(path, 'rateLimit'), r.key);
    }
  }
  const d = def.debounce;
  if (d !== undefined) {
    if (!isPlainObject(d)) problems.add(at(path, 'debounce'), `must be { period, key, maxWait } ${got(d)}`);
    else {
      checkKnownKeys(problems, at(path, 'debounce'), d, ['period', 'key', 'maxWait'], 'debounce option');
      const period = checkPeriod(problems, at(at(path, 'debounce'), 'period'), d.period, true);
      const maxWait = checkPeriod(problems, at(at(path, 'debounce'), 'maxWait'), d.maxWait, false);
      if (period !== null && maxWait !== null && maxWait < period)
        problems.add(at(at(path, 'debounce'), 'maxWait'), `must be at least the period (${period} ms) ${got(d.maxWait)}`);
      checkKey(problems, at(path, 'debounce'), d.key);
    }
  }
  const p = def.priority;
  if (p !== undefined && !isPriority(p))
    problems.add(at(path, 'priority'), `must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY} (higher runs first) ${got(p)}`);
}

export function isPriority(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= MIN_PRIORITY && (value as number) <= MAX_PRIORITY;
}

function checkKey(problems: Problems, path: string, key: unknown): void {
  if (key !== undefined && !isFunction(key))
    problems.add(at(path, 'key'), `must be a function (input, { shop, appHandle }) => string; leave it out to key by shop ${got(key)}`);
}

/** The period in ms, or null when absent (and not required) or invalid (a problem is added). */
function checkPeriod(problems: Problems, path: string, value: unknown, required: boolean): number | null {
  if (value === undefined) {
    if (required) problems.add(path, 'is required: milliseconds or a duration string like "500ms", "10s", "1m"');
    return null;
  }
  let ms: number;
  try {
    if (typeof value !== 'number' && typeof value !== 'string') throw new RangeError('not a duration');
    ms = parseDuration(value as never);
  } catch {
    problems.add(path, `must be milliseconds or a duration string like "500ms", "10s", "1m" ${got(value)}`);
    return null;
  }
  if (!(ms >= 1 && ms <= MAX_SHAPING_PERIOD_MS)) {
    problems.add(path, `must be from 1 ms to 24 h ${got(value)}`);
    return null;
  }
  return ms;
}
