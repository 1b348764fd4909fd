/**
 * Webhooks from the simulator over real HTTP: raw-body HMAC, 401 on a bad signature, durable runs (trigger webhook),
 * dedupe of redeliveries, retries of a failing handler, unknown topics, uninstall and reinstall, shop redact.
 */
import { createHmac } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineWebhook } from '../../src/app/define.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { verifyWebhookHmac } from '../../src/platform/index.ts';
import {
  FAST_WORKER,
  OTHER_SHOP,
  SHOP,
  TEST_API_KEY,
  TEST_API_SECRET,
  type TestRuntime,
  startTestRuntime,
  waitForRun,
} from '../helpers/runtime.ts';
import { ENCRYPTION_KEY, SHOP_QUERY, installationRow, startSim } from './helpers.ts';
import { capturingLogger, eventually } from '../kit/index.ts';

const seen: Array<{ topic: string; shop: string; payload: any; webhookId: string; shopName?: string }> = [];
let productFailures = 0;

const app = defineApp();
const instance = app.defineConfig({
  flows: { noop: app.defineFlow({ name: 'noop', input: z.object({}), run: () => 'ok' }) },
  webhooks: {
    'orders/create': defineWebhook({
      topic: 'orders/create',
      async handler(ctx, payload: { id: number }) {
        // background work with the shop's offline token
        const data = await ctx.step('shop', () => ctx.admin.request(SHOP_QUERY, { signal: ctx.signal }));
        seen.push({ topic: ctx.topic, shop: ctx.shop, payload, webhookId: ctx.webhookId, shopName: data.shop.name });
        await ctx.log.info('order created', { orderId: payload.id });
      },
    }),
    'products/update': defineWebhook({
      topic: 'products/update',
      async handler(ctx, payload) {
        if (productFailures > 0) {
          productFailures--;
          throw new Error('product handler failed');
        }
        seen.push({ topic: ctx.topic, shop: ctx.shop, payload, webhookId: ctx.webhookId });
      },
    }),
    'shop/redact': defineWebhook({
      topic: 'shop/redact',
      async handler(ctx, payload) {
        seen.push({ topic: ctx.topic, shop: ctx.shop, payload, webhookId: ctx.webhookId });
      },
    }),
  },
  worker: FAST_WORKER,
  retryPolicy: { maxAttempts: 3, initialIntervalMs: 20, backoffCoefficient: 1, maxIntervalMs: 50 },
});

it('in multi-app mode the secret that signed the raw bytes selects the app', () => {
  const apps = [
    { handle: 'one', apiKey: 'k1', apiSecret: 's1', appUrl: null },
    { handle: 'two', apiKey: 'k2', apiSecret: 's2', appUrl: null },
  ];
  const body = Buffer.from('{"id":1}');
  const sign = (secret: string) => createHmac('sha256', secret).update(body).digest('base64');
  expect(verifyWebhookHmac(apps, body, sign('s2'))?.handle).toBe('two');
  expect(verifyWebhookHmac(apps, body, sign('s1'))?.handle).toBe('one');
  expect(verifyWebhookHmac(apps, body, sign('s3'))).toBeUndefined();
  expect(verifyWebhookHmac(apps, body, undefined)).toBeUndefined();
  expect(verifyWebhookHmac(apps, body, 'not base64!')).toBeUndefined();
});

