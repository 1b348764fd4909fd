import { createHmac, timingSafeEqual } from 'node:crypto';
import { defineRoute } from '../../../../src/routes/types.ts';
import { answerTypedError, fail } from './_json.ts';

export const ROUTE_SECRET = 'fuzz-route-secret';

/** The pattern of docs/routes.md: the auth step reads the body (a clone) to check its HMAC, the handler reads it again. */
export default defineRoute<{ shop: string }>({
  async auth(request, { forShop }) {
    const body = await request.text();
    const given = Buffer.from(request.headers.get('x-signature') ?? '', 'hex');
    const expected = createHmac('sha256', ROUTE_SECRET).update(body).digest();
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let shop: unknown;
    try {
      shop = (JSON.parse(body) as { shop?: unknown } | null)?.shop;
    } catch {
      return fail(400, 'body must be JSON');
    }
    if (typeof shop !== 'string') return fail(400, 'shop must be a string');
    try {
      return { shop: (await forShop({ shop })).shop };
    } catch (error) {
      return answerTypedError(error);
    }
  },
  async POST(request, ctx) {
    const { n } = (await request.json()) as { n?: unknown };
    try {
      return Response.json(await ctx.dispatchFlow({ flowName: 'typed', input: { n }, shop: ctx.auth.shop }), { status: 202 });
    } catch (error) {
      return answerTypedError(error);
    }
  },
});
