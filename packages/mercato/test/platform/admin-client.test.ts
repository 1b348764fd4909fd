/**
 * The Admin GraphQL client against the simulator over real HTTP: cost throttling (HTTP 200 + THROTTLED) waited out,
 * 429/5xx retried with Retry-After, abort signals, typed errors, raw mode; and ctx.admin (request, raw) in flows run by a worker,
 * whose throttle waits are lines in the run's logs and `admin.throttled` runtime events.
 */
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { type RuntimeEventOf, createRuntimeEvents } from '../../src/events.ts';
import {
  AdminClient,
  AdminGraphqlError,
  AdminHttpError,
  NotInstalledError,
  adminClientFor,
  retryAfterMs,
  throttleLogMessage,
  throttleWaitMs,
} from '../../src/platform/index.ts';
import { FAST_WORKER, OTHER_SHOP, SHOP, TEST_API_KEY, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { ENCRYPTION_KEY, SHOP_QUERY, startSim } from './helpers.ts';

const FAST_RETRY = { initialDelayMs: 20, maxDelayMs: 100 };

describe('AdminClient', () => {
  let sim: PlatformSim;
  let token: string;
  const client = (retry = {}) =>
    new AdminClient({
      shop: SHOP,
      apiVersion: '2026-10',
      platformOrigin: sim.url,
      accessToken: async () => token,
      retry: { ...FAST_RETRY, ...retry },
    });

  beforeAll(async () => {
    sim = await startSim();
    token = sim.install({ shop: SHOP }).token;
  });
  afterAll(() => sim.close());

  it('returns data and sends the access token to the configured API version', async () => {
    const data = await client().request<{ shop: { name: string; currencyCode: string } }>(SHOP_QUERY);
    expect(data.shop).toMatchObject({ name: 'Shop One', currencyCode: 'EUR' });
    expect(sim.state.graphqlCalls.at(-1)).toMatchObject({ apiVersion: '2026-10', shop: SHOP, outcome: 'ok' });
    await client().request(SHOP_QUERY, { apiVersion: '2025-07' });
    expect(sim.state.graphqlCalls.at(-1)!.apiVersion).toBe('2025-07');
  });

  it('waits out a THROTTLED answer as the cost extension says, then succeeds', async () => {
    sim.setBucket({ max: 2, restoreRate: 5 });
    try {
      const before = sim.state.throttledCount;
      const started = Date.now();
      for (let i = 0; i < 4; i++) await client().request(SHOP_QUERY);
      expect(sim.state.throttledCount).toBeGreaterThan(before);
      expect(Date.now() - started).toBeGreaterThanOrEqual(150); // at least one point had to be restored at 5/s
    } finally {
      sim.setBucket({ max: 1000, restoreRate: 50 });
    }
  });

  it('tells each THROTTLED wait to the runtime events (no run: runId and flow null), before it waits', async () => {
    const events = createRuntimeEvents();
    const seen: Array<RuntimeEventOf<'admin.throttled'>> = [];
    events.on('admin.throttled', (e) => void seen.push(e));
    const own = new AdminClient({
      shop: SHOP,
      apiVersion: '2026-10',
      platformOrigin: sim.url,
      accessToken: async () => token,
      retry: FAST_RETRY,
      app: 'default',
      events,
    });
    sim.setBucket({ max: 1, restoreRate: 5 });
    try {
      const before = sim.state.throttledCount;
      await own.request(SHOP_QUERY); // the one point of the bucket
      await own.request(SHOP_QUERY); // throttled: waits ~250 ms for a point
      expect(sim.state.throttledCount).toBeGreaterThan(before);
    } finally {
      sim.setBucket({ max: 1000, restoreRate: 50 });
    }
    expect(seen.length).toBeGreaterThanOrEqual(1);
    expect(seen[0]).toMatchObject({
      type: 'admin.throttled',
      runId: null,
      flow: null,
      shop: SHOP,
      app: 'default',
      requestedCost: 1,
      attempt: 1,
    });
    expect(seen[0]!.availableCost).toBeLessThan(1);
    expect(seen[0]!.waitMs).toBeGreaterThan(50);
    expect(seen.map((e) => e.attempt)).toEqual(seen.map((_, i) => i + 1)); // attempts of the one throttled request
  });

  it('retries 429 honouring Retry-After, and 5xx with backoff', async () => {
    sim.injectFault({ target: 'graphql', status: 429, headers: { 'retry-after': '1' } });
    const started = Date.now();
    expect((await client().request(SHOP_QUERY)).shop.myshopifyDomain).toBe(SHOP);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    sim.injectFault({ target: 'graphql', status: 503, times: 2 });
    expect((await client().request(SHOP_QUERY)).shop.myshopifyDomain).toBe(SHOP);
    sim.injectFault({ target: 'graphql', status: 502, times: 3 });
    const error = await client({ maxRetries: 2 })
      .request(SHOP_QUERY)
      .catch((e) => e);
    expect(error).toBeInstanceOf(AdminHttpError);
    expect(error.status).toBe(502);
  });

  it('turns GraphQL errors into AdminGraphqlError and other statuses into AdminHttpError, without retrying them', async () => {
    const error = await client()
      .request('{ shop { name nonsense } }')
      .catch((e) => e);
    expect(error).toBeInstanceOf(AdminGraphqlError);
    expect(error.errors[0].message).toBe("Field 'nonsense' doesn't exist on type 'Shop'");
    expect(error.codes).toEqual(['undefinedField']);
    const calls = sim.state.graphqlCalls.length;
    const bad = new AdminClient({
      shop: SHOP,
      apiVersion: '2026-10',
      platformOrigin: sim.url,
      accessToken: async () => 'shpat_revoked',
      retry: FAST_RETRY,
    });
    const denied = await bad.request(SHOP_QUERY).catch((e) => e);
    expect(denied).toBeInstanceOf(AdminHttpError);
    expect(denied.status).toBe(401);
    expect(denied.message).not.toContain('shpat_');
    expect(sim.state.graphqlCalls.length).toBe(calls + 1);
    const unknownVersion = await client()
      .request(SHOP_QUERY, { apiVersion: '1999-01' })
      .catch((e) => e);
    expect(unknownVersion).toMatchObject({ status: 404 });
  });

  it('honours the caller signal while waiting, and the client signal', async () => {
    sim.injectFault({ target: 'graphql', status: 429, headers: { 'retry-after': '30' } });
    const controller = new AbortController();
    const started = Date.now();
    const pending = client()
      .request(SHOP_QUERY, { signal: controller.signal })
      .catch((e) => e);
    setTimeout(() => controller.abort(new Error('caller gave up')), 100);
    expect(((await pending) as Error).message).toBe('caller gave up');
    expect(Date.now() - started).toBeLessThan(5000);
    const runSignal = AbortSignal.abort(new Error('run canceled'));
    const own = new AdminClient({
      shop: SHOP,
      apiVersion: '2026-10',
      platformOrigin: sim.url,
      accessToken: async () => token,
      signal: runSignal,
    });
    await expect(own.request(SHOP_QUERY)).rejects.toThrow('run canceled');
  });

  it('raw mode returns the status and the payload untouched (THROTTLED included), without retrying', async () => {
    const ok = await client().raw(SHOP_QUERY);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ data: { shop: { myshopifyDomain: SHOP } }, extensions: { cost: { requestedQueryCost: 1 } } });
    const errors = await client().raw('{ nope }');
    expect(errors).toMatchObject({ status: 200, body: { errors: [{ extensions: { code: 'undefinedField' } }] } });
    sim.setBucket({ max: 1, restoreRate: 0.5 });
    try {
      await client().raw(SHOP_QUERY);
      const throttled = await client().raw(SHOP_QUERY);
      expect(throttled).toMatchObject({ status: 200, body: { errors: [{ message: 'Throttled', extensions: { code: 'THROTTLED' } }] } });
    } finally {
      sim.setBucket({ max: 1000, restoreRate: 50 });
    }
    sim.injectFault({ target: 'graphql', status: 503 });
    expect((await client().raw(SHOP_QUERY)).status).toBe(503);
  });

  it('computes waits from the cost extension and Retry-After', () => {
    expect(
      throttleWaitMs({
        requestedQueryCost: 100,
        actualQueryCost: null,
        throttleStatus: { maximumAvailable: 1000, currentlyAvailable: 50, restoreRate: 50 },
      }),
    ).toBe(1050);
    expect(throttleWaitMs(undefined)).toBeUndefined();
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs(new Date(Date.now() + 3000).toUTCString())).toBeGreaterThan(1000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(throttleLogMessage({ waitMs: 1234, requestedCost: 120, availableCost: 30 })).toBe(
      "Admin GraphQL throttled: waiting 1.2 s for the shop's query cost budget (requested 120, available 30)",
    );
    expect(throttleLogMessage({ waitMs: 500, requestedCost: null, availableCost: null })).toBe(
      "Admin GraphQL throttled: waiting 0.5 s for the shop's query cost budget",
    );
  });
});

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    shopInfo: app.defineFlow({
      name: 'shopInfo',
      input: z.object({ calls: z.number().int().positive().default(1) }),
      async run(ctx, input) {
        // a burst of concurrent calls: more than the bucket holds, whatever the speed of the database
        const results = await ctx.step('burst', () =>
          Promise.all(Array.from({ length: input.calls }, () => ctx.admin.request(SHOP_QUERY, { signal: ctx.signal }))),
        );
        return results.at(-1).shop;
      },
    }),
    rawShop: app.defineFlow({
      name: 'rawShop',
      input: z.object({}),
      async run(ctx) {
        // two operations in one document: operationName picks one; raw() answers the platform's payload as it is
        const document = `query First { shop { id } } query Second { shop { name } } `;
        return ctx.step('raw', () => ctx.admin.raw(document, { operationName: 'Second', signal: ctx.signal }));
      },
    }),
  },
  worker: FAST_WORKER,
  retryPolicy: { maxAttempts: 1 },
});

