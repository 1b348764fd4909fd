/**
 * A server span per HTTP request (only when tracing is on): the parent is the incoming W3C `traceparent`/`tracestate`
 * when there is one, the name is `<method> <route pattern>`, and the attributes follow the OpenTelemetry HTTP semantic
 * conventions. A 5xx answer marks the span failed. Health probes and metric scrapes are not traced. docs/tracing.md.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { SpanKind, type Tracing } from '../telemetry/tracing.ts';

/** Probes and scrapes, asked every few seconds by the platform that runs the process: not traced. */
export const UNTRACED_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

export function httpTracing(tracing: Tracing): MiddlewareHandler {
  return (c, next) => {
    if (UNTRACED_PATHS.has(c.req.path)) return next();
    const method = c.req.method;
    const parent = tracing.contextOf(c.req.header('traceparent'), c.req.header('tracestate'));
    const attributes = { 'http.request.method': method, 'url.path': c.req.path, 'url.scheme': new URL(c.req.url).protocol.slice(0, -1) };
    return tracing.span(method, { kind: SpanKind.SERVER, parent, attributes }, async (span) => {
      await next();
      const route = routePath(c);
      // a catch-all (`*`, `/api/*`) names no route: the span keeps the method alone, as the conventions ask
      if (route && !route.endsWith('*')) {
        span.setAttribute('http.route', route);
        span.updateName(`${method} ${route}`);
      }
      const status = c.res.status;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) {
        span.setAttribute('error.type', String(status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    });
  };
}
