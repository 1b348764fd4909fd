/**
 * A webhook handler (docs/webhooks.md): each signed delivery of the topic to `/webhooks` runs it durably, as a run of
 * `webhook:orders/create` (retried by the app's retryPolicy; completed steps are not redone).
 */
import { defineWebhook } from 'mercato';

export const ordersCreate = defineWebhook<{ id: number; total_price?: string }>({
  topic: 'orders/create',
  description: 'Log each new order with the name of its shop',
  async handler(ctx, payload) {
    // ctx.admin: the Admin GraphQL client of the shop, with its offline token
    const { shop } = await ctx.step('shop', () => ctx.admin.request<{ shop: { name: string } }>('{ shop { name } }', { signal: ctx.signal }));
    await ctx.log.info('order created', { orderId: payload.id, total: payload.total_price, shop: shop.name });
  },
});
