/**
 * Early refusals reach fetch clients (issue 34, items 2 and 3): a body over a limit is answered 413 before it is read,
 * and Node's `fetch` (undici, what the official MCP SDK uses) must see that 413, not `fetch failed` / EPIPE, with a
 * Content-Length and with a chunked body, on /api, /mcp and /webhooks; a body a handler never reads does not break the
 * next request on the same keep-alive connection.
 */
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { MAX_API_BODY_BYTES } from '../../src/http/server.ts';
import { MAX_REQUEST_BYTES } from '../../src/mcp/rpc.ts';
import { MAX_WEBHOOK_BODY_BYTES } from '../../src/platform/webhooks.ts';
import { type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { createMcpToken, flood, instance, signedWebhook } from './fixture.ts';

const TRIES = 10;

/** A body of `bytes` as one buffer (sent with a Content-Length) or as a stream of 64 KiB chunks (chunked). */
function body(bytes: number, chunked: boolean): { body: BodyInit; duplex?: 'half' } {
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  if (!chunked) return { body: new Uint8Array(bytes).fill(0x61) };
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      const n = Math.min(chunk.length, bytes - sent);
      sent += n;
      controller.enqueue(chunk.subarray(0, n));
    },
  });
  return { body: stream, duplex: 'half' };
}

describeEngines('early refusals, as fetch sees them', (get) => {
  let t: TestRuntime;
  let mcpSecret: string;
  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { http: true, env: { PLATFORM_ORIGIN: 'http://127.0.0.1:9' } });
    mcpSecret = await createMcpToken(t.url!, t.token());
  });
  afterAll(() => t?.close());

  const doors = () => [
    { door: '/api', path: '/api/flows/echo/run', limit: MAX_API_BODY_BYTES, headers: { authorization: `Bearer ${t.token()}` } },
    { door: '/mcp', path: '/mcp', limit: MAX_REQUEST_BYTES, headers: { authorization: `Bearer ${mcpSecret}` } },
    { door: '/webhooks', path: '/webhooks', limit: MAX_WEBHOOK_BODY_BYTES, headers: signedWebhook('{}') },
  ];

  for (const chunked of [false, true]) {
    it(`a body over the limit (${chunked ? 'chunked' : 'with a Content-Length'}): fetch gets the 413 ${TRIES} times out of ${TRIES} at every door`, async () => {
      const seen: Record<string, string[]> = {};
      for (const { door, path, limit, headers } of doors()) {
        seen[door] = [];
        for (let i = 0; i < TRIES; i++) {
          try {
            const res = await fetch(`${t.url}${path}`, {
              method: 'POST',
              headers: { ...headers, 'content-type': 'application/json' },
              ...body(limit + 24 * 1024 * 1024, chunked),
            } as RequestInit);
            const text = await res.text();
            seen[door].push(res.status === 413 && text.includes('must be at most') ? '413' : `${res.status} ${text.slice(0, 80)}`);
          } catch (error) {
            seen[door].push(`${(error as Error).message} (${String((error as { cause?: { code?: string } }).cause?.code)})`);
          }
        }
      }
      expect(seen).toEqual(Object.fromEntries(doors().map((d) => [d.door, Array(TRIES).fill('413')])));
    });
  }

  it('a body a handler does not read leaves the keep-alive connection usable for the next request', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (path: string, method: string, payload?: Buffer, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
        const req = httpRequest(`${t.url}${path}`, { method, agent, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, socket: req.socket }));
        });
        req.on('error', reject);
        req.end(payload);
      });
    try {
      // 900 KB to paths that answer without reading it: an authenticated cancel (its handler ignores the body), a 401
      // (no session token), a 404
      const big = Buffer.alloc(900 * 1024, 0x61);
      const auth = { authorization: `Bearer ${t.token()}`, 'content-type': 'application/json' };
      const { runId } = (await (await t.api('/api/flows/echo/run', { method: 'POST', json: { input: {} } })).json()) as { runId: string };
      for (let i = 0; i < 3; i++) {
        const cancel = await send(`/api/runs/${runId}/cancel`, 'POST', big, auth);
        expect([200, 409]).toContain(cancel.status);
        // the next request on the same connection is processed: a dispatch makes a run
        const next = await send('/api/flows/echo/run', 'POST', Buffer.from('{"input":{}}'), auth);
        expect(next.status).toBe(202);
      }
      const first = await send('/api/flows/echo/run', 'POST', big, { 'content-type': 'application/json' });
      expect(first.status).toBe(401);
      const second = await send('/healthz', 'GET');
      expect(second.status).toBe(200);
      const third = await send('/nowhere', 'POST', Buffer.alloc(60 * 1024, 0x61));
      expect(third.status).toBe(404);
      const fourth = await send('/healthz', 'GET');
      expect(fourth.status).toBe(200);
    } finally {
      agent.destroy();
    }
  });
});

