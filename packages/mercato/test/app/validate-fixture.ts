/**
 * A configuration that uses every option validly, rebuilt fresh for each test so a test can break exactly one thing
 * and assert the exact problem list.
 */
import { z } from 'zod';
import { collectConfigProblems } from '../../src/app/validate.ts';

export function validBase(): any {
  return {
    providers: {
      crm: {
        name: 'crm',
        description: 'A CRM',
        ui: {
          fields: {
            baseUrl: { type: 'text', label: 'Base URL', placeholder: 'https://crm.example', validate: z.url() },
            apiKey: { type: 'password', label: 'API key', description: 'Kept secret' },
            timeoutMs: { type: 'number', label: 'Timeout', required: false },
            region: {
              type: 'select',
              label: 'Region',
              options: [
                { label: 'Europe', value: 'eu' },
                { label: 'United States', value: 'us' },
              ],
            },
            sandbox: { type: 'checkbox', label: 'Sandbox', required: false },
          },
        },
        checker: async () => true,
        transformer: ({ data }: { data: Record<string, unknown> }) => data,
        methods: { findCustomer: async (_config: unknown, email: string) => ({ email }) },
      },
    },
    pages: { functions: 'hidden' },
  };
}

export function validConfig(): any {
  const syncOrders = {
    name: 'syncOrders',
    description: 'Sync orders',
    input: z.object({ since: z.string().default('1d'), limit: z.number().int().optional() }),
    timeout: 60_000,
    retryPolicy: { maxAttempts: 5, initialIntervalMs: 500, backoffCoefficient: 2, maxIntervalMs: 10_000 },
    concurrency: 2,
    run: async () => ({ ok: true }),
  };
  const sendDigest = { name: 'sendDigest', input: z.object({ channel: z.enum(['email', 'slack']) }), concurrency: null, run: () => 'sent' };
  return {
    flows: { syncOrders, sendDigest },
    shopify: {
      scopes: 'read_orders,write_products',
      apiVersion: '2026-10',
      apps: {
        main: { toml: 'platform.app.toml', apiSecret: 'secret-main' },
        'second_app-2': { apiKey: 'key-2', apiSecret: 'secret-2', appUrl: 'https://second.example.com' },
      },
    },
    functions: {
      volume: {
        type: 'discount',
        handle: 'volume-discount',
        title: 'Volume discount',
        discountModes: ['automatic', 'code'],
        fields: { percent: { type: 'number', label: 'Percent' } },
        authorize: () => true,
      },
      hidePayment: { type: 'payment_customization', handle: 'hide_payment', fields: {} },
    },
    mcp: {
      enabled: true,
      crossShopAccess: false,
      permissions: {
        'orders:read_orders': { label: 'Read orders', group: 'Orders', riskLevel: 'low', description: 'Lists orders' },
        'crm:write_customer_notes': { label: 'Write CRM notes' },
      },
      tools: {
        'orders.lookup': {
          description: 'Look up an order',
          title: 'Order lookup',
          requiredPermissions: ['orders:read_orders', 'read_logs'],
          riskLevel: 'medium',
          inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
          run: () => 'found',
        },
        'crm_notes-add': { description: 'Add a note', requiredPermissions: [], run: async () => ({ ok: true }) },
      },
      resources: {
        'orders://recent': {
          name: 'Recent orders',
          description: 'The 10 latest orders',
          mimeType: 'application/json',
          requiredPermissions: ['orders:read_orders'],
          read: () => '[]',
        },
      },
    },
    webhooks: {
      'orders/create': { topic: 'orders/create', description: 'New order', handler: async () => {} },
      'customers/data_request': { topic: 'customers/data_request', handler: () => {} },
    },
    crons: [
      { name: 'Nightly', schedule: '0 3 * * *', flow: 'syncOrders', input: { since: '2d' }, shops: 'all' },
      { schedule: '0 8 * * 1', flow: 'sendDigest', input: { channel: 'email' }, timezone: 'Europe/Paris' },
      { schedule: '*/30 * * * * *', flow: 'syncOrders', shops: 'demo-shop.myshopify.com' },
      { schedule: '@daily', flow: 'syncOrders', shops: ['a.myshopify.com', 'b-shop.myshopify.com'] },
      { schedule: '0 9 * * MON-FRI', flow: 'sendDigest', input: { channel: 'slack' }, shops: 'global', timezone: 'UTC' },
    ],
    experimental: {
      customPages: true,
      pages: {
        salesReport: {
          title: 'Sales report',
          path: '/reports/sales',
          nav: true,
          authorize: async () => true,
          loaders: {
            summary: {
              description: 'Totals',
              input: z.object({ days: z.number().int().default(7) }),
              timeout: 5000,
              run: () => ({ total: 0 }),
            },
          },
          actions: { 'export-csv': { run: async () => 'ok' } },
        },
        settings: { title: 'Settings', nav: false },
      },
    },
    pages: { mcp: 'disabled', crons: 'visible' },
    worker: { concurrency: 8, pollIntervalMs: 500, pollMaxIntervalMs: 4000, pollBackoffCoefficient: 1.5, leaseDurationMs: 20_000 },
    retryPolicy: { maxAttempts: 3, initialIntervalMs: 1000, backoffCoefficient: 2, maxIntervalMs: 60_000 },
    onError: () => {},
  };
}

/** Problems of the valid fixture after `change` breaks it. */
export function problemsAfter(change: (config: any, base: any) => void): string[] {
  const base = validBase();
  const config = validConfig();
  change(config, base);
  return collectConfigProblems(base, config);
}
