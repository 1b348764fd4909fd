/**
 * The Mercato demo app: what `npm start` at the repository root runs (`mercato dev` in this folder).
 * It shows each kind of definition the configuration holds.
 */
import { defineApp, defineFunction, defineProvider, defineWebhook } from 'mercato';
import { z } from 'zod';

const crm = defineProvider({
  name: 'crm',
  description: 'A customer CRM reached over HTTP',
  ui: {
    fields: {
      baseUrl: {
        type: 'text',
        label: 'Base URL',
        placeholder: 'http://localhost:3000/routes/fake-crm',
        description: 'The demo serves a fake CRM at /routes/fake-crm (API key: demo-crm-key)',
      },
      apiKey: { type: 'password', label: 'API key' },
      timeoutMs: { type: 'number', label: 'Timeout (ms)', required: false },
      region: {
        type: 'select',
        label: 'Region',
        options: [
          { label: 'Europe', value: 'eu' },
          { label: 'United States', value: 'us' },
        ],
      },
      sandbox: { type: 'checkbox', label: 'Sandbox mode', required: false },
    },
  },
  // A thrown error is the check's reason in the admin ("The CRM answered 401 Unauthorized"); `false` gives none.
  async checker({ config, signal }) {
    const res = await fetch(`${config.baseUrl}/ping`, { headers: { 'x-api-key': config.apiKey }, signal });
    if (!res.ok) throw new Error(`The CRM answered ${res.status} ${res.statusText}`.trim());
    return true;
  },
  methods: {
    async findCustomer(config: { baseUrl: string; apiKey: string }, email: string) {
      const res = await fetch(`${config.baseUrl}/customers?email=${encodeURIComponent(email)}`, {
        headers: { 'x-api-key': config.apiKey },
      });
      if (!res.ok) throw new Error(`CRM answered ${res.status}`);
      return (await res.json()) as { id: string; email: string } | null;
    },
  },
});

const app = defineApp({ providers: { crm }, pages: { functions: 'visible' } });

const syncOrders = app.defineFlow({
  name: 'syncOrders',
  description: 'Fetch recent orders, enrich them, store a summary',
  input: z.object({ since: z.string().default('1d'), dryRun: z.boolean().default(false) }),
  timeout: 5 * 60_000,
  async run(ctx, input) {
    const orders = await ctx.step('fetch', async () => [
      { id: 1001, total: 42 },
      { id: 1002, total: 7 },
    ]);
    await ctx.log.info('fetched orders', { count: orders.length, since: input.since });
    const enriched = await ctx.step('enrich', async () => {
      const result = orders.map((o) => ({ ...o, vip: o.total > 20 }));
      // Searchable in the run's logs (docs/logs.md): `orderId=1001`, `vip=true step:enrich`, `total>20 C:1`.
      for (const o of result) await ctx.log.info(`order ${o.id} enriched`, { orderId: o.id, total: o.total, vip: o.vip });
      return result;
    });
    return ctx.step('summarise', async () => ({
      orders: enriched.length,
      vip: enriched.filter((o) => o.vip).length,
      dryRun: input.dryRun,
    }));
  },
});

