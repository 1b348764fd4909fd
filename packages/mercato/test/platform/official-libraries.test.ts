/**
 * The platform's official libraries as judges (issue 33; docs/platform-sim.md, "Judged by the official libraries"):
 * `@shopify/shopify-api` validates every webhook the simulator delivers and decodes the session tokens of the simulator
 * and of the dev preview; Mercato accepts a token built to the library's rules and refuses each variant the library
 * refuses; Mercato's token-exchange request equals the library's (both recorded by one local server); the official Admin
 * API client queries the simulator and gets `extensions.cost` in the documented shape; and Mercato's Admin client
 * handles answers shaped as the platform documents them (THROTTLED, 429 with Retry-After, 5xx, userErrors).
 */
import '@shopify/shopify-api/adapters/node';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdminApiClient } from '@shopify/admin-api-client';
import { ApiVersion, LogSeverity, RequestedTokenType, shopifyApi } from '@shopify/shopify-api';
import { setAbstractFetchFunc } from '@shopify/shopify-api/runtime';
import { SignJWT, UnsecuredJWT } from 'jose';
import { type PlatformSim, signSessionToken as simSessionToken } from 'platform-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { startHttpServer } from '../../src/http/server.ts';
import { AdminClient } from '../../src/platform/admin-client.ts';
import { exchangeSessionToken } from '../../src/platform/token-exchange.ts';
import { buildApp } from '../../src/serve.ts';
import { SHOP, TEST_API_KEY, TEST_API_SECRET, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { ENCRYPTION_KEY, startSim } from './helpers.ts';

/** The library as an app would configure it (its logger silenced). */
const shopify = shopifyApi({
  apiKey: TEST_API_KEY,
  apiSecretKey: TEST_API_SECRET,
  scopes: ['read_orders'],
  hostName: 'app.example.com',
  hostScheme: 'https',
  isEmbeddedApp: true,
  apiVersion: ApiVersion.July26,
  logger: { level: LogSeverity.Error, log: async () => {} },
});

/** Where the library's `https://<shop>` requests go (a recorder or the simulator): its runtime takes our fetch. */
let libraryOrigin = '';
setAbstractFetchFunc(async (input, init) => {
  const url = String(input).replace(/^https:\/\/[a-z0-9-]+\.myshopify\.com/, libraryOrigin);
  return fetch(url, init as RequestInit);
});

interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A local HTTP server that records each request and answers with `answer(request)` (status, headers, body). */
async function recorder(answer: (r: Recorded, req: IncomingMessage, res: ServerResponse) => Promise<void> | void) {
  const requests: Recorded[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const r = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
    requests.push(r);
    await answer(r, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('webhooks the simulator delivers, judged by the library', () => {
  let sim: PlatformSim;
  let receiver: Awaited<ReturnType<typeof recorder>>;
  const verdicts: Array<{ topic: string; valid: boolean; result: Record<string, unknown> }> = [];

  beforeAll(async () => {
    sim = await startSim();
    receiver = await recorder(async (r, req, res) => {
      const result = (await shopify.webhooks.validate({ rawBody: r.body, rawRequest: req, rawResponse: res })) as unknown as Record<
        string,
        unknown
      >;
      verdicts.push({ topic: String(req.headers['x-shopify-topic']), valid: result.valid === true, result });
      res.writeHead(200).end();
    });
    sim.setAppUrl(TEST_API_KEY, receiver.url);
  });
  afterAll(async () => {
    await sim?.close();
    await receiver?.close();
  });

  it('every delivery passes the library validation: topics, app/uninstalled, the compliance topics, a redelivery, raw bytes', async () => {
    const first = await sim.deliverWebhook({ shop: SHOP, topic: 'orders/create', payload: { id: 1001, total_price: '12.50' } });
    await sim.deliverWebhook({ shop: SHOP, topic: 'products/update', rawBody: '{ "id": 7,  "title": "Caf\u00e9 \u2615"  }' });
    for (const topic of ['customers/data_request', 'customers/redact', 'shop/redact'])
      await sim.deliverWebhook({ shop: SHOP, topic, payload: { shop_domain: SHOP } });
    sim.install({ shop: SHOP });
    const uninstall = await sim.uninstall({ shop: SHOP });
    expect(uninstall.delivery?.status).toBe(200);
    await sim.redeliver(first.webhookId);
    expect(verdicts.map((v) => v.topic)).toEqual([
      'orders/create',
      'products/update',
      'customers/data_request',
      'customers/redact',
      'shop/redact',
      'app/uninstalled',
      'orders/create',
    ]);
    expect(verdicts.filter((v) => !v.valid)).toEqual([]);
    // what the library read from the headers is what the simulator sent
    expect(verdicts[0].result).toMatchObject({ valid: true, domain: SHOP, topic: 'ORDERS_CREATE', webhookId: first.webhookId });
    expect(verdicts[0].result.apiVersion).toBe(first.apiVersion);
  });

  it('the judge can fail: a delivery signed with another secret is refused by the library', async () => {
    verdicts.length = 0;
    await sim.deliverWebhook({ shop: SHOP, topic: 'orders/create', payload: {}, signWith: 'not-the-secret' });
    expect(verdicts).toEqual([
      { topic: 'orders/create', valid: false, result: expect.objectContaining({ valid: false, reason: 'invalid_hmac' }) },
    ]);
  });
});

describe('session tokens, judged by the library', () => {
  it('tokens of the simulator decode with the library (and a token for another app does not)', async () => {
    const token = await simSessionToken({ apiKey: TEST_API_KEY, apiSecret: TEST_API_SECRET, shop: SHOP });
    const payload = await shopify.session.decodeSessionToken(token);
    expect(payload).toMatchObject({ aud: TEST_API_KEY, dest: `https://${SHOP}`, iss: `https://${SHOP}/admin` });
    const other = await simSessionToken({ apiKey: 'other-app', apiSecret: TEST_API_SECRET, shop: SHOP });
    await expect(shopify.session.decodeSessionToken(other)).rejects.toThrow(/invalid API key/);
  });
});

const app = defineApp();
const instance = app.defineConfig({ flows: { noop: app.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) } });

/** A token as the library's rules describe one: HS256 with the app's secret, `aud` the API key, `exp`/`nbf`. */
function libraryShapedToken(
  overrides: { secret?: string; alg?: string; aud?: string | string[]; exp?: number; nbf?: number; iss?: string; dest?: string } = {},
) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ dest: overrides.dest ?? `https://${SHOP}`, sid: 'session-1', sub: '42' })
    .setProtectedHeader({ alg: overrides.alg ?? 'HS256', typ: 'JWT' })
    .setIssuer(overrides.iss ?? `https://${SHOP}/admin`)
    .setAudience(overrides.aud ?? TEST_API_KEY)
    .setExpirationTime(overrides.exp ?? now + 60)
    .setNotBefore(overrides.nbf ?? now - 1)
    .setIssuedAt(now - 1)
    .setJti(crypto.randomUUID())
    .sign(new TextEncoder().encode(overrides.secret ?? TEST_API_SECRET));
}

