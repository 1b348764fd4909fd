/** The app the MCP tests run against: custom permissions, tools and resources covering every result and failure shape. */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import type { McpToolContext } from '../../src/app/types.ts';
import type { Database } from '../../src/db/engine.ts';

/** What the tools saw, for assertions. */
export const seen: { contexts: McpToolContext[]; slowAborted: boolean[]; slowReason: string[] } = {
  contexts: [],
  slowAborted: [],
  slowReason: [],
};

const waitForAbort = (signal: AbortSignal) =>
  new Promise<string>((resolve) => {
    signal.addEventListener('abort', () => {
      seen.slowAborted.push(true);
      seen.slowReason.push(String((signal.reason as Error)?.message ?? signal.reason));
      resolve('aborted');
    });
  });

const app = defineApp();

export const instance = app.defineConfig({
  flows: {
    sync: app.defineFlow({
      name: 'sync',
      description: 'Sync orders',
      input: z.object({ since: z.string() }),
      run: async (_ctx, input) => ({ since: input.since }),
    }),
    noisy: app.defineFlow({
      name: 'noisy',
      description: 'Writes a few log lines',
      input: z.object({ orders: z.number().int().default(3) }),
      run: async (ctx, input) => {
        await ctx.step('fetch', async () => {
          for (let i = 1; i <= input.orders; i++) await ctx.log.info(`order ${1000 + i} fetched`, { orderId: 1000 + i });
        });
        await ctx.log.warn('payment retry', { orderId: 1002 });
        await ctx.log.error('payment failed', { orderId: 1002 });
        await ctx.log.info('done');
        return { orders: input.orders };
      },
    }),
  },
  crons: [{ schedule: '0 * * * *', flow: 'sync', input: { since: '1h' }, shops: 'all' }],
  mcp: {
    permissions: {
      'test:read_orders': { label: 'Read test orders', riskLevel: 'low' },
      'test:write_orders': { label: 'Write test orders', riskLevel: 'high', group: 'Orders' },
      'test:export_orders': { label: 'Export test orders' },
    },
    tools: {
      'orders.count': {
        description: 'Count orders',
        requiredPermissions: ['test:read_orders'],
        inputSchema: {
          type: 'object',
          properties: {
            status: { type: 'string', enum: ['open', 'closed'] },
            min: { type: 'integer', minimum: 0, description: 'lower bound' },
          },
          additionalProperties: false,
        },
        run: (ctx, input: { status?: string }) => ({ shop: ctx.shop, status: input.status ?? 'any', count: 2 }),
      },
      'orders.echo': {
        description: 'Echo a message as text',
        requiredPermissions: [],
        inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
        run: (_ctx, input: { message: string }) => `echo: ${input.message}`,
      },
      'orders.raw': {
        description: 'Returns content and structuredContent itself',
        requiredPermissions: [],
        run: () => ({ content: [{ type: 'text', text: 'raw text' }], structuredContent: { raw: true } }),
      },
      'orders.fail': {
        description: 'Always throws',
        requiredPermissions: [],
        run: () => {
          throw new Error('the order service is down');
        },
      },
      'orders.slow': {
        description: 'Waits until aborted',
        requiredPermissions: [],
        run: (ctx) => waitForAbort(ctx.signal),
      },
      'orders.context': {
        description: 'Reports its context',
        requiredPermissions: ['test:read_orders'],
        run: async (ctx) => {
          seen.contexts.push(ctx);
          const [row] = await (ctx.db as Database).query<{ one: number }>(sql`select 1 as one`);
          return { appHandle: ctx.appHandle, shop: ctx.shop, tokenId: ctx.tokenId, permissions: [...ctx.permissions], db: row?.one === 1 };
        },
      },
      'orders.write': {
        description: 'Needs the write permission',
        requiredPermissions: ['test:read_orders', 'test:write_orders'],
        run: () => ({ written: true }),
      },
    },
    resources: {
      'orders://summary': {
        name: 'Order summary',
        description: 'A markdown summary',
        mimeType: 'text/markdown',
        requiredPermissions: ['test:read_orders'],
        read: (ctx) => `# Orders of ${ctx.shop}`,
      },
      'orders://json': {
        name: 'Orders as JSON',
        mimeType: 'text/csv',
        requiredPermissions: [],
        read: () => ({ text: '{"orders":2}', mimeType: 'application/json' }),
      },
      'orders://plain': { name: 'Plain', requiredPermissions: [], read: () => ({ text: 'plain text' }) },
      'orders://secret': { name: 'Secret', requiredPermissions: ['test:write_orders'], read: () => 'secret' },
      'orders://broken': { name: 'Broken', requiredPermissions: [], read: () => 42 as unknown as string },
      'orders://slow': { name: 'Slow', requiredPermissions: [], read: (ctx) => waitForAbort(ctx.signal) },
    },
  },
});
