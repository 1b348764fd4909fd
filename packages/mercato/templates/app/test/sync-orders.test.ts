/** `npm test`: Node's test runner, with tsx to load TypeScript. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FlowContext } from 'mercato';
import { syncOrders } from '../flows/sync-orders.ts';
import service from '../service.config.ts';

test('the input schema fills in the defaults', () => {
  assert.deepEqual(syncOrders.input.parse({}), { since: '1d', largeOrderTotal: 100 });
});

test('the input schema rejects what the flow cannot use', () => {
  assert.equal(syncOrders.input.safeParse({ since: 'yesterday' }).success, false);
  assert.equal(syncOrders.input.safeParse({ largeOrderTotal: -1 }).success, false);
});

test('the flow runs its two steps and returns the summary', async () => {
  const steps: string[] = [];
  // A stand-in for the context the worker provides: each step simply runs once.
  const ctx = {
    shop: 'demo-1.myshopify.com',
    log: { info: async () => {}, warn: async () => {}, error: async () => {} },
    step: async (name: string, fn: (options: { signal: AbortSignal; attempt: number }) => unknown) => {
      steps.push(name);
      return fn({ signal: new AbortController().signal, attempt: 1 });
    },
  } as unknown as FlowContext;
  const output = await syncOrders.run(ctx, syncOrders.input.parse({ largeOrderTotal: 100 }));
  assert.deepEqual(steps, ['fetch', 'summarise']);
  assert.deepEqual(output, { orders: 2, large: 1, total: 222 });
});

test('service.config.ts registers the flow, its cron and the webhook', () => {
  assert.deepEqual(Object.keys(service.config.flows), ['syncOrders']);
  assert.deepEqual(service.config.crons.map((c) => c.flow), ['syncOrders']);
  assert.deepEqual(Object.keys(service.config.webhooks), ['orders/create']);
});
