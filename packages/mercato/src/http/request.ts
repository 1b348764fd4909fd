/**
 * Per-request plumbing: the request id (echoed in `X-Request-Id`, available as `c.get('requestId')`), the access
 * log line (pino; its level follows the status, see accessLevel: method, route, path without query, status, duration,
 * request id, and the app and shop of an authenticated /api request; never a header) and the security headers of the
 * server's own non-HTML answers.
 */
import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import type { Logger } from '../logger.ts';
import type { ApiEnv } from './types.ts';

export const REQUEST_ID_HEADER = 'X-Request-Id';
/** An incoming id is reused when it is 1 to 128 characters of letters, digits and `-_.:`; otherwise a UUID is made. */
export const REQUEST_ID_RE = /^[A-Za-z0-9_.:-]{1,128}$/;

export function requestId(): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const incoming = c.req.header(REQUEST_ID_HEADER);
    const id = incoming !== undefined && REQUEST_ID_RE.test(incoming) ? incoming : randomUUID();
    c.set('requestId', id);
    c.header(REQUEST_ID_HEADER, id);
    await next();
    if (c.res.headers.get(REQUEST_ID_HEADER) === id) return;
    setResponseHeaders(c, { [REQUEST_ID_HEADER]: id });
  };
}

/** Sets headers on the answer, copying it first when its headers are immutable (a Response returned from fetch). */
function setResponseHeaders(c: Context, headers: Record<string, string>): void {
  try {
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  } catch {
    const res = new Response(c.res.body, c.res);
    for (const [name, value] of Object.entries(headers)) res.headers.set(name, value);
    c.res = res;
  }
}

/**
 * The policy of every non-HTML answer of the server itself (JSON, event streams, CSV exports, the admin UI's scripts):
 * nothing may be loaded or run from it and nothing may frame it. The admin UI's HTML sets its own (admin/index.ts).
 */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'";

/**
 * `X-Content-Type-Options: nosniff` and API_CSP on the server's own non-HTML answers. Public routes (/routes/*) are left
 * as their handlers made them (the spec: "a handler must return a Response"), and an answer that already has a policy
 * keeps it.
 */
export function apiSecurityHeaders(): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    await next();
    const path = c.req.path;
    // A 304's headers update the cached answer's (RFC 9111 §4.3.4): one added here would replace index.html's policy.
    if (path === '/routes' || path.startsWith('/routes/') || c.res.status === 304) return;
    const headers: Record<string, string> = { 'X-Content-Type-Options': 'nosniff' };
    const type = c.res.headers.get('content-type') ?? '';
    if (!c.res.headers.has('content-security-policy') && !/^text\/html\b/i.test(type)) headers['Content-Security-Policy'] = API_CSP;
    setResponseHeaders(c, headers);
  };
}

/** Paths that probes and scrapers call every few seconds: their access lines are at `trace`, not `debug`. */
export const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The access line's level: by the answer's status (`byStatus`: info below 400, warn for 4xx and for 503, which Mercato
 * answers while the database is away, error for other 5xx), or debug; trace for the probes either way.
 */
export function accessLevel(path: string, status: number, byStatus: boolean): 'trace' | 'debug' | 'info' | 'warn' | 'error' {
  if (PROBE_PATHS.has(path)) return 'trace';
  if (!byStatus) return 'debug';
  if (status >= 500 && status !== 503) return 'error';
  return status >= 400 ? 'warn' : 'info';
}

/**
 * One line per request (`msg: "request"`): request id, method, route (the pattern that matched, when one did), path
 * without the query, status, duration, and the app and shop of an authenticated /api request; never a header.
 */
export function accessLog(logger: Logger, options: { byStatus?: boolean } = {}): MiddlewareHandler<ApiEnv> {
  const byStatus = options.byStatus ?? false;
  return async (c, next) => {
    const start = performance.now();
    await next();
    const level = accessLevel(c.req.path, c.res.status, byStatus);
    if (!logger.isLevelEnabled(level)) return;
    const tenant = c.get('tenant');
    const route = routePath(c);
    logger[level](
      {
        requestId: c.get('requestId'),
        method: c.req.method,
        ...(route && !route.endsWith('*') ? { route } : {}),
        path: c.req.path,
        status: c.res.status,
        durationMs: Math.round((performance.now() - start) * 100) / 100,
        ...(tenant ? { app: tenant.appHandle, shop: tenant.shop } : {}),
      },
      'request',
    );
  };
}
