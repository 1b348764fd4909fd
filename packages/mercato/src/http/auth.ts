/**
 * Session-token authentication of `/api/*` (docs/admin-api.md, "Authentication"). Every failure is a 401
 * `{ error }` carrying `X-Shopify-Retry-Invalid-Session-Request: 1`, which tells the embedded admin to fetch a
 * fresh token and retry. Platform access tokens and MCP tokens are not JWTs and fail as malformed.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import type { ResolvedPlatform } from '../app/platform.ts';
import { UnauthorizedError } from './errors.ts';
import { verifySessionToken } from './session-token.ts';
import type { ApiEnv } from './types.ts';

export const RETRY_INVALID_SESSION_HEADER = 'X-Shopify-Retry-Invalid-Session-Request';

export const AUTH_ERRORS = Object.freeze({
  missing: 'Missing session token',
  scheme: 'Authorization must be "Bearer <session token>"',
});

const BEARER_RE = /^Bearer +(\S+) *$/i;

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive); undefined for anything else. */
export function bearerToken(header: string | null | undefined): string | undefined {
  return header ? BEARER_RE.exec(header)?.[1] : undefined;
}

/** Key of constantTimeEqual's digests: random per process, so the digests compared mean nothing outside it. */
const COMPARE_KEY = randomBytes(32);

/**
 * Constant-time equality of two secret values (strings as UTF-8, or bytes): signatures, HMACs, token hashes. Both are
 * first reduced to an HMAC-SHA256 under a random per-process key and the two 32-byte digests are compared with
 * `timingSafeEqual`, so the time taken shows neither where the values differ nor whether their lengths do. Use it for
 * every comparison of a secret; `===` on a secret is refused by test/security/constant-time.test.ts.
 */
export function constantTimeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  const digestA = createHmac('sha256', COMPARE_KEY).update(a).digest();
  const digestB = createHmac('sha256', COMPARE_KEY).update(b).digest();
  return timingSafeEqual(digestA, digestB);
}

export function unauthorized(message: string): UnauthorizedError {
  return new UnauthorizedError(message, { headers: { [RETRY_INVALID_SESSION_HEADER]: '1' } });
}

/** Verifies the bearer session token and sets `tenant` and `sessionToken` on the context. */
export function sessionAuth(platform: Pick<ResolvedPlatform, 'byApiKey'>): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const header = c.req.header('authorization');
    if (header === undefined || header.trim() === '') throw unauthorized(AUTH_ERRORS.missing);
    const token = bearerToken(header);
    if (!token) throw unauthorized(AUTH_ERRORS.scheme);
    const result = await verifySessionToken(token, platform);
    if (!result.ok) throw unauthorized(result.error);
    c.set('tenant', result.tenant);
    c.set('sessionToken', token);
    await next();
  };
}
