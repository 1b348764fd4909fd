/**
 * Fuzz of `POST /webhooks` over real HTTP: deliveries correctly signed (HMAC-SHA256 of the exact bytes with the app's
 * secret) and unsigned or badly signed, with odd topics, shop domains, webhook ids and other headers, and bodies that
 * are odd JSON, malformed, invalid UTF-8, deeply nested or over 5 MB. Properties: see harness.ts. Plus the regression
 * of the probe's F3: a signed body nested 100,000 levels deep answers 400, not 500.
 */
import { createHmac, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { MAX_WEBHOOK_BODY_BYTES } from '../../src/platform/webhooks.ts';
import { TEST_API_SECRET } from '../helpers/runtime.ts';
import {
  type FuzzRequest,
  type FuzzServer,
  OTHER_SHOP,
  HEAP_GROWTH_BOUND_MB,
  RSS_GROWTH_BOUND_MB,
  SHOP,
  casesFor,
  checkAnswer,
  deepJson,
  deepJsonText,
  fuzzParams,
  headerText,
  invalidUtf8,
  malformedJson,
  oddJson,
  oddString,
  send,
  startFuzzServer,
  tally,
  timeoutFor,
} from './harness.ts';

const CASES = casesFor(0.15);

const sign = (bytes: Uint8Array, secret = TEST_API_SECRET) => createHmac('sha256', secret).update(bytes).digest('base64');
const bytesOf = (body: string | Uint8Array) => (typeof body === 'string' ? new TextEncoder().encode(body) : body);

/** The value of an optional header: absent, plausible or odd (what an HTTP client can send). */
const headerValue = (plausible: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 14, arbitrary: plausible.map((v): string | undefined => v) },
    { weight: 1, arbitrary: headerText.map((v): string | undefined => v) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

const delivery = fc.record({
  body: fc.oneof(
    { weight: 10, arbitrary: oddJson.map((v) => JSON.stringify(v) ?? 'null') },
    {
      weight: 3,
      arbitrary: fc.record({ id: fc.integer(), note: oddString, lines: fc.array(oddJson, { maxLength: 4 }) }).map((v) => JSON.stringify(v)),
    },
    { weight: 2, arbitrary: malformedJson },
    { weight: 1, arbitrary: deepJsonText },
    { weight: 1, arbitrary: fc.constantFrom(100_000, 1_000_000).map((d) => deepJson(d, 'array')) },
    { weight: 1, arbitrary: invalidUtf8 },
  ),
  topic: headerValue(
    fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom('orders/create', 'products/update') },
      { weight: 2, arbitrary: fc.constantFrom('app/uninstalled', 'shop/redact', 'customers/redact', 'customers/data_request') },
      { weight: 1, arbitrary: fc.constantFrom('Orders/Create', 'orders', '', 'orders/create/x') },
    ),
  ),
  shop: headerValue(
    fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(SHOP, OTHER_SHOP, ` ${SHOP.toUpperCase()} `) },
      { weight: 1, arbitrary: fc.constantFrom('not-a-shop', 'x.myshopify.com.evil.com') },
    ),
  ),
  webhookId: headerValue(fc.oneof({ weight: 8, arbitrary: fc.uuid() }, { weight: 1, arbitrary: fc.constantFrom('x'.repeat(300), '') })),
  eventId: headerValue(fc.uuid()),
  triggeredAt: headerValue(fc.constantFrom('2026-11-25T10:00:00Z', 'not a date', '0', '9999-99-99')),
  apiVersion: headerValue(fc.constantFrom('2025-07', 'unstable', '')),
  hmac: fc.oneof(
    { weight: 10, arbitrary: fc.constant<'valid' | 'other-secret' | 'none' | string>('valid') },
    { weight: 1, arbitrary: fc.constantFrom('other-secret', 'none', '', '====', 'not base64!', 'AAAA') },
    { weight: 1, arbitrary: headerText },
  ),
  contentType: fc.constantFrom('application/json', 'text/plain', undefined),
});

