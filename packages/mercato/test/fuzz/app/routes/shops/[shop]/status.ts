import { defineRoute } from '../../../../../../src/routes/types.ts';
import { answerTypedError } from '../../_json.ts';

/** forShop with a shop taken from the path: an unknown or malformed shop is the route's 404 / 400. */
export default defineRoute({
  auth: 'none',
  async GET(_request, ctx) {
    try {
      const tenant = await ctx.forShop({ shop: ctx.params.shop! });
      return Response.json({ shop: tenant.shop, app: tenant.app.handle });
    } catch (error) {
      return answerTypedError(error);
    }
  },
});