describeEngines('webhook intake before the body (issue 34, item 1)', (get) => {
  let t: TestRuntime;
  beforeAll(async () => {
    // the smallest bound allowed, so that one webhook body in flight fills it
    t = await startTestRuntime(instance, get().db, {
      http: true,
      env: { PLATFORM_ORIGIN: 'http://127.0.0.1:9', MERCATO_MAX_BODY_BYTES_IN_FLIGHT: String(1024 * 1024) },
    });
  });
  afterAll(() => t?.close());

  it('a missing or malformed signature header, or invalid topic, shop or id headers: refused before the body is read', async () => {
    const url = `${t.url}/webhooks`;
    const good = signedWebhook('{}');
    const cases: Array<[string, Record<string, string | undefined>, number]> = [
      ['no signature header', { ...good, 'x-shopify-hmac-sha256': undefined }, 401],
      ['a signature that is not 44 base64 characters', { ...good, 'x-shopify-hmac-sha256': 'abc=' }, 401],
      ['a topic that is not one', { ...good, 'x-shopify-topic': '../../etc' }, 400],
      ['a shop that is not a shop domain', { ...good, 'x-shopify-shop-domain': 'evil.example.com' }, 400],
      ['no webhook id', { ...good, 'x-shopify-webhook-id': undefined }, 400],
    ];
    for (const [what, headers, status] of cases) {
      const defined = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)) as Record<string, string>;
      // an endless chunked body: the answer must come while it is still being sent (at most a few chunks in)
      const answer = await flood(url, 'POST', defined, 64 * 1024 * 1024);
      expect({ what, status: answer.status }).toEqual({ what, status });
      expect(answer.sentAtAnswer, what).toBeLessThan(4 * 1024 * 1024);
    }
  });

  it('100 unsigned 5 MiB POSTs at once: all 401, and the server reads none of them', async () => {
    const payload = new Uint8Array(5 * 1024 * 1024).fill(0x61); // one buffer, sent 100 times
    const before = t.runtime.bodies.peak;
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        fetch(`${t.url}/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: payload }).then(
          async (r) => (await r.text(), r.status),
          (e: Error) => `failed: ${e.message}`,
        ),
      ),
    );
    expect(answers).toEqual(Array(100).fill(401));
    // nothing was reserved: no body of them was read
    expect(t.runtime.bodies.peak).toBe(before);
  });

  it('above the bound of bodies in flight: 503 with Retry-After before the body is read; room again once the first is in', async () => {
    const url = `${t.url}/webhooks`;
    // a signed-looking delivery whose chunked body trickles in: it holds its reservation (the webhook limit, 5 MiB)
    const slow = new Promise<number>((resolve, reject) => {
      const req = httpRequest(url, { method: 'POST', headers: { ...signedWebhook('{}'), 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.write('{"id":');
      setTimeout(() => req.end('1}'), 1500);
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(t.runtime.bodies.inFlight).toBeGreaterThan(0);
    const refused = await fetch(url, { method: 'POST', headers: signedWebhook('{"id":2}'), body: '{"id":2}' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({ error: expect.stringMatching(/bodies/), retryAfterSeconds: 1 });
    // the slow one was signed for '{}', not for what it sent: 401 once it is read (it was let in)
    expect(await slow).toBe(401);
    expect(t.runtime.bodies.inFlight).toBe(0);
    const body = '{"id":3}';
    expect((await fetch(url, { method: 'POST', headers: signedWebhook(body), body })).status).toBe(200);
  });
});

describeEngines('slow and idle clients, and the connection cap (issue 34, item 4)', (get) => {
  let t: TestRuntime;
  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, {
      http: true,
      env: {
        PLATFORM_ORIGIN: 'http://127.0.0.1:9',
        MERCATO_HTTP_HEADERS_TIMEOUT_MS: '1000',
        MERCATO_HTTP_REQUEST_TIMEOUT_MS: '2000',
        MERCATO_HTTP_KEEP_ALIVE_TIMEOUT_MS: '1500',
        MERCATO_HTTP_MAX_CONNECTIONS: '16',
      },
    });
  });
  afterAll(() => t?.close());

  /** A raw TCP connection to the server: what it received, and when the server closed it (ms after `open`). */
  async function raw(first?: string) {
    const { port } = new URL(t.url!);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const opened = performance.now();
    let received = '';
    socket.on('data', (b) => (received += b.toString()));
    socket.on('error', () => {});
    const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now() - opened)));
    if (first) socket.write(first);
    return { socket, closed, received: () => received };
  }

  it('a connection that never sends, headers that never end, a body that never ends: each closed by its timeout', async () => {
    const idle = await raw();
    const slowHeaders = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const slowBody = await raw(
      `POST /api/flows/echo/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.token()}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"input":`,
    );
    const [idleMs, headersMs, bodyMs] = await Promise.all([idle.closed, slowHeaders.closed, slowBody.closed]);
    // headers: 1 s (+ Node's 1 s check); request: 2 s (+ the check); never Node's defaults (60 s and 300 s)
    expect(idleMs).toBeGreaterThan(900);
    expect(idleMs).toBeLessThan(5000);
    expect(headersMs).toBeGreaterThan(900);
    expect(headersMs).toBeLessThan(5000);
    expect(bodyMs).toBeGreaterThan(1900);
    expect(bodyMs).toBeLessThan(6000);
    expect(slowHeaders.received()).toMatch(/^HTTP\/1\.1 408/);
    expect(slowBody.received()).toMatch(/^HTTP\/1\.1 408/);
  }, 30_000);

  it('an idle kept-alive connection is closed after the keep-alive timeout', async () => {
    const conn = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const ms = await conn.closed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 200/);
    expect(ms).toBeGreaterThan(1000);
    expect(ms).toBeLessThan(5000);
  }, 30_000);

  it('beyond the connection cap a new connection is closed at once; once they go, requests are served again', async () => {
    const held = await Promise.all(Array.from({ length: 16 }, () => raw()));
    const extra = await raw();
    expect(await Promise.race([extra.closed, new Promise<number>((r) => setTimeout(() => r(-1), 1000))])).toBeGreaterThanOrEqual(0);
    expect(extra.received()).toBe('');
    for (const h of held) h.socket.destroy();
    await Promise.all(held.map((h) => h.closed));
    await new Promise((r) => setTimeout(r, 50));
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  }, 30_000);
});
