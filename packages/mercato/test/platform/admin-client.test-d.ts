/**
 * Type-level tests of `ctx.admin`: a flow (and a webhook handler) can call `request` and `raw`, both with
 * `operationName`, and the platform's AdminClient fits the interface. Checked by `vitest` typecheck (and by `tsc`).
 */
import { expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineWebhook } from '../../src/app/define.ts';
import type { AdminGraphqlClient, AdminRawResponse, AdminRequestOptions } from '../../src/app/types.ts';
import { AdminClient, type RawResponse, type RequestOptions } from '../../src/platform/index.ts';

const app = defineApp();

it('ctx.admin offers request and raw with operationName', () => {
  app.defineFlow({
    name: 'shopName',
    input: z.object({}),
    async run(ctx) {
      const data = await ctx.admin.request<{ shop: { name: string } }>('query A { shop { name } }', {
        operationName: 'A',
        signal: ctx.signal,
      });
      expectTypeOf(data).toEqualTypeOf<{ shop: { name: string } }>();
      const raw = await ctx.admin.raw('query A { shop { name } }', { operationName: 'A', variables: {}, apiVersion: '2026-10' });
      expectTypeOf(raw).toEqualTypeOf<AdminRawResponse>();
      expectTypeOf(raw.status).toEqualTypeOf<number>();
      expectTypeOf(raw.body).toBeUnknown();
      // @ts-expect-error operationName is a string
      await ctx.admin.raw('{ shop { name } }', { operationName: 1 });
      return data.shop.name;
    },
  });
  defineWebhook({
    topic: 'orders/create',
    async handler(ctx) {
      expectTypeOf(ctx.admin.raw).toEqualTypeOf<AdminGraphqlClient['raw']>();
    },
  });
});

it('AdminClient implements the interface with the same option and answer types', () => {
  expectTypeOf<AdminClient>().toExtend<AdminGraphqlClient>();
  expectTypeOf<RequestOptions>().toEqualTypeOf<AdminRequestOptions>();
  expectTypeOf<RawResponse>().toEqualTypeOf<AdminRawResponse>();
  expectTypeOf<AdminRequestOptions>().toHaveProperty('operationName').toEqualTypeOf<string | undefined>();
});
