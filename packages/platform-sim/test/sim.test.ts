import { createHmac } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PlatformSim, signSessionToken, start } from '../src/index.ts';

const APP = { apiKey: 'sim-key', apiSecret: 'sim-secret' };
const SHOP = 'alpha.myshopify.com';
const SHOP_QUERY = '{ shop { name myshopifyDomain id currencyCode } }';

let sim: PlatformSim;

async function exchange(body: Record<string, string>, form = false) {
  const res = await fetch(`${sim.url}/admin/oauth/access_token`, {
    method: 'POST',
    headers: { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json', accept: 'application/json' },
    body: form ? new URLSearchParams(body).toString() : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

function exchangeBody(subject: string, overrides: Record<string, string> = {}) {
  return {
    client_id: APP.apiKey,
    client_secret: APP.apiSecret,
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    subject_token: subject,
    subject_token_type: 'urn:ietf:params:oauth:token-type:id_token',
    requested_token_type: 'urn:shopify:params:oauth:token-type:offline-access-token',
    ...overrides,
  };
}

async function graphql(token: string | undefined, query: string, variables?: unknown, version = '2026-10') {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers['x-shopify-access-token'] = token;
  const res = await fetch(`${sim.url}/admin/api/${version}/graphql.json`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

beforeAll(async () => {
  sim = await start({ apps: [APP], shops: [{ domain: SHOP, name: 'Alpha Goods', currencyCode: 'EUR' }, 'beta.myshopify.com'] });
});
afterAll(() => sim.close());

describe('token exchange', () => {
  it('turns a valid session token into an offline access token, once per installation', async () => {
    const subject = await signSessionToken({ ...APP, shop: SHOP });
    const first = await exchange(exchangeBody(subject));
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ access_token: expect.stringMatching(/^shpat_[0-9a-f]{32}$/), scope: 'read_products' });
    const again = await exchange(exchangeBody(await signSessionToken({ ...APP, shop: SHOP })), true);
    expect(again.body.access_token).toBe(first.body.access_token);
    expect(sim.state.installation(APP.apiKey, SHOP)).toMatchObject({ uninstalledAt: null, accessToken: first.body.access_token });
  });

  it('refuses invalid session tokens and clients like the platform (400 invalid_subject_token, ...)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, Record<string, string>, number, string]> = [
      [
        'bad signature',
        exchangeBody(await signSessionToken({ apiKey: APP.apiKey, apiSecret: 'other', shop: SHOP })),
        400,
        'invalid_subject_token',
      ],
      [
        'wrong audience',
        exchangeBody(await signSessionToken({ apiKey: 'other', apiSecret: APP.apiSecret, shop: SHOP })),
        400,
        'invalid_subject_token',
      ],
      ['expired', exchangeBody(await signSessionToken({ ...APP, shop: SHOP, now: now - 3600 })), 400, 'invalid_subject_token'],
      ['unknown shop', exchangeBody(await signSessionToken({ ...APP, shop: 'nobody.myshopify.com' })), 400, 'invalid_subject_token'],
      ['garbage', exchangeBody('not-a-jwt'), 400, 'invalid_subject_token'],
      ['wrong secret', exchangeBody(await signSessionToken({ ...APP, shop: SHOP }), { client_secret: 'nope' }), 401, 'invalid_client'],
      [
        'wrong grant',
        exchangeBody(await signSessionToken({ ...APP, shop: SHOP }), { grant_type: 'authorization_code' }),
        400,
        'unsupported_grant_type',
      ],
      [
        'wrong subject type',
        exchangeBody(await signSessionToken({ ...APP, shop: SHOP }), {
          subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        }),
        400,
        'invalid_subject_token_type',
      ],
    ];
    for (const [name, body, status, error] of cases) {
      const res = await exchange(body);
      expect(res.status, name).toBe(status);
      expect(res.body, name).toMatchObject({ error, error_description: expect.any(String) });
    }
    expect(sim.state.tokenExchanges.filter((r) => r.status !== 200).length).toBeGreaterThanOrEqual(cases.length);
  });

  it('a hold keeps exchanges waiting until released, then answers them normally', async () => {
    const before = sim.state.tokenExchanges.length;
    const hold = sim.hold('token');
    let answered = false;
    const pending = exchange(exchangeBody(await signSessionToken({ ...APP, shop: SHOP }))).then((res) => ((answered = true), res));
    while (hold.arrived === 0) await new Promise((r) => setTimeout(r, 10));
    // held: nothing answered or recorded yet, and other endpoints are not held
    expect((await graphql(undefined, SHOP_QUERY)).status).toBe(401);
    expect(answered).toBe(false);
    expect(sim.state.tokenExchanges.length).toBe(before);
    hold.release();
    expect((await pending).status).toBe(200);
    expect(sim.state.tokenExchanges.slice(before)).toEqual([expect.objectContaining({ status: 200, shop: SHOP })]);
    expect(hold.arrived).toBe(1);
    expect((await exchange(exchangeBody(await signSessionToken({ ...APP, shop: SHOP })))).status).toBe(200); // released: no longer held
  });
});

describe('Admin GraphQL', () => {
  let token: string;
  beforeAll(() => {
    token = sim.install({ shop: SHOP }).token;
  });

  it('answers the shop query with the cost extension', async () => {
    const res = await graphql(token, SHOP_QUERY);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      shop: { name: 'Alpha Goods', myshopifyDomain: SHOP, id: expect.stringMatching(/^gid:\/\/shopify\/Shop\/\d+$/), currencyCode: 'EUR' },
    });
    expect(res.body.extensions.cost).toEqual({
      requestedQueryCost: 1,
      actualQueryCost: 1,
      throttleStatus: { maximumAvailable: 1000, currentlyAvailable: expect.any(Number), restoreRate: 50 },
    });
  });

  it('supports aliases, variables, fragments, __typename and @include', async () => {
    const query = `query Q($withId: Boolean = false) { s: shop { ...F __typename id @include(if: $withId) } }
      fragment F on Shop { domain: myshopifyDomain }`;
    expect((await graphql(token, query)).body.data).toEqual({ s: { domain: SHOP, __typename: 'Shop' } });
    expect((await graphql(token, query, { withId: true })).body.data.s.id).toMatch(/^gid:/);
  });

  it('refuses unknown versions (404), missing or bad tokens (401), and reports unsupported fields and syntax errors', async () => {
    expect((await graphql(token, SHOP_QUERY, undefined, '2019-01')).status).toBe(404);
    expect((await graphql(undefined, SHOP_QUERY)).status).toBe(401);
    const bad = await graphql('shpat_nope', SHOP_QUERY);
    expect(bad.status).toBe(401);
    expect(bad.body.errors).toContain('Invalid API key or access token');
    const unknown = await graphql(token, '{ shop { name orders } }');
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).toBeUndefined();
    expect(unknown.body.errors[0]).toMatchObject({
      message: "Field 'orders' doesn't exist on type 'Shop'",
      extensions: { code: 'undefinedField' },
    });
    const syntax = await graphql(token, '{ shop { name }');
    expect(syntax.body.errors[0].message).toMatch(/syntax error/);
    const noSelection = await graphql(token, '{ shop }');
    expect(noSelection.body.errors[0].message).toMatch(/must have selections/);
  });

  it('throttles per (app, shop) with the platform error shape, and restores over time', async () => {
    sim.setBucket({ max: 3, restoreRate: 10 });
    try {
      const other = sim.install({ shop: 'beta.myshopify.com' }).token;
      const results = [];
      for (let i = 0; i < 4; i++) results.push(await graphql(token, SHOP_QUERY));
      const throttled = results[3]!;
      expect(throttled.status).toBe(200);
      expect(throttled.body.data).toBeUndefined();
      expect(throttled.body.errors).toEqual([
        { message: 'Throttled', extensions: { code: 'THROTTLED', documentation: expect.any(String) } },
      ]);
      expect(throttled.body.extensions.cost).toMatchObject({
        requestedQueryCost: 1,
        actualQueryCost: null,
        throttleStatus: { maximumAvailable: 3, restoreRate: 10 },
      });
      expect(throttled.body.extensions.cost.throttleStatus.currentlyAvailable).toBeLessThan(1);
      expect(sim.state.throttledCount).toBeGreaterThan(0);
      // another shop has its own bucket
      expect((await graphql(other, SHOP_QUERY)).body.data.shop.myshopifyDomain).toBe('beta.myshopify.com');
      await new Promise((r) => setTimeout(r, 150));
      expect((await graphql(token, SHOP_QUERY)).body.data.shop.name).toBe('Alpha Goods');
    } finally {
      sim.setBucket({ max: 1000, restoreRate: 50 });
    }
  });

  it('answers injected faults (429 with Retry-After, 5xx) and records every call', async () => {
    sim.injectFault({ target: 'graphql', status: 429, headers: { 'retry-after': '1' }, times: 1 });
    const limited = await graphql(token, SHOP_QUERY);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect((await graphql(token, SHOP_QUERY)).status).toBe(200);
    expect(sim.state.graphqlCalls.some((c) => c.outcome === 'fault' && c.httpStatus === 429)).toBe(true);
  });
});