describeEngines('Mercato and the library on the same tokens and the same exchange', (get) => {
  let sim: PlatformSim;
  let t: TestRuntime;
  let previewUrl: string;
  let closePreview: () => Promise<void>;

  beforeAll(async () => {
    sim = await startSim();
    t = await startTestRuntime(instance, get().db, { http: true, env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY } });
    // the dev preview's token endpoint, as `mercato dev` mounts it
    const server = await startHttpServer(buildApp(t.runtime, { preview: true, previewShops: () => [SHOP] }), {
      port: 0,
      hostname: '127.0.0.1',
    });
    previewUrl = server.url;
    closePreview = () => server.close();
  });
  afterAll(async () => {
    await closePreview?.();
    await t?.close();
    await sim?.close();
  });

  it('a dev preview token decodes with the library', async () => {
    const res = await fetch(`${previewUrl}/__mercato/preview/session-token`, { method: 'POST', body: JSON.stringify({ shop: SHOP }) });
    const { token } = (await res.json()) as { token: string };
    expect(await shopify.session.decodeSessionToken(token)).toMatchObject({ aud: TEST_API_KEY, dest: `https://${SHOP}` });
  });

  it('accepts a token built to the library rules, and refuses every variant the library refuses', async () => {
    const now = Math.floor(Date.now() / 1000);
    const variants: Array<[string, string | Promise<string>]> = [
      ['valid', libraryShapedToken()],
      ['signed with another secret', libraryShapedToken({ secret: 'another-secret' })],
      ['HS384 instead of HS256', libraryShapedToken({ alg: 'HS384', secret: TEST_API_SECRET.repeat(4) })],
      [
        'unsigned (alg none)',
        new UnsecuredJWT({ aud: TEST_API_KEY, iss: `https://${SHOP}/admin`, dest: `https://${SHOP}` })
          .setExpirationTime(now + 60)
          .setNotBefore(now - 1)
          .encode(),
      ],
      ['expired a minute ago', libraryShapedToken({ exp: now - 60, nbf: now - 120 })],
      ['valid only in a minute', libraryShapedToken({ nbf: now + 60 })],
      ['for another app', libraryShapedToken({ aud: 'another-app' })],
      ['audience as a list', libraryShapedToken({ aud: [TEST_API_KEY, 'another-app'] })],
      ['not a JWT', 'not.a.jwt'],
    ];
    const verdicts: Array<{ name: string; library: boolean; mercato: number }> = [];
    for (const [name, pending] of variants) {
      const token = await pending;
      const library = await shopify.session.decodeSessionToken(token).then(
        () => true,
        () => false,
      );
      const res = await fetch(`${t.url}/api/flows`, { headers: { authorization: `Bearer ${token}` } });
      verdicts.push({ name, library, mercato: res.status });
    }
    expect(verdicts).toEqual(
      variants.map(([name]) => (name === 'valid' ? { name, library: true, mercato: 200 } : { name, library: false, mercato: 401 })),
    );
    // stricter than the library: a token whose iss and dest name different shops
    const mixed = await libraryShapedToken({ iss: 'https://shop-two.myshopify.com/admin' });
    expect(await shopify.session.decodeSessionToken(mixed)).toMatchObject({ iss: 'https://shop-two.myshopify.com/admin' });
    expect((await fetch(`${t.url}/api/flows`, { headers: { authorization: `Bearer ${mixed}` } })).status).toBe(401);
  });

  it("the token-exchange request equals the library's: endpoint, method, content type and parameters", async () => {
    const rec = await recorder((_r, _req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ access_token: 'shpat_recorded', scope: 'read_orders' }));
    });
    try {
      const sessionToken = await libraryShapedToken();
      libraryOrigin = rec.url;
      await shopify.auth.tokenExchange({ shop: SHOP, sessionToken, requestedTokenType: RequestedTokenType.OfflineAccessToken });
      const exchanged = await exchangeSessionToken({
        app: { apiKey: TEST_API_KEY, apiSecret: TEST_API_SECRET },
        shop: SHOP,
        sessionToken,
        platformOrigin: rec.url,
      });
      expect(exchanged).toEqual({ accessToken: 'shpat_recorded', scopes: 'read_orders' });
      const [library, mercato] = rec.requests;
      const shape = (r: Recorded) => ({
        method: r.method,
        path: r.path,
        contentType: r.headers['content-type'],
        accept: r.headers.accept,
        params: JSON.parse(r.body),
      });
      expect(shape(mercato)).toEqual(shape(library));
      expect(shape(library)).toMatchObject({
        method: 'POST',
        path: '/admin/oauth/access_token',
        params: { grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: sessionToken },
      });
    } finally {
      await rec.close();
    }
  });

  it('the library exchanges a token with the simulator, and the official Admin API client queries it: data and extensions.cost', async () => {
    const sessionToken = await simSessionToken({ apiKey: TEST_API_KEY, apiSecret: TEST_API_SECRET, shop: 'shop-three.myshopify.com' });
    libraryOrigin = sim.url;
    const { session } = await shopify.auth.tokenExchange({
      shop: 'shop-three.myshopify.com',
      sessionToken,
      requestedTokenType: RequestedTokenType.OfflineAccessToken,
    });
    expect(session.accessToken).toMatch(/^shpat_/);
    expect(session.shop).toBe('shop-three.myshopify.com');
    const client = createAdminApiClient({
      storeDomain: 'shop-three.myshopify.com',
      apiVersion: '2026-07',
      accessToken: session.accessToken!,
      customFetchApi: (url, init) => fetch(String(url).replace('https://shop-three.myshopify.com', sim.url), init as RequestInit),
    });
    const answer = await client.request<{ shop: { name: string; myshopifyDomain: string } }>('{ shop { name myshopifyDomain } }');
    expect(answer.errors).toBeUndefined();
    expect(answer.data?.shop.myshopifyDomain).toBe('shop-three.myshopify.com');
    const cost = answer.extensions?.cost as Record<string, any>;
    expect(cost).toEqual({
      requestedQueryCost: expect.any(Number),
      actualQueryCost: expect.any(Number),
      throttleStatus: { maximumAvailable: expect.any(Number), currentlyAvailable: expect.any(Number), restoreRate: expect.any(Number) },
    });
  });
});

