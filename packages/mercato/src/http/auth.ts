/**
 * Session-token authentication of `/api/*` (docs/admin-api.md, "Authentication"). Every failure is a 401
 * `{ error }` carrying `X-Shopify-Retry-Invalid-Session-Request: 1`, which tells the embedded admin to fetch a
 * fresh token and retry. Platform access tokens and MCP tokens are not JWTs and fail as malformed.
 */
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

export function unauthorized(message: string): UnauthorizedError {
  return new UnauthorizedError(message, { headers: { [RETRY_INVALID_SESSION_HEADER]: '1' } });
}

/** Verifies the bearer session token and sets `tenant` on the context. */
export function sessionAuth(platform: Pick<ResolvedPlatform, 'byApiKey'>): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const header = c.req.header('authorization');
    if (header === undefined || header.trim() === '') throw unauthorized(AUTH_ERRORS.missing);
    const token = bearerToken(header);
    if (!token) throw unauthorized(AUTH_ERRORS.scheme);
    const result = await verifySessionToken(token, platform);
    if (!result.ok) throw unauthorized(result.error);
    c.set('tenant', result.tenant);
    await next();
  };
}
