/**
 * Per-request plumbing: the request id (echoed in `X-Request-Id`, available as `c.get('requestId')`) and the access
 * log line (pino, debug level: method, path without query, status, duration, request id; never a header).
 */
import { randomUUID } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
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
    try {
      c.res.headers.set(REQUEST_ID_HEADER, id);
    } catch {
      // A Response with immutable headers (for example one returned from fetch): copy it.
      const res = new Response(c.res.body, c.res);
      res.headers.set(REQUEST_ID_HEADER, id);
      c.res = res;
    }
  };
}

export function accessLog(logger: Logger): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const start = performance.now();
    await next();
    if (!logger.isLevelEnabled('debug')) return;
    logger.debug(
      {
        requestId: c.get('requestId'),
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        durationMs: Math.round((performance.now() - start) * 100) / 100,
      },
      'request',
    );
  };
}
