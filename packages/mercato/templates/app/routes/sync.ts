/**
 * POST /routes/sync: an outside system (a back office, a partner) asks for an order sync of one shop.
 * Files under routes/ are public HTTP endpoints (docs/routes.md) and each one declares its `auth`. This one wants
 * `Authorization: Bearer <SYNC_TOKEN>` (outside production, without SYNC_TOKEN, the token is `dev-sync-token`). Only once
 * the caller is authenticated is the shop named in the body trusted; the work is handed to the syncOrders flow.
 *
 *   curl -X POST http://localhost:3000/routes/sync -H 'authorization: Bearer dev-sync-token' \
 *     -d '{"shop":"demo-1.myshopify.com","since":"7d"}'
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { FlowConcurrencyError, InvalidDispatchError, InvalidShopError, ShopNotInstalledError } from 'mercato';
import service from '../service.config.ts';

function expectedToken(): string | undefined {
  return process.env.SYNC_TOKEN || (process.env.NODE_ENV === 'production' ? undefined : 'dev-sync-token');
}

/** Compares in constant time (hashing first makes the lengths equal). */
function sameToken(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export default service.defineRoute<{ shop: string; since?: string }>({
  async auth(request, { forShop }) {
    const expected = expectedToken();
    const given = /^Bearer (.+)$/i.exec(request.headers.get('authorization') ?? '')?.[1] ?? '';
    if (!expected || !sameToken(given, expected)) return null; // → 401
    let body: { shop?: unknown; since?: unknown };
    try {
      body = await request.json();
    } catch {
      return Response.json({ error: 'the body must be JSON: { "shop": "<shop domain>", "since"?: "1d" }' }, { status: 400 });
    }
    if (typeof body?.shop !== 'string' || (body.since !== undefined && typeof body.since !== 'string')) {
      return Response.json({ error: 'the body must be JSON: { "shop": "<shop domain>", "since"?: "1d" }' }, { status: 400 });
    }
    try {
      const tenant = await forShop({ shop: body.shop }); // the shop must have installed the app
      return { shop: tenant.shop, since: body.since };
    } catch (error) {
      if (error instanceof ShopNotInstalledError || error instanceof InvalidShopError) {
        return Response.json({ error: error.message }, { status: error instanceof ShopNotInstalledError ? 404 : 400 });
      }
      throw error; // anything else: logged, generic 500
    }
  },
  async POST(_request, ctx) {
    try {
      // The instance's dispatchFlow is typed: flowName must be a registered flow and input matches its schema.
      const result = await service.dispatchFlow({ flowName: 'syncOrders', input: { since: ctx.auth.since }, shop: ctx.auth.shop });
      return Response.json(result, { status: 202 }); // { runId, status: 'pending' }
    } catch (error) {
      if (error instanceof InvalidDispatchError) return Response.json({ error: error.message, issues: error.issues }, { status: 400 });
      if (error instanceof FlowConcurrencyError) {
        return Response.json({ error: 'a sync of this shop is already running', existingRunId: error.existingRunId }, { status: 409 });
      }
      throw error;
    }
  },
});
