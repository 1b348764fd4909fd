/**
 * Serves the loaded route files under /routes/*: method dispatch (405 with Allow), the per-route auth step on a
 * cloned request, the handler with its context, and a logged generic 500 for anything thrown (Mercato's typed errors
 * included: a route catches those itself, see ./errors.ts) or a non-Response result.
 */
import type { Context, Hono } from 'hono';
import { INTERNAL_ERROR_MESSAGE } from '../http/errors.ts';
import type { Logger } from '../logger.ts';
import type { LoadedRoute } from './loader.ts';
import type { ForShop, RouteContext, RouteDispatchOptions, RouteMethod } from './types.ts';
import type { DispatchResult } from '../app/types.ts';

export interface RoutesDeps {
  logger: Logger;
  forShop: ForShop;
  dispatchFlow(options: RouteDispatchOptions): Promise<DispatchResult>;
}

const json = (body: unknown, status: number, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });

function allowed(route: LoadedRoute): RouteMethod[] {
  const methods = [...route.methods];
  if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
  return methods;
}

export function mountRoutes(app: Hono<any>, routes: LoadedRoute[], deps: RoutesDeps): void {
  for (const route of routes) {
    const allow = allowed(route);
    const relPath = route.file;
    app.all(route.path, async (c: Context) => {
      const requestId = String(c.get('requestId') ?? '');
      const method = c.req.method.toUpperCase() as RouteMethod;
      const handler = route.definition[method] ?? (method === 'HEAD' ? route.definition.GET : undefined);
      if (!allow.includes(method) || !handler) {
        return json({ error: `Method ${c.req.method} not allowed` }, 405, { Allow: allow.join(', ') });
      }
      const params = c.req.param() as Record<string, string>;
      const request = c.req.raw;
      // spec rule 5: whatever is thrown (our typed errors too) is logged and answered with a generic 500
      const fail = (stage: string, error: unknown) => {
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
        // spec rule 4: null → 401, a Response → sent as is, any other value (undefined too) → ctx.auth
        if (authResult === null) return json({ error: 'Unauthorized' }, 401);
        if (authResult instanceof Response) return authResult;
      }
      const ctx: RouteContext<any> = { params, auth: authResult, forShop: deps.forShop, dispatchFlow: deps.dispatchFlow, requestId };
      let response: unknown;
      try {
        response = await handler(request, ctx);
      } catch (error) {
        return fail('handler', error);
      }
      if (!(response instanceof Response)) {
        return fail(
          'handler',
          new TypeError(`${relPath}: the ${method} handler returned ${response === null ? 'null' : typeof response}, not a Response`),
        );
      }
      if (method === 'HEAD' && !route.definition.HEAD) return new Response(null, { status: response.status, headers: response.headers });
      return response;
    });
  }
}
