/**
 * Type-level tests of public routes: the auth function's return excludes undefined/void (a forgotten `return` does not
 * compile), and `app.defineRoute` / `instance.defineRoute` type forShop's connectors by the app's providers.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineProvider } from '../../src/app/define.ts';
import { defineRoute } from '../../src/routes/types.ts';

const crm = defineProvider({
  name: 'crm',
  ui: { fields: { apiKey: { type: 'password', label: 'API key' } } },
  methods: {
    findCustomer: (_config: { apiKey: string }, email: string) => ({ id: 1, email }),
    count: async (_config: unknown) => 3,
  },
});
const app = defineApp({ providers: { crm } });
const instance = app.defineConfig({ flows: { a: app.defineFlow({ name: 'a', input: z.object({}), run: () => 1 }) } });

describe('auth return type', () => {
  it('accepts null, a Response or a value (sync or async)', () => {
    defineRoute({ auth: () => null, GET: () => new Response() });
    defineRoute({ auth: () => new Response(null, { status: 403 }), GET: () => new Response() });
    defineRoute({
      auth: async () => (Math.random() > 0.5 ? { shop: 'x' } : null),
      GET(_r, ctx) {
        expectTypeOf(ctx.auth).toEqualTypeOf<{ shop: string }>();
        return Response.json(ctx.auth.shop);
      },
    });
    defineRoute({ auth: () => false, GET: () => new Response() });
    defineRoute<{ shop: string }>({ auth: async () => ({ shop: 'x' }), GET: (_r, ctx) => Response.json(ctx.auth.shop) });
  });

  it('rejects an auth function that may return undefined or nothing', () => {
    // @ts-expect-error a forgotten return: the function returns void
    defineRoute({ auth: (request: Request) => void request.headers, GET: () => new Response() });
    defineRoute({
      // @ts-expect-error one path falls off the end (undefined)
      auth: (request: Request) => {
        if (request.headers.get('x-token') === 'ok') return { ok: true };
      },
      GET: () => new Response(),
    });
    // @ts-expect-error async, nothing returned
    defineRoute({ auth: async () => {}, GET: () => new Response() });
    // @ts-expect-error an explicit undefined
    defineRoute({ auth: () => undefined, GET: () => new Response() });
  });
});

describe('typed connectors', () => {
  it('app.defineRoute types forShop(...).providers by the app providers, without the config argument', () => {
    app.defineRoute({
      async auth(_request, { forShop }) {
        const tenant = await forShop({ shop: 'a.myshopify.com' });
        expectTypeOf(tenant.providers.crm.findCustomer).toEqualTypeOf<(email: string) => Promise<{ id: number; email: string }>>();
        return { shop: tenant.shop };
      },
      async GET(_request, ctx) {
        const tenant = await ctx.forShop({ shop: ctx.auth.shop });
        expectTypeOf(tenant.providers.crm.count).toEqualTypeOf<() => Promise<number>>();
        // @ts-expect-error the config argument is dropped
        await tenant.providers.crm.findCustomer({ apiKey: 'k' }, 'a@b.c');
        // @ts-expect-error not a provider of this app
        void tenant.providers.erp;
        return Response.json(await tenant.providers.crm.findCustomer('a@b.c'));
      },
    });
  });

  it('the configured instance offers the same typed defineRoute', () => {
    instance.defineRoute({
      auth: 'none',
      async POST(_request, ctx) {
        const tenant = await ctx.forShop({ shop: 'a.myshopify.com' });
        expectTypeOf(tenant.providers.crm.count).toEqualTypeOf<() => Promise<number>>();
        return new Response();
      },
    });
  });
});
