/** Type-level tests of custom pages: `run`'s input typed by its schema, and `app.defineCustomPage` typing the connectors. */
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineCustomPage, defineProvider } from '../../src/app/define.ts';
import type { DispatchResult } from '../../src/app/types.ts';

const crm = defineProvider({
  name: 'crm',
  ui: { fields: { apiKey: { type: 'password', label: 'API key' } } },
  methods: { findCustomer: (_config: { apiKey: string }, email: string) => ({ id: 1, email }) },
});
const app = defineApp({ providers: { crm } });

describe('custom pages: types', () => {
  it('gives run the output type of its input schema, and undefined without one', () => {
    defineCustomPage({
      title: 'Report',
      loaders: {
        summary: {
          input: z.object({ days: z.number().default(7), region: z.enum(['eu', 'us']).optional() }),
          run: (_ctx, input) => {
            expectTypeOf(input).toEqualTypeOf<{ days: number; region?: 'eu' | 'us' | undefined }>();
            return input.days;
          },
        },
        bare: {
          run: (_ctx, input) => {
            expectTypeOf(input).toEqualTypeOf<undefined>();
          },
        },
      },
      actions: {
        rename: {
          input: z.object({ name: z.string() }),
          run: async (ctx, input) => {
            expectTypeOf(input.name).toEqualTypeOf<string>();
            expectTypeOf(ctx.shop).toEqualTypeOf<string>();
            expectTypeOf(ctx.dispatchFlow({ flowName: 'x' })).toEqualTypeOf<Promise<DispatchResult>>();
            // @ts-expect-error not a field of the input
            return input.other;
          },
        },
      },
    });
  });

  it('refuses an input that is not a schema', () => {
    // @ts-expect-error not a schema
    defineCustomPage({ title: 'x', loaders: { a: { input: 5, run: () => 1 } } });
  });

  it('app.defineCustomPage types ctx.providers by the app providers', () => {
    app.defineCustomPage({
      title: 'CRM',
      authorize: async (ctx) => {
        expectTypeOf(ctx.providers.crm.findCustomer).toEqualTypeOf<(email: string) => Promise<{ id: number; email: string }>>();
        return true;
      },
    });
  });
});