describeEngines('fuzz: POST /webhooks over HTTP', (get) => {
  let server: FuzzServer;

  beforeAll(async () => {
    server = await startFuzzServer(get().db);
  });
  afterAll(async () => {
    await server?.close();
  });

  const post = (body: string | Uint8Array, headers: Record<string, string>) => {
    const req: FuzzRequest = { method: 'POST', path: '/webhooks', headers, body };
    return send(server.url, req).then((answer) => ({ req, answer }));
  };
  const signedHeaders = (body: string | Uint8Array) => ({
    'content-type': 'application/json',
    'x-shopify-topic': 'orders/create',
    'x-shopify-shop-domain': SHOP,
    'x-shopify-webhook-id': randomUUID(),
    'x-shopify-hmac-sha256': sign(bytesOf(body)),
  });

  it(
    `${CASES} odd deliveries, signed and not: no 5xx, no internal detail, 4xx as JSON { error }, memory bounded`,
    async () => {
      const stats = tally();
      await fc.assert(
        fc.asyncProperty(delivery, async (d) => {
          const headers: Record<string, string> = {};
          const set = (name: string, value: string | undefined) => value !== undefined && (headers[name] = value);
          set('content-type', d.contentType);
          set('x-shopify-topic', d.topic);
          set('x-shopify-shop-domain', d.shop);
          set('x-shopify-webhook-id', d.webhookId);
          set('x-shopify-event-id', d.eventId);
          set('x-shopify-triggered-at', d.triggeredAt);
          set('x-shopify-api-version', d.apiVersion);
          const bytes = bytesOf(d.body);
          if (d.hmac === 'valid') headers['x-shopify-hmac-sha256'] = sign(bytes);
          else if (d.hmac === 'other-secret') headers['x-shopify-hmac-sha256'] = sign(bytes, 'another-secret');
          else if (d.hmac !== 'none') headers['x-shopify-hmac-sha256'] = d.hmac;
          const { req, answer } = await post(d.body, headers);
          stats.add(answer.status, answer);
          checkAnswer(answer, req);
          if (d.hmac !== 'valid') expect(answer.status, 'a delivery not signed with the secret is refused').toBeGreaterThanOrEqual(400);
        }),
        fuzzParams(CASES),
      );
      const { rssGrowthMb, heapGrowthMb } = stats.finish(`/webhooks [${get().kind}]`);
      expect(heapGrowthMb).toBeLessThan(HEAP_GROWTH_BOUND_MB);
      expect(rssGrowthMb).toBeLessThan(RSS_GROWTH_BOUND_MB);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    },
    timeoutFor(CASES, 60),
  );

  it('F3: a correctly signed body nested 100,000 levels deep (arrays, objects, mixed) answers 400, not 500; 256 levels are accepted', async () => {
    for (const kind of ['array', 'object', 'mixed'] as const) {
      const body = deepJson(100_000, kind);
      expect(body.length).toBeLessThan(MAX_WEBHOOK_BODY_BYTES);
      const { req, answer } = await post(body, signedHeaders(body));
      checkAnswer(answer, req);
      expect(answer.status, kind).toBe(400);
      expect(answer.json).toEqual({ error: 'Webhook body must not nest arrays and objects more than 256 levels deep' });
    }
    const ok = deepJson(256, 'mixed');
    const { answer } = await post(ok, signedHeaders(ok));
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ ok: true, runId: expect.any(String) });
    const over = deepJson(257, 'mixed');
    expect((await post(over, signedHeaders(over))).answer.status).toBe(400);
  });

  it('a body over 5 MB is 413 JSON, by Content-Length and while a chunked body is read; unsigned, 401 before it is read', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(MAX_WEBHOOK_BODY_BYTES) });
    for (const [headers, status] of [
      [signedHeaders(big), 413],
      [{ 'content-type': 'application/json' }, 401],
    ] as const) {
      const { req, answer } = await post(big, headers);
      checkAnswer(answer, req);
      expect(answer.status).toBe(status);
    }
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > 4 * MAX_WEBHOOK_BODY_BYTES) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    // signature headers in their right form (of another body): the body is read, and cut at the limit
    const res = await fetch(`${server.url}/webhooks`, {
      method: 'POST',
      headers: signedHeaders('{}'),
      body: endless,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: expect.stringMatching(/at most/) });
  });
});
