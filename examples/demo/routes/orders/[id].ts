/** GET /routes/orders/:id — a parameterised public route. */
import { defineRoute } from 'mercato';

export default defineRoute({
  auth: 'none',
  GET: (_request, ctx) => Response.json({ orderId: ctx.params.id, note: 'public, read-only demo data' }),
});
