/**
 * The Admin GraphQL schema subset the simulator serves: the `shop` query now. Later capabilities add types and
 * root fields with `extendSchema` (function instances, discounts, metafields, ...).
 */
import type { Schema, TypeDef } from './graphql/execute.ts';
import type { SimApp, SimShop, SimState } from './state.ts';

/** What resolvers receive as their context. */
export interface AdminContext {
  state: SimState;
  app: SimApp;
  shop: SimShop;
  apiVersion: string;
}

const CURRENCY_CODES = ['USD', 'EUR', 'GBP', 'CAD', 'AUD', 'JPY', 'CHF', 'SEK', 'DKK', 'NOK', 'NZD', 'MXN', 'BRL', 'INR', 'PLN', 'CZK'];

export function createAdminSchema(): Schema {
  return {
    query: 'QueryRoot',
    types: {
      QueryRoot: {
        kind: 'object',
        fields: {
          shop: { type: 'Shop!', description: 'The shop of the access token.', resolve: (_root, _args, ctx: AdminContext) => ctx.shop },
        },
      },
      Shop: {
        kind: 'object',
        fields: {
          id: { type: 'ID!', resolve: (shop: SimShop) => shop.gid },
          name: { type: 'String!' },
          email: { type: 'String!' },
          myshopifyDomain: { type: 'String!', resolve: (shop: SimShop) => shop.domain },
          currencyCode: { type: 'CurrencyCode!' },
          url: { type: 'URL!', resolve: (shop: SimShop) => `https://${shop.domain}` },
        },
      },
      CurrencyCode: { kind: 'enum', values: CURRENCY_CODES },
      URL: { kind: 'scalar' },
      DateTime: { kind: 'scalar' },
      JSON: { kind: 'scalar' },
    },
  };
}

/**
 * Adds types and fields: `types` are merged by name (fields of an existing object type are merged), and `mutation`
 * names the mutation root type when one is added.
 */
export function extendSchema(schema: Schema, extension: { types: Record<string, TypeDef>; mutation?: string }): Schema {
  for (const [name, def] of Object.entries(extension.types)) {
    const existing = schema.types[name];
    if (existing && existing.kind === 'object' && def.kind === 'object') existing.fields = { ...existing.fields, ...def.fields };
    else schema.types[name] = def;
  }
  if (extension.mutation) schema.mutation = extension.mutation;
  return schema;
}
