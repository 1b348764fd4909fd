/**
 * Optional rate limits (docs/security.md, "Rate limits"): a token bucket per key, kept in memory by this process.
 * `/api/*` counts per app and shop of the session token (after authentication, before the body is read); `POST /mcp`
 * counts per MCP token (mcp/endpoint.ts, after authentication). An empty bucket answers 429 `{ error, retryAfterSeconds }`
 * with `Retry-After`. Every limit is off unless configured (`rateLimits` in the app config).
 *
 * Per process: N server processes behind a load balancer let a key through up to N times the configured rate. A limit
 * shared by every process belongs in the reverse proxy or the API gateway.
 */
import type { MiddlewareHandler } from 'hono';
import type { RateLimit, RateLimitsConfig } from '../app/types.ts';
import { HttpError } from './errors.ts';
import type { ApiEnv } from './types.ts';

/** Keys kept at most; beyond it full buckets (indistinguishable from new ones) are dropped first, then the oldest. */
export const MAX_BUCKETS = 50_000;

export type TakeResult = { ok: true; remaining: number } | { ok: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  /** Clock reading (ms) of the last refill. */
  at: number;
}

/** Token buckets per key: `burst` tokens at most, `requestsPerMinute` added per minute, one taken per request. */
export class TokenBuckets {
  readonly capacity: number;
  private readonly perMs: number;
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    limit: RateLimit,
    private readonly now: () => number = () => performance.now(),
    private readonly maxKeys = MAX_BUCKETS,
  ) {
    if (!(limit.requestsPerMinute > 0)) throw new Error('TokenBuckets: requestsPerMinute must be positive');
    this.capacity = limit.burst ?? limit.requestsPerMinute;
    if (!(this.capacity >= 1)) throw new Error('TokenBuckets: burst must be at least 1');
    this.perMs = limit.requestsPerMinute / 60_000;
  }

  /** Takes one token for `key`; when none is left, says how many whole seconds until one is. */
  take(key: string): TakeResult {
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (bucket) {
      bucket.tokens = Math.min(this.capacity, bucket.tokens + (now - bucket.at) * this.perMs);
      bucket.at = now;
    } else {
      if (this.buckets.size >= this.maxKeys) this.evict(now);
      bucket = { tokens: this.capacity, at: now };
      this.buckets.set(key, bucket);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true, remaining: Math.floor(bucket.tokens) };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMs / 1000)) };
  }

  /** Keys currently tracked (tests, diagnostics). */
  get size(): number {
    return this.buckets.size;
  }

  private evict(now: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + (now - b.at) * this.perMs >= this.capacity) this.buckets.delete(key);
    }
    // Still full of busy keys: forget the oldest (each then starts again with a full bucket: lenient, never stricter).
    for (const key of this.buckets.keys()) {
      if (this.buckets.size < this.maxKeys) break;
      this.buckets.delete(key);
    }
  }
}

/** 429 `{ error, retryAfterSeconds }` with `Retry-After`. */
export class TooManyRequestsError extends HttpError {
  constructor(message: string, retryAfterSeconds: number) {
    super(429, message, { extra: { retryAfterSeconds }, headers: { 'Retry-After': String(retryAfterSeconds) } });
  }
}

/** The limits in force: each present only when configured (absent = off). */
export interface ResolvedRateLimits {
  mcpPerToken?: RateLimit;
  apiPerShop?: RateLimit;
}

export function resolveRateLimits(config: RateLimitsConfig | undefined): ResolvedRateLimits {
  const mcp = config?.mcp?.perToken;
  const api = config?.api?.perShop;
  return { ...(mcp ? { mcpPerToken: mcp } : {}), ...(api ? { apiPerShop: api } : {}) };
}

/** Human wording of a limit for the 429 message, e.g. "60 requests per minute". */
export function describeLimit(limit: RateLimit): string {
  return `${limit.requestsPerMinute} request${limit.requestsPerMinute === 1 ? '' : 's'} per minute`;
}

/** `/api/*` after session auth: one bucket per app and shop; 429 when it is empty. */
export function perShopRateLimit(limit: RateLimit, now?: () => number): MiddlewareHandler<ApiEnv> {
  const buckets = new TokenBuckets(limit, now);
  const message = `Rate limit exceeded: this shop may make ${describeLimit(limit)} to the admin API; retry later`;
  return async (c, next) => {
    const tenant = c.get('tenant');
    const taken = buckets.take(`${tenant.appHandle}\u0000${tenant.shop}`);
    if (!taken.ok) throw new TooManyRequestsError(message, taken.retryAfterSeconds);
    await next();
  };
}
