/**
 * /api/pages/custom (docs/custom-pages.md): the authorized custom pages of the tenant, and the RPC path of their
 * loaders and actions. Not gated by the five page keys; when `experimental.customPages` is not true every path here
 * answers 404 `{ error: "Not found" }`, like a disabled page group.
 */
import { type Context, Hono } from 'hono';
import { readJsonBody } from '../http/body.ts';
import { NotFoundError } from '../errors.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import {
  type CustomPagesDeps,
  type OperationKind,
  type PageRequest,
  callOperation,
  listCustomPages,
  parseRpcBody,
  resolveOperation,
} from './service.ts';

export const CUSTOM_PAGES_PREFIX = '/api/pages/custom';

export function customPagesApi(deps: CustomPagesDeps): ApiRouteGroup[] {
  const app = new Hono<ApiEnv>();
  const requestOf = (c: Context<ApiEnv>): PageRequest => {
    const t = c.get('tenant');
    return { appHandle: t.appHandle, shop: t.shop, requestId: c.get('requestId'), signal: c.req.raw.signal };
  };
  app.use('*', async (_c, next) => {
    if (!deps.config.experimental.customPages) throw new NotFoundError();
    await next();
  });
  app.get('/', async (c) => c.json(await listCustomPages(deps, requestOf(c))));
  app.post('/:page/_rpc/:kind/:name', async (c) => {
    const { page, kind, name } = c.req.param();
    const req = requestOf(c);
    // 404 before the body is read: an unknown or unauthorized page, kind or name says nothing about the body
    const operation = await resolveOperation(deps, req, page, kind, name);
    const { input } = parseRpcBody(await readJsonBody(c));
    const body = await callOperation(deps, req, page, kind as OperationKind, name, operation, input);
    return c.body(body, 200, { 'content-type': 'application/json; charset=UTF-8' });
  });
  return [{ prefix: CUSTOM_PAGES_PREFIX, app }];
}
