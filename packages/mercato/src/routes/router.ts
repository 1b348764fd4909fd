/**
 * Serves the loaded route files under /routes/*: method dispatch (405 with Allow), the per-route auth step on a
 * cloned request, the handler with its context, and a generic 500 for anything thrown or a non-Response result.
 */
import type { Context, Hono } from 'hono';
import { HttpError } from '../http/errors.ts';
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
      const fail = (stage: string, error: unknown) => {
        // our own typed errors (forShop: shop not installed, bad domain; dispatch: 400/404/409) keep their status and message
        if (error instanceof HttpError) return json(error.body(), error.status, error.headers);
        deps.logger.error({ err: error, requestId, route: route.path, file: relPath, stage }, `public route ${stage} failed`);
        return json({ error: 'Internal server error', requestId }, 500);
      };
      let authResult: unknown;
      if (route.definition.auth !== 'none') {
        try {
          authResult = await route.definition.auth(request.clone(), { forShop: deps.forShop, params });
        } catch (error) {
          return fail('auth', error);
        }
        if (authResult === null || authResult === undefined) return json({ error: 'Unauthorized' }, 401);
        if (authResult instanceof Response) return authResult;
      }
      const ctx: RouteContext = { params, auth: authResult, forShop: deps.forShop, dispatchFlow: deps.dispatchFlow, requestId };
      let response: unknown;
      try {
        response = await handler(request, ctx);
      } catch (error) {
        return fail('handler', error);
      }
      if (!(response instanceof Response)) {
        return fail('handler', new TypeError(`${relPath}: the ${method} handler returned ${response === null ? 'null' : typeof response}, not a Response`));
      }
      if (method === 'HEAD' && !route.definition.HEAD) return new Response(null, { status: response.status, headers: response.headers });
      return response;
    });
  }
}
