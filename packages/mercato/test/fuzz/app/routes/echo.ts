import { defineRoute } from '../../../../src/routes/types.ts';
import { answerTypedError, fail, jsonOf } from './_json.ts';

/** Public, unauthenticated: GET answers the query keys; POST `{ shop, input }` dispatches the echo flow for an installed shop. */
export default defineRoute({
  auth: 'none',
  GET: (request) => Response.json({ keys: [...new URL(request.url).searchParams.keys()].length }),
  async POST(request, ctx) {
    const body = await jsonOf(request);
    if (!body.ok) return body.response;
    const value = body.value as { shop?: unknown; input?: unknown } | null;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail(400, 'body must be an object');
    if (typeof value.shop !== 'string') return fail(400, 'shop must be a string');
    try {
      const tenant = await ctx.forShop({ shop: value.shop });
      return Response.json(await ctx.dispatchFlow({ flowName: 'echo', input: value.input, shop: tenant.shop }), { status: 202 });
    } catch (error) {
      return answerTypedError(error);
    }
  },
});