/** Waits `ms`, or rejects as soon as `signal` aborts (a cancel, a lost lease, the worker stopping). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

// A run long enough to watch (docs/getting-started.md, "Watch durability"): one step per page, a `ctx.sleep` between
// pages, a log line per page. With the defaults it lasts about a minute: 12 pages of 2 s of work and 11 pauses of 3 s.
// Stop `mercato dev` mid-run and start it again: the run goes on from its last completed page.
const backfillOrders = app.defineFlow({
  name: 'backfillOrders',
  description: 'Backfill old orders page by page, pausing between pages (a run of about a minute to watch)',
  input: z.object({
    pages: z.number().int().min(1).max(100).default(12).describe('Pages of orders to fetch'),
    pageMs: z.number().int().min(0).max(60_000).default(2000).describe('Work per page (ms)'),
    pauseSeconds: z.number().int().min(1).max(3600).default(3).describe('ctx.sleep between pages (s)'),
  }),
  timeout: 30 * 60_000,
  async run(ctx, input) {
    let orders = 0;
    for (let page = 1; page <= input.pages; page++) {
      const fetched = await ctx.step(`page ${page}`, async ({ signal }) => {
        await pause(input.pageMs, signal);
        return { page, orders: 25 };
      });
      orders += fetched.orders;
      await ctx.log.info(`page ${page} of ${input.pages} backfilled`, { page, orders: fetched.orders, total: orders });
      if (page < input.pages) await ctx.sleep(`pause ${page}`, input.pauseSeconds * 1000);
    }
    return { pages: input.pages, orders };
  },
});

const sendDigest = app.defineFlow({
  name: 'sendDigest',
  input: z.object({ channel: z.enum(['email', 'slack']).default('email') }),
  async run(ctx, input) {
    await ctx.log.info('sending digest', { channel: input.channel });
    return { sent: true };
  },
});

const lookupCustomer = app.defineFlow({
  name: 'lookupCustomer',
  description: 'Look a customer up in the CRM provider (configure it on the Providers page first)',
  input: z.object({ email: z.string().email().default('ada@example.com') }),
  concurrency: null,
  async run(ctx, input) {
    const customer = await ctx.step('lookup', () => ctx.providers.crm.findCustomer(input.email));
    await ctx.log.info(customer ? 'customer found' : 'no such customer', { email: input.email });
    return { customer };
  },
});

// Platform functions (docs/functions.md): `mercato dev` deploys these handles on the simulator, so the Functions page can
// create, edit and delete their instances; each instance's configuration is the app metafield $app/function-configuration.
const volumeDiscount = defineFunction({
  type: 'discount',
  handle: 'volume-discount',
  title: 'Volume discount',
  description: 'A percentage off lines bought in quantity',
  discountModes: ['automatic', 'code'],
  fields: {
    minQuantity: { type: 'number', label: 'Minimum quantity per line' },
    percentage: { type: 'number', label: 'Percent off', validate: z.number().min(1).max(100) },
  },
});

const hideCashOnDelivery = defineFunction({
  type: 'payment_customization',
  handle: 'hide-cod',
  title: 'Hide cash on delivery',
  fields: { threshold: { type: 'number', label: 'Hide it above this order total' } },
});

const bundles = defineFunction({
  type: 'cart_transform',
  handle: 'bundles',
  title: 'Bundles',
  fields: { bundleTag: { type: 'text', label: 'Product tag of bundle parents', placeholder: 'bundle' } },
});

export default app.defineConfig({
  flows: { syncOrders, sendDigest, lookupCustomer, backfillOrders },
  functions: { volumeDiscount, hideCashOnDelivery, bundles },
  crons: [
    { name: 'Nightly order sync', schedule: '0 3 * * *', flow: 'syncOrders', input: { since: '1d' }, shops: 'all' },
    { schedule: '0 8 * * 1', flow: 'sendDigest', input: { channel: 'email' }, shops: 'global', timezone: 'Europe/Paris' },
    {
      name: 'Dry-run sync (demo-1 only)',
      schedule: '*/30 * * * *',
      flow: 'syncOrders',
      input: { since: '30m', dryRun: true },
      shops: ['demo-1.myshopify.com'],
    },
  ],
  webhooks: {
    // Runs durably as `webhook:orders/create` (retried by retryPolicy). Try it in `mercato dev`:
    // curl -X POST <simulator>/__sim/webhooks -d '{"shop":"demo-1.myshopify.com","topic":"orders/create","payload":{"id":1001}}'
    'orders/create': defineWebhook({
      topic: 'orders/create',
      description: 'Log each new order with the shop it belongs to',
      async handler(ctx, payload: { id: number }) {
        // ctx.admin: Admin GraphQL with the shop's offline token (throttling and retries handled by the client)
        const { shop } = await ctx.step('shop', () =>
          ctx.admin.request<{ shop: { name: string; currencyCode: string } }>('{ shop { name currencyCode } }', { signal: ctx.signal }),
        );
        await ctx.log.info('order created', { orderId: payload.id, shop: shop.name, currency: shop.currencyCode });
      },
    }),
    // Compliance topic: this handler runs first, then the built-in erasure of the shop's data (docs/webhooks.md).
    'shop/redact': defineWebhook({
      topic: 'shop/redact',
      async handler(ctx, payload: { shop_domain: string }) {
        await ctx.log.info('erasing the shop data', { shop: payload.shop_domain });
      },
    }),
  },
  mcp: {
    permissions: { 'demo:read_orders': { label: 'Read demo orders', riskLevel: 'low' } },
    tools: {
      'demo.orders.count': {
        description: 'Count the demo orders of the token shop',
        requiredPermissions: ['demo:read_orders'],
        inputSchema: { type: 'object', properties: {} },
        run: (ctx) => ({ shop: ctx.shop, count: 2 }),
      },
    },
    resources: {
      'demo://orders/summary': {
        name: 'Demo order summary',
        description: 'A Markdown summary of the demo orders of the token shop',
        mimeType: 'text/markdown',
        requiredPermissions: ['demo:read_orders'],
        read: (ctx) => `# Orders of ${ctx.shop}\n\n| Order | Total |\n|---|---|\n| 1001 | 42 |\n| 1002 | 7 |\n`,
      },
    },
  },
  worker: { concurrency: 5 },
  retryPolicy: { maxAttempts: 3 },
});
