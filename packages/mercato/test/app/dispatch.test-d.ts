/**
 * Type-level tests of the configuration contract: typed `dispatchFlow`, cron inputs typed by their flow, and
 * `app.defineFlow` giving typed provider connectors. Checked by `vitest` typecheck (and by `tsc`).
 */
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineApp, type MercatoInstance } from '../../src/app/app.ts';
import { defineCron, defineFlow, defineProvider } from '../../src/app/define.ts';
import type { DispatchResult } from '../../src/app/types.ts';

const crm = defineProvider({
  name: 'crm',
  ui: { fields: { apiKey: { type: 'password', label: 'API key' }, retries: { type: 'number', label: 'Retries' } } },
  methods: {
    findCustomer: (_config: { apiKey: string }, email: string) => ({ id: 1, email }),
    count: async (_config: unknown) => 3,
  },
});

const app = defineApp({ providers: { crm } });

const a = defineFlow({ name: 'a', input: z.object({ n: z.number() }), run: (_ctx, input) => input.n * 2 });
const b = app.defineFlow({
  name: 'b',
  input: z.object({ label: z.string(), tags: z.array(z.string()).default([]) }),
  async run(ctx, input) {
    expectTypeOf(input).toEqualTypeOf<{ label: string; tags: string[] }>();
    return ctx.providers.crm.findCustomer(input.label);
  },
});

const instance = app.defineConfig({
  flows: { a, b },
  crons: [
    { schedule: '0 * * * *', flow: 'a', input: { n: 1 } },
    { schedule: '0 * * * *', flow: 'b', input: { label: 'x' }, shops: 'all' },
  ],
});

describe('dispatchFlow typing', () => {
  it('accepts a registered flow with its input', () => {
    expectTypeOf(instance.dispatchFlow({ flowName: 'a', input: { n: 1 } })).toEqualTypeOf<Promise<DispatchResult>>();
    instance.dispatchFlow({ flowName: 'b', input: { label: 'x' }, shop: 'demo.myshopify.com', shopifyApp: 'main' });
    instance.dispatchFlow({ flowName: 'b', input: { label: 'x', tags: ['t'] }, shop: null, retryPolicy: { maxAttempts: 2 } });
  });

  it('rejects an unknown flow name', () => {
    // @ts-expect-error 'c' is not a registered flow key
    instance.dispatchFlow({ flowName: 'c', input: { n: 1 } });
    // @ts-expect-error flow names are exact keys (no typo tolerance)
    instance.dispatchFlow({ flowName: 'A', input: { n: 1 } });
  });

  it('rejects an input of the wrong type for the selected flow', () => {
    // @ts-expect-error n must be a number
    instance.dispatchFlow({ flowName: 'a', input: { n: '1' } });
    // @ts-expect-error flow a's input has no `label` and needs `n`
    instance.dispatchFlow({ flowName: 'a', input: { label: 'x' } });
    // @ts-expect-error flow b needs `label`
    instance.dispatchFlow({ flowName: 'b', input: { n: 1 } });
  });

  it('result has runId: string and status: "pending"', async () => {
    const result = await instance.dispatchFlow({ flowName: 'a', input: { n: 1 } });
    expectTypeOf(result.runId).toEqualTypeOf<string>();
    expectTypeOf(result.status).toEqualTypeOf<'pending'>();
  });

  it('the instance type carries the flows map', () => {
    expectTypeOf(instance).toExtend<MercatoInstance<{ a: typeof a; b: typeof b }, any>>();
    expectTypeOf(instance.config.flows.a.name).toEqualTypeOf<'a'>();
  });
});

describe('cron entries typing', () => {
  it('types input by the selected flow', () => {
    app.defineConfig({
      flows: { a, b },
      // @ts-expect-error flow a takes { n: number }
      crons: [{ schedule: '0 * * * *', flow: 'a', input: { n: 'one' } }],
    });
    app.defineConfig({
      flows: { a, b },
      // @ts-expect-error 'c' is not a registered flow
      crons: [{ schedule: '0 * * * *', flow: 'c' }],
    });
    app.defineConfig({
      flows: { a, b },
      // @ts-expect-error flow b's input is not flow a's
      crons: [{ schedule: '0 * * * *', flow: 'b', input: { n: 1 } }],
    });
  });

  it('defineCron types input by the flows map it is given', () => {
    defineCron({ a, b }, { schedule: '@daily', flow: 'b', input: { label: 'x' } });
    // @ts-expect-error label must be a string
    defineCron({ a, b }, { schedule: '@daily', flow: 'b', input: { label: 1 } });
  });
});

describe('app.defineFlow typing', () => {
  it('gives typed ctx.providers.<name>.<method> without the config argument', () => {
    app.defineFlow({
      name: 'c',
      input: z.object({}),
      async run(ctx) {
        expectTypeOf(ctx.providers.crm.findCustomer).parameters.toEqualTypeOf<[email: string]>();
        expectTypeOf(ctx.providers.crm.findCustomer).returns.toEqualTypeOf<Promise<{ id: number; email: string }>>();
        expectTypeOf(ctx.providers.crm.count).toEqualTypeOf<() => Promise<number>>();
        // @ts-expect-error the config argument is supplied by the runtime
        await ctx.providers.crm.findCustomer({ apiKey: 'k' }, 'x@example.com');
        // @ts-expect-error unknown provider
        void ctx.providers.stripe;
        // @ts-expect-error unknown method
        void ctx.providers.crm.deleteCustomer;
        return null;
      },
    });
  });

  it('keeps the flow name literal and the input typed', () => {
    const flow = app.defineFlow({ name: 'typed', input: z.object({ n: z.number().default(1) }), run: (_ctx, input) => input.n });
    expectTypeOf(flow.name).toEqualTypeOf<'typed'>();
    expectTypeOf(flow.run).parameter(1).toEqualTypeOf<{ n: number }>();
  });
});
