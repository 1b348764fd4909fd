/**
 * The HTTP side of the metrics: the request counter and latency middleware (the route label is the matched route
 * pattern, `/api/runs/:id`, never the raw path), and `GET /metrics`, off (a JSON 404, like any unknown path) without a
 * token and answered 401 without the right bearer token (compared in constant time).
 */
import type { Context, MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { constantTimeEqual } from '../http/auth.ts';
import type { Metrics } from './registry.ts';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Counts every answered request into `metrics` (the first middleware of the server). */
export function requestMetrics(metrics: Metrics): MiddlewareHandler {
  return async (c, next) => {
    const start = performance.now();
    try {
      await next();
    } finally {
      const method = METHODS.has(c.req.method) ? c.req.method : 'OTHER';
      metrics.httpRequest(method, routeOf(c), c.res.status, (performance.now() - start) / 1000);
    }
  };
}

/** The pattern of the route that answered (`/*` when nothing but the catch-alls did). */
function routeOf(c: Context): string {
  try {
    return routePath(c) || '/*';
  } catch {
    return '/*';
  }
}

export const METRICS_PATH = '/metrics';
export const METRICS_UNAUTHORIZED = 'GET /metrics needs the bearer token of MERCATO_METRICS_TOKEN (or metrics.token of the config)';

/** True when `given` equals `expected`, in time independent of where they differ (both are hashed first). */
export function tokenMatches(given: string, expected: string): boolean {
  return constantTimeEqual(given, expected);
}

/**
 * The handler of `GET /metrics`: `metrics` undefined (no token configured) → 404 `{ error: 'Not found' }`; a missing or
 * wrong `Authorization: Bearer <token>` → 401 `{ error }` with `WWW-Authenticate`; else the exposition text.
 */
export function metricsEndpoint(metrics: Metrics | undefined, token: string | undefined) {
  return async (c: Context) => {
    if (!metrics || token === undefined) return c.json({ error: 'Not found' }, 404);
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    if (!match || !tokenMatches(match[1]!, token)) {
      c.header('WWW-Authenticate', 'Bearer realm="metrics"');
      return c.json({ error: METRICS_UNAUTHORIZED }, 401);
    }
    const text = await metrics.scrape();
    c.header('Content-Type', metrics.contentType);
    c.header('Cache-Control', 'no-store');
    return c.body(text, 200);
  };
}
