/**
 * The body limit of public routes (the probe's F2: one unauthenticated 400 MB chunked POST took the server from 104 MB
 * to 889 MB): 1,000,000 bytes by default, `bodyLimit` per route, 413 JSON `{ error }` by Content-Length before the auth
 * step or as soon as a chunked body passes the limit while the route (or its auth step) reads it. Over real HTTP on the
 * fuzz app (test/fuzz/app), whose routes read bodies the way docs/routes.md shows.
 */
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { DEFAULT_ROUTE_BODY_LIMIT } from '../../src/routes/body-limit.ts';
import { inspectRoutes } from '../../src/routes/loader.ts';
import { ROUTE_SECRET } from '../fuzz/app/routes/signed.ts';
import { UPLOAD_LIMIT } from '../fuzz/app/routes/upload.ts';
import { FUZZ_APP_DIR, type FuzzServer, SHOP, startFuzzServer } from '../fuzz/harness.ts';

const LIMIT_ERROR = `Request body must be at most ${DEFAULT_ROUTE_BODY_LIMIT} bytes`;

/** A JSON body of exactly `size` bytes: `{"shop":…,"input":{"pad":"xxx…"}}`. */
function bodyOf(size: number): string {
  const base = JSON.stringify({ shop: SHOP, input: { pad: '' } });
  return JSON.stringify({ shop: SHOP, input: { pad: 'x'.repeat(size - base.length) } });
}

/** A chunked body of `total` bytes made on demand (never held whole); `sent()` tells how much the server pulled. */
function endless(total: number, chunkSize = 64 * 1024) {
  const chunk = new TextEncoder().encode('x'.repeat(chunkSize));
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      sent += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  return { stream, sent: () => sent };
}

describeEngines('public routes: body limit', (get) => {
  let server: FuzzServer;
  const post = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      duplex: 'half',
    } as RequestInit);

  beforeAll(async () => {
    server = await startFuzzServer(get().db);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('accepts a body of exactly 1,000,000 bytes and answers 413 JSON for one byte more, by Content-Length (before any auth step)', async () => {
    expect(bodyOf(DEFAULT_ROUTE_BODY_LIMIT).length).toBe(DEFAULT_ROUTE_BODY_LIMIT);
    const ok = await post('/routes/echo', bodyOf(DEFAULT_ROUTE_BODY_LIMIT));
    expect(ok.status).toBe(202);
    expect(await ok.json()).toMatchObject({ runId: expect.any(String), status: 'pending' });

    const over = await post('/routes/echo', bodyOf(DEFAULT_ROUTE_BODY_LIMIT + 1));
    expect(over.status).toBe(413);
    expect(over.headers.get('content-type')).toMatch(/^application\/json/);
    expect(over.headers.get('connection')).toBe('close');
    expect(await over.json()).toEqual({ error: LIMIT_ERROR });

    // signed correctly, but refused on its declared size before the auth step reads anything
    const big = bodyOf(DEFAULT_ROUTE_BODY_LIMIT + 1);
    const signed = await post('/routes/signed', big, { 'x-signature': createHmac('sha256', ROUTE_SECRET).update(big).digest('hex') });
    expect(signed.status).toBe(413);
    expect(await signed.json()).toEqual({ error: LIMIT_ERROR });
  });

  it('a chunked body over the limit is cut while the route reads it: 413 from the handler, and from an auth step that reads a clone', async () => {
    for (const path of ['/routes/echo', '/routes/signed']) {
      const body = endless(3 * DEFAULT_ROUTE_BODY_LIMIT);
      const res = await post(path, body.stream, { 'x-signature': '00' });
      expect(res.status, path).toBe(413);
      expect(await res.json()).toEqual({ error: LIMIT_ERROR });
    }
    // under the limit, chunked, the same routes work (the auth step and the handler both read the body)
    const small = bodyOf(10_000);
    const chunks = new TextEncoder().encode(small);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < chunks.length; i += 1000) controller.enqueue(chunks.subarray(i, i + 1000));
        controller.close();
      },
    });
    const res = await post('/routes/signed', stream, { 'x-signature': createHmac('sha256', ROUTE_SECRET).update(small).digest('hex') });
    expect(res.status).toBe(400); // the signed route wants { shop, n }: its own 400 for the missing n comes from dispatch
    expect(await res.json()).toEqual({ error: expect.stringMatching(/Invalid input for flow "typed"/) });
  });

  it('bodyLimit in a route file sets that route’s limit (64 KB here), by Content-Length and while streaming', async () => {
    const exact = await post('/routes/upload', 'y'.repeat(UPLOAD_LIMIT));
    expect(exact.status).toBe(200);
    expect(await exact.json()).toEqual({ bytes: UPLOAD_LIMIT });
    const over = await post('/routes/upload', 'y'.repeat(UPLOAD_LIMIT + 1));
    expect(over.status).toBe(413);
    expect(await over.json()).toEqual({ error: `Request body must be at most ${UPLOAD_LIMIT} bytes` });
    const streamed = endless(10 * UPLOAD_LIMIT, 1000);
    const res = await post('/routes/upload', streamed.stream);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: `Request body must be at most ${UPLOAD_LIMIT} bytes` });
  });

  it('F2 regression: a 400 MB chunked POST to an unauthenticated route answers 413 and the server’s RSS grows by less than 50 MB', async () => {
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    try {
      const body = endless(400 * 1024 * 1024);
      const res = await post('/routes/echo', body.stream);
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({ error: LIMIT_ERROR });
      // the server stopped reading long before the end (it drains at most 64 MB of an unread body, then cuts)
      expect(body.sent()).toBeLessThan(100 * 1024 * 1024);
    } finally {
      clearInterval(sampler);
    }
    const growthMb = (peak - before) / 1e6;
    console.log(`[routes body limit] 400 MB chunked POST: 413, peak RSS growth ${growthMb.toFixed(1)} MB`);
    expect(growthMb).toBeLessThan(50);
    // the server still serves
    expect((await fetch(`${server.url}/routes/echo?x=1`)).status).toBe(200);
  });
});

