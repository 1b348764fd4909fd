/**
 * A flow is durable background work (docs/flows.md): each `ctx.step` is a checkpoint whose result is stored, so a retried
 * or resumed run never does a completed step twice. The input schema validates every dispatch and types `input`.
 */
import { defineFlow } from 'mercato';
import { z } from 'zod';

export const syncOrdersInput = z.object({
  /** How far back to look: `30m`, `12h`, `1d`, … */
  since: z.string().regex(/^\d+[mhd]$/, 'a duration such as 30m, 12h or 1d').default('1d'),
  /** Orders at or above this total are flagged as large. */
  largeOrderTotal: z.number().nonnegative().default(100),
});

export type SyncOrdersInput = z.infer<typeof syncOrdersInput>;

interface Order {
  id: number;
  total: number;
}

export const syncOrders = defineFlow({
  name: 'syncOrders',
  description: 'Fetch recent orders and summarise them',
  input: syncOrdersInput,
  async run(ctx, input) {
    // Step 1: fetch. Replace the sample data with a real call, e.g. `ctx.admin.request(query, { signal: ctx.signal })`
    // for the run's shop (docs/platform.md) or a provider method (docs/providers.md).
    const orders = await ctx.step('fetch', async (): Promise<Order[]> => [
      { id: 1001, total: 42 },
      { id: 1002, total: 180 },
    ]);
    await ctx.log.info('fetched orders', { count: orders.length, since: input.since, shop: ctx.shop });

    // Step 2: summarise. Its result is stored too, and becomes the run's output below.
    const summary = await ctx.step('summarise', async () => ({
      orders: orders.length,
      large: orders.filter((o) => o.total >= input.largeOrderTotal).length,
      total: orders.reduce((sum, o) => sum + o.total, 0),
    }));
    await ctx.log.info('summarised orders', summary);
    return summary;
  },
});
