/**
 * Fuzz of the public routes (/routes/*) over real HTTP: the fuzz app's routes (./app/routes) with odd paths,
 * parameters, methods, query strings, bodies (odd JSON, malformed, deeply nested, around and over the body limits,
 * chunked), content types and signatures. Properties: see harness.ts. The routes are written as docs/routes.md asks
 * (bad input is their own 4xx), so a 5xx here is Mercato's: the router, the body limit, forShop or dispatch.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { DEFAULT_ROUTE_BODY_LIMIT } from '../../src/routes/body-limit.ts';
import { ROUTE_SECRET } from './app/routes/signed.ts';
import { UPLOAD_LIMIT } from './app/routes/upload.ts';
import {
  type FuzzRequest,
  type FuzzServer,
  OTHER_SHOP,
  HEAP_GROWTH_BOUND_MB,
  RSS_GROWTH_BOUND_MB,
  SHOP,
  casesFor,
  checkAnswer,
  contentType,
  deepJsonText,
  fuzzParams,
  headerText,
  invalidUtf8,
  malformedJson,
  oddJson,
  oddSegment,
  queryOf,
  send,
  shortOddString,
  startFuzzServer,
  tally,
  timeoutFor,
} from './harness.ts';

const CASES = casesFor(0.15);

const shop = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom<unknown>(SHOP, OTHER_SHOP, ` ${SHOP.toUpperCase()} `, 'nope.myshopify.com') },
  { weight: 1, arbitrary: oddJson },
);

/** A body for a route: its expected shape with odd values, or anything else. */
const body = (shape: fc.Arbitrary<unknown>): fc.Arbitrary<string | Uint8Array | undefined> =>
  fc.oneof(
    { weight: 6, arbitrary: shape.map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 2, arbitrary: oddJson.map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 2, arbitrary: malformedJson },
    { weight: 1, arbitrary: deepJsonText },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(UPLOAD_LIMIT, UPLOAD_LIMIT + 1, DEFAULT_ROUTE_BODY_LIMIT, DEFAULT_ROUTE_BODY_LIMIT + 1, 3 * DEFAULT_ROUTE_BODY_LIMIT)
        .map((n) => JSON.stringify({ shop: SHOP, input: { pad: 'x'.repeat(Math.max(0, n - 46)) } })),
    },
    { weight: 1, arbitrary: invalidUtf8 },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

const ANY_METHOD = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS');
/** A route's own methods mostly, any method sometimes. */
const method = (...own: string[]) => fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...own) }, { weight: 1, arbitrary: ANY_METHOD });

/** The fuzz app's routes, paths with odd parameters, and a few paths no file serves. */
const target = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      path: fc.constant('/routes/echo'),
      method: method('POST', 'GET'),
      body: body(
        fc.record({ shop, input: fc.oneof(fc.dictionary(shortOddString, oddJson, { maxKeys: 4 }), oddJson) }, { requiredKeys: [] }),
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      path: fc.oneof(fc.uuid(), oddSegment).map((id) => `/routes/items/${id}`),
      method: method('GET', 'DELETE', 'HEAD'),
      body: body(oddJson),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      path: fc.constant('/routes/signed'),
      method: method('POST'),
      body: body(fc.record({ shop, n: oddJson }, { requiredKeys: [] })),
    }),
  },
  { weight: 2, arbitrary: fc.record({ path: fc.constant('/routes/upload'), method: method('POST'), body: body(oddJson) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      path: fc.oneof(fc.constantFrom(SHOP, OTHER_SHOP, 'nope.myshopify.com'), oddSegment).map((s) => `/routes/shops/${s}/status`),
      method: method('GET', 'HEAD'),
      body: body(oddJson),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      path: fc.oneof(oddSegment, fc.constantFrom('_json', 'echo/extra', 'items', 'shops')).map((s) => `/routes/${s}`),
      method: ANY_METHOD,
      body: body(oddJson),
    }),
  },
);

describeEngines('fuzz: /routes/* over HTTP', (get) => {
  let server: FuzzServer;

  beforeAll(async () => {
    server = await startFuzzServer(get().db);
  });
  afterAll(async () => {
    await server?.close();
  });

  it(
    `${CASES} odd requests to public routes: no 5xx, no internal detail, 4xx as JSON { error }, memory bounded`,
    async () => {
      const stats = tally();
      const request = fc.record({
        target,
        method: fc.oneof(
          { weight: 3, arbitrary: fc.constant('POST') },
          { weight: 2, arbitrary: fc.constantFrom('GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS') },
        ),
        query: queryOf(['shop', 'limit', 'id']),
        contentType,
        signature: fc.oneof(
          { weight: 4, arbitrary: fc.constant<string | undefined>('valid') },
          { weight: 1, arbitrary: headerText },
          { weight: 1, arbitrary: fc.constant(undefined) },
        ),
        chunked: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          const headers: Record<string, string> = {};
          if (r.contentType !== undefined) headers['content-type'] = r.contentType;
          const raw = r.target.body;
          if (r.signature !== undefined) {
            headers['x-signature'] =
              r.signature === 'valid'
                ? createHmac('sha256', ROUTE_SECRET)
                    .update(typeof raw === 'string' ? raw : (raw ?? ''))
                    .digest('hex')
                : r.signature;
          }
          const req: FuzzRequest = { method: r.target.method, path: r.target.path + r.query, headers, body: raw };
          // half of the bodies go chunked (no Content-Length): the limit is then counted while the route reads
          const sent: FuzzRequest =
            r.chunked && raw !== undefined && req.method !== 'GET' && req.method !== 'HEAD' ? { ...req, body: chunked(raw) } : req;
          const answer = await send(server.url, sent);
          stats.add(answer.status, answer);
          checkAnswer(answer, req);
        }),
        fuzzParams(CASES),
      );
      const { rssGrowthMb, heapGrowthMb } = stats.finish(`/routes [${get().kind}]`);
      expect(heapGrowthMb).toBeLessThan(HEAP_GROWTH_BOUND_MB);
      expect(rssGrowthMb).toBeLessThan(RSS_GROWTH_BOUND_MB);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    },
    timeoutFor(CASES, 60),
  );
});

/** The body as a stream of 16 KB chunks (fetch sends it with Transfer-Encoding: chunked). */
function chunked(raw: string | Uint8Array): ReadableStream<Uint8Array> {
  const bytes = typeof raw === 'string' ? new TextEncoder().encode(raw) : raw;
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + 16 * 1024));
      at += 16 * 1024;
    },
  });
}
