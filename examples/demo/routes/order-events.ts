/**
 * POST /routes/order-events — a partner system reports an order event. The request is authenticated with an
 * HMAC-SHA256 of the raw body (header x-demo-signature, hex, secret DEMO_ROUTE_SECRET); only then is the shop it
 * names trusted. The work is handed to a flow and the route answers 202 with the dispatch result.
 * `service.defineRoute` types `forShop(...).providers` by the app's providers (e.g. `tenant.providers.crm.findCustomer`).
 * A shop that is not installed makes forShop throw ShopNotInstalledError, and a run of the flow already active for the
 * shop makes dispatchFlow throw FlowConcurrencyError: the route catches both and answers 404 and 409. Any other thrown
 * error becomes a logged generic 500 (docs/routes.md, "Errors").
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { FlowConcurrencyError, ShopNotInstalledError } from 'mercato';
import service from '../service.config.ts';

export const DEMO_ROUTE_SECRET = process.env.DEMO_ROUTE_SECRET ?? 'demo-route-secret';

export default service.defineRoute<{ shop: string; orderId: number }>({
  async auth(request, { forShop }) {
    const body = await request.text();
    const given = Buffer.from(request.headers.get('x-demo-signature') ?? '', 'hex');
    const expected = createHmac('sha256', DEMO_ROUTE_SECRET).update(body).digest();
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let parsed: { shop?: unknown; orderId?: unknown };
    try {
      parsed = JSON.parse(body);
    } catch {
      return Response.json({ error: 'body must be JSON { shop, orderId }' }, { status: 400 });
    }
    if (typeof parsed.shop !== 'string' || typeof parsed.orderId !== 'number') {
      return Response.json({ error: 'body must be JSON { shop, orderId }' }, { status: 400 });
    }
    try {
      const tenant = await forShop({ shop: parsed.shop });
      return { shop: tenant.shop, orderId: parsed.orderId };
    } catch (error) {
      if (error instanceof ShopNotInstalledError)
        return Response.json({ error: `Shop "${error.shop}" has not installed the app` }, { status: 404 });
      throw error;
    }
  },
  async POST(_request, ctx) {
    // the typed dispatchFlow of the configured instance: flowName and input are checked by TypeScript
    try {
      const result = await service.dispatchFlow({
        flowName: 'syncOrders',
        input: { since: `order:${ctx.auth.orderId}` },
        shop: ctx.auth.shop,
      });
      return Response.json(result, { status: 202 });
    } catch (error) {
      if (error instanceof FlowConcurrencyError)
        return Response.json({ error: 'A sync of this shop is already running', existingRunId: error.existingRunId }, { status: 409 });
      throw error;
    }
  },
});