describeEngines('webhooks', (get) => {
  let sim: PlatformSim;
  let t: TestRuntime;
  let logs: Array<Record<string, any>>;
  const runs = (where = sql`true`) =>
    get().db.query<{ id: string; flow_name: string; trigger: string; shop: string; status: string; attempt: number }>(
      sql`select id, flow_name, trigger, shop, status, attempt - attempt_base as attempt from runs where ${where} order by created_at`,
    );
  const post = (headers: Record<string, string>, body: string) => fetch(`${t.url}/webhooks`, { method: 'POST', headers, body });

  beforeAll(async () => {
    sim = await startSim();
    const captured = capturingLogger('info');
    logs = captured.lines;
    t = await startTestRuntime(instance, get().db, {
      http: true,
      worker: true,
      logger: captured.logger,
      env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY },
    });
    sim.setAppUrl(TEST_API_KEY, t.url!);
    expect((await t.api('/api/pages')).status).toBe(200); // SHOP installed by token exchange
  });
  afterAll(async () => {
    await t?.close();
    await sim?.close();
  });

  it('a valid webhook is answered 200 and handled as a durable run (trigger webhook) with ctx.admin', async () => {
    const rawBody = '{\n  "id": 1001,\n  "note": "caf\u00e9 \u2713",  "total": 12.50\n}';
    const events: Array<{ type: string; requestId?: string | null; traceId?: string | null; runId?: string | null }> = [];
    const offReceived = t.runtime.events.on('webhook.received', (e) => void events.push(e));
    const offDispatched = t.runtime.events.on('run.dispatched', (e) => void events.push(e));
    const delivery = await sim.deliverWebhook({ shop: SHOP, topic: 'orders/create', rawBody });
    offReceived();
    offDispatched();
    expect(delivery.status).toBe(200);
    const [run] = await runs(sql`flow_name = 'webhook:orders/create'`);
    // both events of the delivery name its request (the same id: one request) and no trace (tracing is off)
    expect(events.map((e) => e.type).sort()).toEqual(['run.dispatched', 'webhook.received']);
    expect(events[0]!.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(events[1]!.requestId).toBe(events[0]!.requestId);
    expect(events.map((e) => e.traceId)).toEqual([null, null]);
    expect(run).toMatchObject({ trigger: 'webhook', shop: SHOP });
    expect((await waitForRun(get().db, run!.id)).status).toBe('completed');
    expect(seen.at(-1)).toMatchObject({
      topic: 'orders/create',
      shop: SHOP,
      payload: { id: 1001, note: 'caf\u00e9 \u2713' },
      webhookId: delivery.webhookId,
      shopName: 'Shop One',
    });
    // visible in the shop's run list, not in the flow list
    const list = (await (await t.api('/api/runs')).json()) as any;
    expect(list.runs.map((r: any) => r.id)).toContain(run!.id);
    const flows = (await (await t.api('/api/flows')).json()) as any;
    expect(flows.flows.map((f: any) => f.name)).toEqual(['noop']);
    expect(
      (await t.api(`/api/flows/${encodeURIComponent('webhook:orders/create')}/run`, { method: 'POST', json: { input: {} } })).status,
    ).toBe(404);
  });

  it('a bad signature is 401 and leaves no trace', async () => {
    const before = (await runs()).length;
    const delivery = await sim.deliverWebhook({ shop: SHOP, topic: 'orders/create', payload: { id: 1 }, signWith: 'not-the-secret' });
    expect(delivery.status).toBe(401);
    const body = JSON.stringify({ id: 2 });
    const headers = {
      'content-type': 'application/json',
      'x-shopify-topic': 'orders/create',
      'x-shopify-shop-domain': SHOP,
      'x-shopify-webhook-id': 'w-unsigned',
    };
    expect((await post(headers, body)).status).toBe(401);
    // a signature over a re-serialised body does not match the raw bytes
    const signedOther = createHmac('sha256', TEST_API_SECRET)
      .update(JSON.stringify(JSON.parse('{"id": 2}'), null, 1))
      .digest('base64');
    expect((await post({ ...headers, 'x-shopify-hmac-sha256': signedOther }, '{"id": 2}')).status).toBe(401);
    expect((await runs()).length).toBe(before);
    const [count] = await get().db.query<{ n: number }>(
      sql`select count(*)::int as n from webhook_deliveries where webhook_id in (${delivery.webhookId}, 'w-unsigned')`,
    );
    expect(count!.n).toBe(0);
  });

  it('a valid signature with bad headers or body is 400', async () => {
    const body = '{"id": 3}';
    const hmac = createHmac('sha256', TEST_API_SECRET).update(body).digest('base64');
    const base = {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': hmac,
      'x-shopify-topic': 'orders/create',
      'x-shopify-shop-domain': SHOP,
      'x-shopify-webhook-id': 'w-400',
    };
    expect((await post({ ...base, 'x-shopify-shop-domain': 'evil.example.com' }, body)).status).toBe(400);
    expect((await post({ ...base, 'x-shopify-webhook-id': '' }, body)).status).toBe(400);
    const notJson = 'not json';
    expect(
      (await post({ ...base, 'x-shopify-hmac-sha256': createHmac('sha256', TEST_API_SECRET).update(notJson).digest('base64') }, notJson))
        .status,
    ).toBe(400);
  });

  it('a redelivery of the same id, or the same event id, is acknowledged and ignored; concurrent duplicates too', async () => {
    const delivery = await sim.deliverWebhook({ shop: SHOP, topic: 'products/update', payload: { id: 77 } });
    expect(delivery.status).toBe(200);
    const again = await sim.redeliver(delivery.webhookId);
    expect(again.attempts.map((a) => a.status)).toEqual([200, 200]);
    const sameEvent = await sim.deliverWebhook({ shop: SHOP, topic: 'products/update', payload: { id: 77 }, eventId: delivery.eventId });
    expect(sameEvent.status).toBe(200);
    let mine = await runs(sql`flow_name = 'webhook:products/update'`);
    expect(mine).toHaveLength(1);

    const body = JSON.stringify({ id: 78 });
    const headers = {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': createHmac('sha256', TEST_API_SECRET).update(body).digest('base64'),
      'x-shopify-topic': 'products/update',
      'x-shopify-shop-domain': SHOP,
      'x-shopify-webhook-id': 'concurrent-1',
    };
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => post(headers, body).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(answers.filter((a) => a.body.runId).length).toBe(1);
    expect(answers.filter((a) => a.body.duplicate).length).toBe(5);
    mine = await runs(sql`flow_name = 'webhook:products/update'`);
    expect(mine).toHaveLength(2);
    for (const r of mine) await waitForRun(get().db, r.id);
  });

  it('webhook runs have no concurrency limit: simultaneous deliveries of one topic each get their run', async () => {
    const deliveries = await Promise.all(
      [1, 2, 3].map((id) => sim.deliverWebhook({ shop: OTHER_SHOP, topic: 'products/update', payload: { id } })),
    );
    expect(deliveries.map((d) => d.status)).toEqual([200, 200, 200]);
    const mine = await runs(sql`flow_name = 'webhook:products/update' and shop = ${OTHER_SHOP}`);
    expect(mine).toHaveLength(3);
    for (const r of mine) expect((await waitForRun(get().db, r.id)).status).toBe('completed');
  });

  it('a failing handler is retried by the retry policy and completes', async () => {
    productFailures = 2;
    const delivery = await sim.deliverWebhook({ shop: SHOP, topic: 'products/update', payload: { id: 90 } });
    expect(delivery.status).toBe(200); // answered before the handler ran
    const [row] = await get().db.query<{ run_id: string }>(
      sql`select run_id from webhook_deliveries where webhook_id = ${delivery.webhookId}`,
    );
    const run = await waitForRun(get().db, row!.run_id);
    expect(run).toMatchObject({ status: 'completed', attempt: 3 });
    const logs = await get().db.query<{ message: string }>(
      sql`select message from logs where run_id = ${row!.run_id}::uuid and level = 'error' order by id`,
    );
    expect(logs.map((l) => l.message)).toEqual([
      expect.stringContaining('product handler failed'),
      expect.stringContaining('product handler failed'),
    ]);
    expect(seen.at(-1)).toMatchObject({ topic: 'products/update', payload: { id: 90 } });
  });

  it('a body over 5 MB is refused with 413 (an unsigned one with 401, before its body or size), and leaves no trace', async () => {
    const before = (await runs()).length;
    const body = `{"pad":"${'x'.repeat(5 * 1024 * 1024)}"}`;
    const headers = {
      'content-type': 'application/json',
      'x-shopify-topic': 'orders/create',
      'x-shopify-shop-domain': SHOP,
      'x-shopify-webhook-id': 'w-big',
    };
    const hmac = createHmac('sha256', TEST_API_SECRET).update(body).digest('base64');
    expect((await post({ ...headers, 'x-shopify-hmac-sha256': hmac }, body)).status).toBe(413);
    // no signature header: refused before anything of the body is read, its size included
    expect((await post(headers, body)).status).toBe(401);
    expect((await runs()).length).toBe(before);
    expect(await get().db.query(sql`select 1 from webhook_deliveries where webhook_id = 'w-big'`)).toEqual([]);
  });

  it('an unknown topic is recorded, logged, acknowledged and ignored', async () => {
    const before = (await runs()).length;
    const delivery = await sim.deliverWebhook({ shop: SHOP, topic: 'carts/update', payload: { id: 5 } });
    expect(delivery.status).toBe(200);
    expect((await runs()).length).toBe(before);
    const recorded = await get().db.query(sql`select topic, shop, run_id from webhook_deliveries where webhook_id = ${delivery.webhookId}`);
    expect(recorded).toEqual([{ topic: 'carts/update', shop: SHOP, run_id: null }]);
    const logged = logs.filter((l) => l.webhookId === delivery.webhookId);
    expect(logged).toEqual([
      expect.objectContaining({
        msg: 'webhook with no handler for its topic: acknowledged and ignored',
        topic: 'carts/update',
        shop: SHOP,
        appHandle: 'default',
      }),
    ]);
    // a redelivery is logged as a duplicate
    expect((await sim.redeliver(delivery.webhookId)).status).toBe(200);
    expect(logs.filter((l) => l.webhookId === delivery.webhookId).map((l) => l.msg)).toEqual([logged[0]!.msg, 'duplicate webhook ignored']);
  });

  it('app/uninstalled forgets the token; a later session token reinstalls', async () => {
    await t.api('/api/pages', { shop: OTHER_SHOP });
    expect((await installationRow(get().db, OTHER_SHOP))?.status).toBe('active');
    const { delivery } = await sim.uninstall({ shop: OTHER_SHOP });
    expect(delivery?.status).toBe(200);
    const row = await eventually(async () => {
      const r = await installationRow(get().db, OTHER_SHOP);
      return r?.status === 'uninstalled' && r;
    });
    expect(row.access_token).toBeNull();
    expect(row.uninstalled_at).not.toBeNull();
    const exchanges = sim.state.tokenExchanges.filter((e) => e.shop === OTHER_SHOP && e.status === 200).length;
    expect((await t.api('/api/pages', { shop: OTHER_SHOP })).status).toBe(200);
    expect(sim.state.tokenExchanges.filter((e) => e.shop === OTHER_SHOP && e.status === 200).length).toBe(exchanges + 1);
    const again = await installationRow(get().db, OTHER_SHOP);
    expect(again?.status).toBe('active');
    expect(again!.row_text).not.toContain(sim.state.installation(TEST_API_KEY, OTHER_SHOP)!.accessToken!);
  });

  it('shop/redact runs the app handler, then erases the shop data and keeps other shops', async () => {
    const other = await t.runtime.dispatch({ appHandle: 'default', shop: OTHER_SHOP, flowName: 'noop', input: {}, trigger: 'dispatch' });
    await waitForRun(get().db, other.runId);
    const delivery = await sim.deliverWebhook({ shop: SHOP, topic: 'shop/redact', payload: { shop_id: 1, shop_domain: SHOP } });
    expect(delivery.status).toBe(200);
    const [row] = await get().db.query<{ run_id: string }>(
      sql`select run_id from webhook_deliveries where webhook_id = ${delivery.webhookId}`,
    );
    expect((await waitForRun(get().db, row!.run_id)).status).toBe('completed');
    expect(seen.at(-1)).toMatchObject({ topic: 'shop/redact', shop: SHOP });
    const left = await runs(sql`shop = ${SHOP}`);
    expect(left.map((r) => r.id)).toEqual([row!.run_id]);
    expect(await installationRow(get().db, SHOP)).toBeUndefined();
    expect((await runs(sql`shop = ${OTHER_SHOP}`)).map((r) => r.id)).toContain(other.runId);
    expect((await installationRow(get().db, OTHER_SHOP))?.status).toBe('active');
    const logs = await get().db.query<{ message: string }>(sql`select message from logs where run_id = ${row!.run_id}::uuid`);
    expect(logs.map((l) => l.message)).toContain('shop data erased (shop/redact)');
  });
});