describeEngines('ctx.admin in flows', (get) => {
  let sim: PlatformSim;
  let t: TestRuntime;

  beforeAll(async () => {
    sim = await startSim({ bucket: { max: 2, restoreRate: 10 } });
    t = await startTestRuntime(instance, get().db, { http: true, worker: true, env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY } });
  });
  afterAll(async () => {
    await t?.close();
    await sim?.close();
  });

  it('a flow of an installed shop uses the offline token, hits the throttle and still succeeds after waiting', async () => {
    expect((await t.api('/api/pages')).status).toBe(200); // installs SHOP by token exchange
    const throttledBefore = sim.state.throttledCount;
    const res = await t.api('/api/flows/shopInfo/run', { method: 'POST', json: { input: { calls: 5 } } });
    const { runId } = (await res.json()) as { runId: string };
    const run = await waitForRun(get().db, runId, undefined, 15_000);
    expect(run.status).toBe('completed');
    expect(run.output).toMatchObject({ name: 'Shop One', myshopifyDomain: SHOP, currencyCode: 'EUR' });
    expect(sim.state.throttledCount).toBeGreaterThan(throttledBefore);
    expect(sim.state.graphqlCalls.filter((c) => c.shop === SHOP && c.outcome === 'ok').length).toBeGreaterThanOrEqual(5);
  });

  it("a flow's throttle waits are warn lines in the run's logs (admin API) and admin.throttled events naming the run", async () => {
    expect((await t.api('/api/pages')).status).toBe(200); // SHOP installed (idempotent)
    // start with a full bucket (2 points at 10/s): 5 concurrent calls, so at least 3 are throttled
    const bucket = sim.state.bucket(TEST_API_KEY, SHOP);
    while (bucket.status().currentlyAvailable < bucket.config.max) await new Promise((resolve) => setTimeout(resolve, 50));
    const seen: Array<RuntimeEventOf<'admin.throttled'>> = [];
    const off = t.runtime.events.on('admin.throttled', (e) => void seen.push(e));
    try {
      const res = await t.api('/api/flows/shopInfo/run', { method: 'POST', json: { input: { calls: 5 } } });
      const { runId } = (await res.json()) as { runId: string };
      const run = await waitForRun(get().db, runId, undefined, 15_000);
      expect(run.status).toBe('completed');

      const mine = seen.filter((e) => e.runId === runId);
      expect(mine.length).toBeGreaterThanOrEqual(3);
      for (const e of mine) {
        expect(e).toMatchObject({ type: 'admin.throttled', runId, flow: 'shopInfo', shop: SHOP, app: 'default', requestedCost: 1 });
        expect(e.availableCost).toBeLessThan(1);
        expect(e.waitMs).toBeGreaterThan(0);
        expect(e.attempt).toBeGreaterThanOrEqual(1);
      }

      const logsRes = await t.api(`/api/runs/${runId}/logs?levels=warn&limit=200`);
      expect(logsRes.status).toBe(200);
      const { logs } = (await logsRes.json()) as {
        logs: Array<{ level: string; message: string; data: Record<string, unknown> | null; step: string | null; attempt: number }>;
      };
      const throttled = logs.filter((l) => l.message.startsWith('Admin GraphQL throttled: waiting '));
      expect(throttled).toHaveLength(mine.length);
      for (const line of throttled) {
        expect(line).toMatchObject({
          level: 'warn',
          step: 'burst',
          attempt: 1,
          data: { waitMs: expect.any(Number), requestedCost: 1, availableCost: expect.any(Number), attempt: expect.any(Number) },
        });
        expect(line.message).toMatch(
          /^Admin GraphQL throttled: waiting \d+\.\d s for the shop's query cost budget \(requested 1, available [\d.]+\)$/,
        );
      }
      expect(throttled.map((l) => l.data!.waitMs as number).sort((a, b) => a - b)).toEqual(mine.map((e) => e.waitMs).sort((a, b) => a - b));
    } finally {
      off();
    }
  });

  it('ctx.admin.raw in a flow sends once with the operation name and returns the status and body as answered', async () => {
    // raw() answers THROTTLED untouched: start only once the burst of the test before has been restored (2 points at 10/s)
    const bucket = sim.state.bucket(TEST_API_KEY, SHOP);
    while (bucket.status().currentlyAvailable < bucket.config.max) await new Promise((resolve) => setTimeout(resolve, 50));
    const calls = sim.state.graphqlCalls.length;
    const { runId } = await t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName: 'rawShop', input: {}, trigger: 'dispatch' });
    const run = await waitForRun(get().db, runId, undefined, 15_000);
    expect(run).toMatchObject({ status: 'completed', output: { status: 200, body: { data: { shop: { name: 'Shop One' } } } } });
    expect(run.output.body.data.shop).not.toHaveProperty('id');
    expect(sim.state.graphqlCalls.slice(calls)).toEqual([expect.objectContaining({ shop: SHOP, operationName: 'Second', outcome: 'ok' })]);
  });

  it('a shop without installation fails the run with NotInstalledError', async () => {
    const { runId } = await t.runtime.dispatch({
      appHandle: 'default',
      shop: OTHER_SHOP,
      flowName: 'shopInfo',
      input: {},
      trigger: 'dispatch',
    });
    const run = await waitForRun(get().db, runId);
    expect(run).toMatchObject({ status: 'failed', error: { name: 'NotInstalledError' } });
    const client = adminClientFor(
      { db: get().db, secrets: t.runtime.secrets, platform: t.runtime.platform, platformOrigin: sim.url },
      'default',
      OTHER_SHOP,
    );
    await expect(client.request(SHOP_QUERY)).rejects.toBeInstanceOf(NotInstalledError);
  });
});
