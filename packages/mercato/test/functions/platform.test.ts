/** Functions against the platform: throttled like every Admin GraphQL call, and deployed in `mercato dev` by attach(). */
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { DEV_SHOPS } from '../../src/dev/preview.ts';
import { startDevPlatform } from '../../src/dev/simulator.ts';
import { TEST_API_KEY, TEST_API_SECRET, type TestRuntime } from '../helpers/runtime.ts';
import { FUNCTIONS, instancesPath, startFunctionsRuntime, startFunctionsSim } from './helpers.ts';
import { json } from '../kit/index.ts';

describeEngines('functions: throttling', (get) => {
  let sim: PlatformSim;
  let t: TestRuntime;

  beforeAll(async () => {
    // a listing requests 152 points (50 × its selection) but costs a few: the bucket holds barely one, refilling slowly
    sim = await startFunctionsSim({ max: 160, restoreRate: 20 });
    t = await startFunctionsRuntime(get().db, sim);
  });
  afterAll(async () => {
    await t?.close();
    await sim?.close();
  });

  it('waits out THROTTLED answers: concurrent listings all succeed', async () => {
    expect((await t.api(instancesPath('bundler'), { method: 'POST', json: { config: { size: 2 } } })).status).toBe(201);
    const before = sim.state.throttledCount;
    const responses = await Promise.all(Array.from({ length: 4 }, () => t.api(instancesPath('bundler'))));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    for (const r of responses) expect((await json(r)).body.instances).toEqual([expect.objectContaining({ config: { size: 2 } })]);
    expect(sim.state.throttledCount).toBeGreaterThan(before);
    expect(sim.state.graphqlCalls.filter((c) => c.outcome === 'throttled').length).toBeGreaterThan(0);
  });
});

describeEngines('functions: mercato dev', (get) => {
  let t: TestRuntime | undefined;
  const env: NodeJS.ProcessEnv = {};
  let dev: Awaited<ReturnType<typeof startDevPlatform>>;

  beforeAll(async () => {
    dev = await startDevPlatform(env);
  });
  afterAll(async () => {
    await t?.close();
    await dev?.close();
  });

  it('deploys the config’s function handles on the simulator, so instances can be managed at once', async () => {
    const app = { handle: 'default', apiKey: TEST_API_KEY, apiSecret: TEST_API_SECRET, appUrl: null };
    dev!.attach({ apps: [app], scopes: null }, 'http://127.0.0.1:9', FUNCTIONS);
    const { functions } = (await (await fetch(`${dev!.url}/__sim/functions`)).json()) as {
      functions: Array<{ handle: string; apiType: string; apiKey: string }>;
    };
    expect(functions.map((f) => [f.handle, f.apiType])).toEqual([
      ['volume', 'discount'],
      ['welcome', 'discount'],
      ['auto-only', 'discount'],
      ['bundler', 'cart_transform'],
      ['hide-shipping', 'delivery_customization'],
      ['hide-payment', 'payment_customization'],
      ['min-qty', 'cart_checkout_validation'],
      ['same-location', 'fulfillment_constraints'],
      ['nearest', 'order_routing_location_rule'],
      ['private', 'cart_transform'],
      ['not-deployed', 'delivery_customization'],
    ]);
    expect(new Set(functions.map((f) => f.apiKey))).toEqual(new Set([TEST_API_KEY]));
    t = await startFunctionsRuntime(get().db, { url: env.PLATFORM_ORIGIN } as PlatformSim);
    const shop = DEV_SHOPS[0];
    const created = await t.api(instancesPath('not-deployed'), { method: 'POST', json: { title: 'Works in dev', config: {} }, shop });
    expect(created.status).toBe(201);
    expect((await json(await t.api(instancesPath('not-deployed'), { shop }))).body.instances).toHaveLength(1);
  });
});