describe("Mercato's Admin client on answers shaped as the platform documents them", () => {
  /** Fixtures served in order, one per request. */
  let queue: Array<{ status: number; headers?: Record<string, string>; body: unknown }> = [];
  let server: Awaited<ReturnType<typeof recorder>>;
  const client = () =>
    new AdminClient({
      shop: SHOP,
      apiVersion: '2026-10',
      platformOrigin: server.url,
      accessToken: async () => 'shpat_fixture',
      retry: { initialDelayMs: 50, maxDelayMs: 200 },
    });

  beforeAll(async () => {
    server = await recorder((_r, _req, res) => {
      const next = queue.shift() ?? { status: 500, body: { errors: 'no fixture left' } };
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers }).end(JSON.stringify(next.body));
    });
  });
  afterAll(() => server?.close());

  const ok = {
    status: 200,
    body: {
      data: { shop: { name: 'Fixture shop' } },
      extensions: {
        cost: {
          requestedQueryCost: 1,
          actualQueryCost: 1,
          throttleStatus: { maximumAvailable: 2000, currentlyAvailable: 1999, restoreRate: 100 },
        },
      },
    },
  };

  it('THROTTLED in errors[].extensions.code: waits what the cost says, then gets the data', async () => {
    // https://shopify.dev/docs/apps/build/apis/graphql-admin/rate-limits: a throttled answer is HTTP 200 with an error whose
    // extensions.code is THROTTLED, no data, and extensions.cost (actualQueryCost null) beside errors
    queue = [
      {
        status: 200,
        body: {
          errors: [{ message: 'Throttled', extensions: { code: 'THROTTLED', documentation: 'https://shopify.dev/api/usage/rate-limits' } }],
          extensions: {
            cost: {
              requestedQueryCost: 120,
              actualQueryCost: null,
              throttleStatus: { maximumAvailable: 2000, currentlyAvailable: 100, restoreRate: 100 },
            },
          },
        },
      },
      ok,
    ];
    const before = server.requests.length;
    const started = Date.now();
    expect(await client().request('{ shop { name } }')).toEqual({ shop: { name: 'Fixture shop' } });
    expect(server.requests.length - before).toBe(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(180); // (120 - 100) / 100 s
  });

  it('HTTP 429 with Retry-After: waits that long, then retries', async () => {
    // https://shopify.dev/docs/api/usage/response-codes: 429 Too Many Requests, with a Retry-After header in seconds
    queue = [
      {
        status: 429,
        headers: { 'retry-after': '1.0' },
        body: { errors: 'Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service.' },
      },
      ok,
    ];
    const started = Date.now();
    expect(await client().request('{ shop { name } }')).toEqual({ shop: { name: 'Fixture shop' } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('5xx: retried with backoff until an answer comes', async () => {
    // https://shopify.dev/docs/api/usage/response-codes: 5xx are errors on the platform's side, safe to retry later
    queue = [{ status: 503, body: { errors: 'Service Unavailable' } }, { status: 502, body: { errors: 'Bad Gateway' } }, ok];
    const before = server.requests.length;
    expect(await client().request('{ shop { name } }')).toEqual({ shop: { name: 'Fixture shop' } });
    expect(server.requests.length - before).toBe(3);
  });

  it('a mutation answered with userErrors: the data as it came, sent once (no retry, no exception)', async () => {
    // https://shopify.dev/docs/api/admin-graphql: a mutation reports input problems in its payload's userErrors
    // (field path and message), with HTTP 200 and no top-level errors
    const data = { productCreate: { product: null, userErrors: [{ field: ['product', 'title'], message: "Title can't be blank" }] } };
    queue = [{ status: 200, body: { data, extensions: ok.body.extensions } }];
    const before = server.requests.length;
    expect(
      await client().request('mutation { productCreate(product: { title: "" }) { product { id } userErrors { field message } } }'),
    ).toEqual(data);
    expect(server.requests.length - before).toBe(1);
  });
});
