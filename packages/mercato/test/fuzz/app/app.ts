/**
 * The app the fuzz suite serves: a provider with a secret field, flows with a loose and a strict input, a webhook
 * handler, a cron, an MCP tool, a custom page, and the public routes of ./routes (each one written the way
 * docs/routes.md asks: bad input answered 4xx by the route itself).
 */
import { z } from 'zod';
import { defineApp } from '../../../src/app/app.ts';
import { defineProvider, defineWebhook } from '../../../src/app/define.ts';

export const vault = defineProvider({
  name: 'vault',
  ui: { fields: { password: { type: 'password', label: 'Password' }, region: { type: 'text', label: 'Region' } } },
  methods: { ping: (config: { password?: string }) => (config.password ?? '').length },
  checker: ({ config }) => typeof config.password === 'string' && config.password.length > 0,
});

export const app = defineApp({ providers: { vault } });

const report = app.defineCustomPage({
  title: 'Report',
  loaders: {
    summary: {
      input: z.object({ days: z.number().int().min(1).max(90).default(7) }),
      run: (ctx, input) => ({ shop: ctx.shop, days: input.days }),
    },
    raw: { run: (_ctx, input) => ({ received: typeof input }) },
  },
  actions: {
    rerun: {
      input: z.object({ n: z.number().int().min(0).max(1000) }),
      run: (ctx, input) => ctx.dispatchFlow({ flowName: 'typed', input: { n: input.n } }),
    },
  },
});

export const instance = app.defineConfig({
  flows: {
    // any object: its value is stored, replayed as a step result and logged (keys only)
    echo: app.defineFlow({
      name: 'echo',
      description: 'Echoes its input',
      input: z.record(z.string(), z.unknown()),
      concurrency: null,
      run: async (ctx, input) => {
        const out = await ctx.step('echo', () => input);
        await ctx.log.info('echoed', { keys: Object.keys(input).slice(0, 5) });
        return out;
      },
    }),
    typed: app.defineFlow({
      name: 'typed',
      input: z.object({ n: z.number().int().min(0).max(1000), tag: z.string().max(50).optional() }),
      concurrency: null,
      run: (_ctx, input) => ({ n: input.n }),
    }),
  },
  webhooks: {
    'orders/create': defineWebhook({
      topic: 'orders/create',
      async handler(ctx, payload: unknown) {
        await ctx.step('seen', () => ({ type: Array.isArray(payload) ? 'array' : typeof payload }));
      },
    }),
  },
  crons: [{ schedule: '0 0 1 1 *', flow: 'typed', input: { n: 1 }, shops: 'all' }],
  mcp: {
    tools: {
      'fuzz.echo': {
        description: 'Echoes a message',
        requiredPermissions: [],
        inputSchema: {
          type: 'object',
          properties: { message: { type: 'string' }, count: { type: 'integer', minimum: 0, maximum: 10 } },
          required: ['message'],
        },
        run: (_ctx, input: { message: string; count?: number }) => ({ message: input.message, count: input.count ?? 1 }),
      },
    },
  },
  experimental: { customPages: true, pages: { report } },
  worker: { pollIntervalMs: 50, pollMaxIntervalMs: 500, concurrency: 4 },
  retryPolicy: { maxAttempts: 1 },
});