it('start-up refuses a bodyLimit that is not a whole number of bytes above 0, naming the file', async () => {
  const routesDir = join(FUZZ_APP_DIR, 'routes');
  for (const bodyLimit of [0, -1, 1.5, '1mb', Number.POSITIVE_INFINITY, null]) {
    const { problems } = await inspectRoutes(routesDir, async (file) =>
      file.endsWith('upload.ts') ? { default: { auth: 'none', bodyLimit, POST: () => new Response() } } : import(pathToFileURL(file).href),
    );
    expect(problems, String(bodyLimit)).toEqual(['routes/upload.ts: bodyLimit must be a whole number of bytes above 0']);
  }
});

describeEngines('public routes: the bound of bodies in flight', (get) => {
  let server: FuzzServer;
  beforeAll(async () => {
    // the smallest bound: one route body in flight (a chunked one reserves the route's limit, 1,000,000 bytes) fills it
    server = await startFuzzServer(get().db, { env: { MERCATO_MAX_BODY_BYTES_IN_FLIGHT: String(1024 * 1024) } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a route body beyond the bound is answered 503 with Retry-After before it is read; the one in flight goes through', async () => {
    // a chunked body that trickles in: it holds its share while its handler waits for the rest
    let finish: () => void = () => {};
    const trickle = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(`{"shop":"${SHOP}",`));
        finish = () => {
          controller.enqueue(new TextEncoder().encode('"input":{}}'));
          controller.close();
        };
      },
    });
    const slow = fetch(`${server.url}/routes/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: trickle,
      duplex: 'half',
    } as RequestInit);
    await new Promise((r) => setTimeout(r, 300));
    expect(server.t.runtime.bodies.inFlight).toBeGreaterThan(0);
    const refused = await fetch(`${server.url}/routes/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: bodyOf(100_000), // 1,000,000 + 100,000 bytes would pass the 1 MiB bound
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({ error: expect.stringMatching(/bodies/), retryAfterSeconds: 1 });
    finish();
    expect((await slow).status).toBe(202);
    expect(server.t.runtime.bodies.inFlight).toBe(0);
    expect((await fetch(`${server.url}/routes/echo`, { method: 'POST', body: bodyOf(2000) })).status).toBe(202);
  });
});
