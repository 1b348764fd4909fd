/** The `rateLimits` option (docs/security.md, "Rate limits"): `mcp.perToken` and `api.perShop`, each a bucket or `false`. */
import { at, checkKnownKeys, got, isPlainObject, isPositiveInteger, type Problems } from './util.ts';

const RATE_LIMITS_KEYS = ['mcp', 'api'] as const;
const SCOPES = { mcp: ['perToken'], api: ['perShop'] } as const;
const LIMIT_KEYS = ['requestsPerMinute', 'burst'] as const;
/** Above this a limit is no limit: a typo (an extra zero or two) is more likely than the intent. */
export const MAX_REQUESTS_PER_MINUTE = 1_000_000;

export function checkRateLimits(problems: Problems, rateLimits: unknown): void {
  if (rateLimits === undefined) return;
  if (!isPlainObject(rateLimits)) {
    problems.add('rateLimits', `must be an object with mcp and/or api ${got(rateLimits)}`);
    return;
  }
  checkKnownKeys(problems, 'rateLimits', rateLimits, RATE_LIMITS_KEYS, 'rateLimits option');
  for (const area of RATE_LIMITS_KEYS) {
    const value = rateLimits[area];
    const path = at('rateLimits', area);
    if (value === undefined) continue;
    if (!isPlainObject(value)) {
      problems.add(path, `must be an object with ${SCOPES[area].join(', ')} ${got(value)}`);
      continue;
    }
    checkKnownKeys(problems, path, value, SCOPES[area], `rateLimits.${area} option`);
    for (const scope of SCOPES[area]) checkRateLimit(problems, at(path, scope), value[scope]);
  }
}

function checkRateLimit(problems: Problems, path: string, limit: unknown): void {
  if (limit === undefined || limit === false) return;
  if (!isPlainObject(limit)) {
    problems.add(path, `must be false (off) or { requestsPerMinute, burst? } ${got(limit)}`);
    return;
  }
  checkKnownKeys(problems, path, limit, LIMIT_KEYS, 'rate limit option');
  for (const key of LIMIT_KEYS) {
    const value = limit[key];
    if (value === undefined && key === 'burst') continue;
    if (!isPositiveInteger(value) || value > MAX_REQUESTS_PER_MINUTE) {
      problems.add(at(path, key), `must be a positive integer of at most ${MAX_REQUESTS_PER_MINUTE} ${got(value)}`);
    }
  }
}

/** The `metrics` option (docs/observability.md): `{ token? }`, a non-empty string; its value is never echoed. */
export function checkMetrics(problems: Problems, metrics: unknown): void {
  if (metrics === undefined) return;
  if (!isPlainObject(metrics)) {
    // never `got(metrics)`: a token written in place of the object would be echoed
    problems.add(
      'metrics',
      `must be an object { token? } (got ${Array.isArray(metrics) ? 'an array' : metrics === null ? 'null' : `a ${typeof metrics}`})`,
    );
    return;
  }
  checkKnownKeys(problems, 'metrics', metrics, ['token'], 'metrics option');
  const token = metrics.token;
  if (token !== undefined && (typeof token !== 'string' || token.trim() === '')) {
    problems.add(at('metrics', 'token'), `must be a non-empty string (${typeof token === 'string' ? 'empty' : `got ${typeof token}`})`);
  }
}