describe('webhooks', () => {
  let receiver: Server;
  const received: Array<{ headers: Record<string, string | string[] | undefined>; body: Buffer }> = [];
  let status = 200;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    sim.setAppUrl(APP.apiKey, `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`);
  });
  afterAll(() => new Promise<void>((r) => receiver.close(() => r())));

  it('signs the raw body with the app secret and sends the platform headers; redelivery repeats the same id', async () => {
    const rawBody = '{ "id": 1001,  "note": "caf\u00e9 \u2713" }';
    const delivery = await sim.deliverWebhook({ shop: SHOP, topic: 'orders/create', rawBody });
    expect(delivery.status).toBe(200);
    const got = received.at(-1)!;
    expect(got.body.toString('utf8')).toBe(rawBody);
    expect(got.headers['x-shopify-hmac-sha256']).toBe(createHmac('sha256', APP.apiSecret).update(got.body).digest('base64'));
    expect(got.headers).toMatchObject({
      'x-shopify-topic': 'orders/create',
      'x-shopify-shop-domain': SHOP,
      'x-shopify-api-version': '2026-10',
      'x-shopify-webhook-id': delivery.webhookId,
      'x-shopify-event-id': delivery.eventId,
      'x-shopify-triggered-at': delivery.triggeredAt,
    });
    status = 500;
    const again = await sim.redeliver(delivery.webhookId);
    expect(again.attempts.map((a) => a.status)).toEqual([200, 500]);
    expect(received.at(-1)!.headers['x-shopify-webhook-id']).toBe(delivery.webhookId);
    expect(received.at(-1)!.body.equals(got.body)).toBe(true);
    status = 200;
  });

  it('uninstall revokes the token and delivers app/uninstalled', async () => {
    const token = sim.install({ shop: 'beta.myshopify.com' }).token;
    const result = await sim.uninstall({ shop: 'beta.myshopify.com' });
    expect(result.uninstalled).toBe(true);
    expect(result.delivery).toMatchObject({ topic: 'app/uninstalled', status: 200 });
    expect(JSON.parse(received.at(-1)!.body.toString())).toMatchObject({ myshopify_domain: 'beta.myshopify.com' });
    expect((await graphql(token, SHOP_QUERY)).status).toBe(401);
    // the control API over HTTP
    const state = (await (await fetch(`${sim.url}/__sim/state`)).json()) as any;
    expect(state.installations.find((i: any) => i.shop === 'beta.myshopify.com').uninstalledAt).not.toBeNull();
    const sent = await fetch(`${sim.url}/__sim/webhooks`, {
      method: 'POST',
      body: JSON.stringify({ shop: SHOP, topic: 'products/update', payload: { id: 1 } }),
    });
    expect(((await sent.json()) as any).delivery.status).toBe(200);
  });
});
