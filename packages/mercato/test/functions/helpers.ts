/** Shared set-up of the functions tests: an app with a definition of every type, the simulator with its functions deployed. */
import { type PlatformSim, start } from 'platform-sim';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineFunction } from '../../src/app/define.ts';
import type { PagesConfig } from '../../src/app/types.ts';
import type { Database } from '../../src/db/engine.ts';
import { OTHER_SHOP, SHOP, TEST_API_KEY, TEST_API_SECRET, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';

export const FUNCTIONS = {
  volume: defineFunction({
    type: 'discount',
    handle: 'volume',
    title: 'Volume discount',
    discountModes: ['automatic', 'code'],
    fields: {
      percent: { type: 'number', label: 'Percent off', validate: z.number().min(1, 'must be at least 1').max(100, 'must be at most 100') },
      note: { type: 'text', label: 'Note', required: false },
    },
  }),
  welcome: defineFunction({
    type: 'discount',
    handle: 'welcome',
    discountModes: ['code'],
    fields: { percent: { type: 'number', label: 'Percent off' } },
  }),
  autoOnly: defineFunction({ type: 'discount', handle: 'auto-only', fields: {} }),
  bundler: defineFunction({ type: 'cart_transform', handle: 'bundler', fields: { size: { type: 'number', label: 'Bundle size' } } }),
  hideShipping: defineFunction({
    type: 'delivery_customization',
    handle: 'hide-shipping',
    fields: { keyword: { type: 'text', label: 'Hide options containing' } },
  }),
  hidePayment: defineFunction({
    type: 'payment_customization',
    handle: 'hide-payment',
    fields: {
      method: {
        type: 'select',
        label: 'Method',
        options: [
          { label: 'Cash on delivery', value: 'cod' },
          { label: 'Bank transfer', value: 'bank' },
        ],
      },
    },
  }),
  minQty: defineFunction({
    type: 'checkout_validation',
    handle: 'min-qty',
    title: 'Minimum quantity',
    fields: { min: { type: 'number', label: 'Minimum' }, strict: { type: 'checkbox', label: 'Strict', required: false } },
  }),
  sameLocation: defineFunction({
    type: 'fulfillment_constraint',
    handle: 'same-location',
    fields: { tag: { type: 'text', label: 'Product tag' } },
  }),
  routing: defineFunction({ type: 'order_routing_location_rule', handle: 'nearest', fields: {} }),
  private: defineFunction({ type: 'cart_transform', handle: 'private', fields: {}, authorize: ({ shop }) => shop !== OTHER_SHOP }),
  notDeployed: defineFunction({ type: 'delivery_customization', handle: 'not-deployed', fields: {} }),
};

/** What the simulator has deployed for the test app (every handle but `not-deployed`). */
export const DEPLOYED = [
  { handle: 'volume', apiType: 'discount' },
  { handle: 'welcome', apiType: 'discount' },
  { handle: 'auto-only', apiType: 'discount' },
  { handle: 'bundler', apiType: 'cart_transform' },
  { handle: 'hide-shipping', apiType: 'delivery_customization' },
  { handle: 'hide-payment', apiType: 'payment_customization' },
  { handle: 'min-qty', apiType: 'cart_checkout_validation' },
  { handle: 'same-location', apiType: 'fulfillment_constraints' },
  { handle: 'nearest', apiType: 'order_routing_location_rule' },
  { handle: 'private', apiType: 'cart_transform' },
] as const;

export function functionsInstance(pages?: PagesConfig) {
  const app = defineApp();
  return app.defineConfig({
    flows: { noop: app.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) },
    functions: FUNCTIONS,
    ...(pages ? { pages } : {}),
  });
}

export function startFunctionsSim(bucket?: { max: number; restoreRate: number }): Promise<PlatformSim> {
  return start({
    apps: [{ apiKey: TEST_API_KEY, apiSecret: TEST_API_SECRET, functions: [...DEPLOYED] }],
    shops: [SHOP, OTHER_SHOP],
    bucket: bucket ?? { max: 100_000, restoreRate: 100_000 },
  });
}

export async function startFunctionsRuntime(db: Database, sim: PlatformSim, pages?: PagesConfig): Promise<TestRuntime> {
  return startTestRuntime(functionsInstance(pages), db, { http: true, env: { PLATFORM_ORIGIN: sim.url } });
}

/** `/api/functions/<handle>/instances[/<id>]`, the id URL-encoded. */
export const instancesPath = (handle: string, id?: string) =>
  `/api/functions/${handle}/instances${id === undefined ? '' : `/${encodeURIComponent(id)}`}`;
