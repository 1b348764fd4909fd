/**
 * Serves the loaded route files under /routes/*: method dispatch (405 with Allow), the body limit (413, see
 * ./body-limit.ts), the per-route auth step on a cloned request, the handler with its context, and a logged generic
 * 500 for anything thrown (Mercato's typed errors included: a route catches those itself, see ./errors.ts) or a
 * non-Response result.
 */
import type { Context, Hono } from 'hono';
import { INTERNAL_ERROR_MESSAGE } from '../http/errors.ts';
import { BodiesInFlightError, type BodyBudget, bodyBytesOf } from '../http/inflight.ts';
import type { Logger } from '../logger.ts';
import { DEFAULT_ROUTE_BODY_LIMIT, declaredTooLarge, limitRequestBody } from './body-limit.ts';
import type { LoadedRoute } from './loader.ts';
import type { ForShop, RouteContext, RouteDispatchOptions, RouteMethod } from './types.ts';
import type { DispatchResult } from '../app/types.ts';

export interface RoutesDeps {
  logger: Logger;
  forShop: ForShop;
  /** `requestId`: the request the route serves (told in `run.dispatched`). */
  dispatchFlow(options: RouteDispatchOptions, requestId?: string): Promise<DispatchResult>;
  /** The process's bound of request bodies in flight: a route's body is counted from its auth step to its answer. */
  bodies?: BodyBudget;
}

const json = (body: unknown, status: number, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });

function allowed(route: LoadedRoute): RouteMethod[] {
  const methods = [...route.methods];
  if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
  return methods;
}

/** Answers `replacement` instead of a route's Response, releasing that Response's body. */
function discarded(result: unknown, replacement: Response): Response {
  if (result instanceof Response) result.body?.cancel().catch(() => {});
  return replacement;
}

export function mountRoutes(app: Hono<any>, routes: LoadedRoute[], deps: RoutesDeps): void {
  for (const route of routes) {
    const allow = allowed(route);
    const relPath = route.file;
    const limit = route.definition.bodyLimit ?? DEFAULT_ROUTE_BODY_LIMIT;
    // The rest of the body is not read: the client is asked to close the connection (as /api and /mcp do).
    const tooLarge = () => json({ error: `Request body must be at most ${limit} bytes` }, 413, { Connection: 'close' });
    app.all(route.path, async (c: Context) => {
      const method = c.req.method.toUpperCase() as RouteMethod;
      const handler = route.definition[method] ?? (method === 'HEAD' ? route.definition.GET : undefined);
      if (!allow.includes(method) || !handler) {
        return json({ error: `Method ${c.req.method} not allowed` }, 405, { Allow: allow.join(', ') });
      }
      if (declaredTooLarge(c.req.raw, limit)) return tooLarge();
      // room among the bodies in flight, before a byte is read (the auth step may read it): else 503 with Retry-After
      const release = deps.bodies?.reserve(bodyBytesOf(c.req.raw.headers, limit));
      if (release === null) {
        const refusal = new BodiesInFlightError();
        return json(refusal.body(), refusal.status, refusal.headers);
      }
      try {
        return await serve(c, method, handler);
      } finally {
        release?.();
      }
    });

    /** The route's auth step and handler for one request (the body's share among the bodies in flight is held meanwhile). */
    async function serve(c: Context, method: RouteMethod, handler: NonNullable<LoadedRoute['definition'][RouteMethod]>): Promise<Response> {
      const requestId = String(c.get('requestId') ?? '');
      const params = c.req.param() as Record<string, string>;
      const body = limitRequestBody(c.req.raw, limit);
      const request = body.request;
      // spec rule 5: whatever is thrown (our typed errors too) is logged and answered with a generic 500
      const fail = (stage: string, error: unknown) => {
        // a body read that passed the limit fails whatever read it: the answer is the 413, not the route's error
        if (body.exceeded()) return tooLarge();
        deps.logger.error({ err: error, requestId, route: route.path, file: relPath, stage }, `public route ${stage} failed`);
        return json({ error: INTERNAL_ERROR_MESSAGE, requestId }, 500);
      };
      let authResult: unknown;
      if (route.definition.auth !== 'none') {
        try {
          authResult = await route.definition.auth(request.clone(), { forShop: deps.forShop, params });
        } catch (error) {
          return fail('auth', error);
        }
        // the auth step saw a cut body (and may have caught the read's error): whatever it decided, the answer is 413
        if (body.exceeded()) return discarded(authResult, tooLarge());
        // spec rule 4: null → 401, a Response → sent as is, any other value (undefined too) → ctx.auth
        if (authResult === null) return json({ error: 'Unauthorized' }, 401);
        if (authResult instanceof Response) return authResult;
      }
      const ctx: RouteContext<any> = {
        params,
        auth: authResult,
        forShop: deps.forShop,
        dispatchFlow: (options) => deps.dispatchFlow(options, requestId || undefined),
        requestId,
      };
      let response: unknown;
      try {
        response = await handler(request, ctx);
      } catch (error) {
        return fail('handler', error);
      }
      if (body.exceeded()) return discarded(response, tooLarge());
      if (!(response instanceof Response)) {
        return fail(
          'handler',
          new TypeError(`${relPath}: the ${method} handler returned ${response === null ? 'null' : typeof response}, not a Response`),
        );
      }
      if (method === 'HEAD' && !route.definition.HEAD) return new Response(null, { status: response.status, headers: response.headers });
      return response;
    }
  }
}
