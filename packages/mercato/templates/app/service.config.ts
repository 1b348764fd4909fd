/**
 * The app's configuration (docs/configuration.md). `mercato dev`, `start`, `worker` and `check` load this file; its
 * default export is the configured instance. `defineConfig` validates everything and lists every problem it finds.
 */
import { defineApp } from 'mercato';
import { syncOrders } from './flows/sync-orders.ts';
import { ordersCreate } from './webhooks/orders-create.ts';

// The base definition: provider definitions (docs/providers.md) and default page modes go here.
const app = defineApp({ providers: {} });

export default app.defineConfig({
  // Every key must equal its flow's name.
  flows: { syncOrders },
  // Crons dispatch a flow on a schedule (docs/crons.md): this one runs every night at 03:00 UTC, once per installed shop.
  crons: [{ name: 'Nightly order sync', schedule: '0 3 * * *', flow: 'syncOrders', input: { since: '1d' }, shops: 'all' }],
  // Webhook handlers by topic (docs/webhooks.md); deliveries arrive signed at /webhooks.
  webhooks: { 'orders/create': ordersCreate },
  // App-wide retry defaults; a flow or a dispatch may override them field by field.
  retryPolicy: { maxAttempts: 3 },
});
