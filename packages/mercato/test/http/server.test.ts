import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { readJsonBody } from '../../src/http/body.ts';
import { ConflictError, InvalidInputError, NotFoundError } from '../../src/errors.ts';
import { MAX_API_BODY_BYTES, PortUnavailableError, createHttpApp, startHttpServer } from '../../src/http/server.ts';
import type { ApiEnv, ApiRouteGroup } from '../../src/http/types.ts';
import { DEFAULT_APP, bearer, capturingLogger, makePlatform, startTestServer, tokenFor } from './helpers.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SECRET_MESSAGE = 'db password is hunter2 at /srv/app.ts:42';

function testGroup(): ApiRouteGroup {
  const app = new Hono<ApiEnv>();
  app.get('/boom', () => {
    throw new Error(SECRET_MESSAGE);
  });
  app.get('/conflict', () => {
    throw new ConflictError('A run of this flow is already active', { existingRunId: 'run-1' });
  });
  app.get('/bad', () => {
    throw new InvalidInputError('Invalid input', { field: 'limit', issues: [{ path: ['limit'], message: 'too big' }] });
  });
  app.get('/missing', () => {
    throw new NotFoundError();
  });
  app.get('/me', (c) => c.json({ requestId: c.get('requestId'), shop: c.get('tenant').shop }));
  app.post('/echo', async (c) => {
    const body = (await readJsonBody(c)) as { data: string };
    return c.json({ length: body.data.length });
  });
  return { prefix: '/api/test', app };
}

describe('HTTP server', () => {
  const captured = capturingLogger('debug');
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    server = await startTestServer({
      groups: [testGroup()],
      logger: captured.logger,
      extra: (app) => app.get('/hello', (c) => c.text('hi')),
    });
  });
  afterAll(async () => {
    await server.close();
  });
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, { ...init, headers: { ...bearer(tokenFor()), ...(init.headers as Record<string, string>) } });

  it('answers an unexpected error with a generic 500 and logs it under the same request id', async () => {
    const res = await call('/api/test/boom');
    expect(res.status).toBe(500);
    const text = await res.text();
    const body = JSON.parse(text);
    const requestId = res.headers.get('x-request-id');
    expect(requestId).toMatch(UUID_RE);
    expect(body).toEqual({ error: 'Internal server error', requestId });
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('.ts');
    const line = captured.lines.find((l) => l.level === 50 && l.requestId === requestId);
    expect(line).toBeDefined();
    expect(line!.err.message).toBe(SECRET_MESSAGE);
    expect(line!.err.stack).toContain('Error');
    expect(line!.path).toBe('/api/test/boom');
  });

  it('maps typed errors to their status and JSON body', async () => {
    let res = await call('/api/test/conflict');
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: 'A run of this flow is already active', existingRunId: 'run-1' });
    res = await call('/api/test/bad');
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'Invalid input', field: 'limit', issues: [{ path: ['limit'], message: 'too big' }] });
    res = await call('/api/test/missing');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'Not found' });
  });

  it('answers 404 JSON for unknown paths, inside and outside /api', async () => {
    for (const path of ['/api/unknown', '/api/test/nope', '/api/pages/nope', '/nowhere']) {
      const res = await call(path);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ error: 'Not found' });
    }
  });

  it('echoes a valid X-Request-Id and makes one otherwise', async () => {
    let res = await call('/api/test/me', { headers: { 'x-request-id': 'req-abc_123.4:5' } });
    expect(res.headers.get('x-request-id')).toBe('req-abc_123.4:5');
    expect(await res.json()).toEqual({ requestId: 'req-abc_123.4:5', shop: 'demo-1.myshopify.com' });
    for (const bad of ['has spaces in it', 'x'.repeat(129), '<script>']) {
      res = await call('/api/test/me', { headers: { 'x-request-id': bad } });
      expect(res.headers.get('x-request-id')).toMatch(UUID_RE);
    }
    res = await fetch(`${server.url}/api/test/me`);
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toMatch(UUID_RE);
    res = await fetch(`${server.url}/hello`, { headers: { 'x-request-id': 'from-client' } });
    expect(await res.text()).toBe('hi');
    expect(res.headers.get('x-request-id')).toBe('from-client');
    res = await fetch(`${server.url}/nowhere`, { headers: { 'x-request-id': 'nf-1' } });
    expect(res.headers.get('x-request-id')).toBe('nf-1');
  });

  it('accepts JSON bodies up to 1 MB and refuses larger ones with 413', async () => {
    const json = (n: number) => JSON.stringify({ data: 'a'.repeat(n - 11) });
    expect(json(100).length).toBe(100);
    let res = await call('/api/test/echo', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json(MAX_API_BODY_BYTES),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ length: MAX_API_BODY_BYTES - 11 });
    res = await call('/api/test/echo', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: json(MAX_API_BODY_BYTES + 1),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: `Request body must be at most ${MAX_API_BODY_BYTES} bytes` });
    // Without a Content-Length (chunked), the limit is enforced while reading.
    const big = new TextEncoder().encode(json(MAX_API_BODY_BYTES + 1));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < big.length; i += 64 * 1024) controller.enqueue(big.subarray(i, i + 64 * 1024));
        controller.close();
      },
    });
    res = await call('/api/test/echo', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
  });

  it('answers 400 for a body that is not JSON', async () => {
    const res = await call('/api/test/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"data": ' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'Request body must be JSON' });
  });

  it('writes an access log line without headers or query strings', async () => {
    const token = tokenFor();
    const res = await fetch(`${server.url}/api/test/me?token=querysecret`, {
      headers: { ...bearer(token), 'x-request-id': 'log-check-1' },
    });
    expect(res.status).toBe(200);
    const line = captured.lines.find((l) => l.msg === 'request' && l.requestId === 'log-check-1');
    // at info (the default level of a production log): its level follows the status
    expect(line).toMatchObject({ level: 30, method: 'GET', path: '/api/test/me', status: 200 });
    expect(typeof line!.durationMs).toBe('number');
    const missing = await fetch(`${server.url}/api/test/nowhere`, { headers: { ...bearer(token), 'x-request-id': 'log-check-2' } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-request-id')).toBe('log-check-2');
    expect(captured.lines.find((l) => l.msg === 'request' && l.requestId === 'log-check-2')).toMatchObject({ level: 40, status: 404 });
    const all = JSON.stringify(captured.lines);
    expect(all).not.toContain(token);
    expect(all).not.toContain('querysecret');
    expect(all).not.toContain(DEFAULT_APP.apiSecret);
  });

  it('refuses a group mounted outside /api', () => {
    const app = new Hono<ApiEnv>();
    const runtime = server.runtime;
    expect(() => createHttpApp(runtime, { groups: [{ prefix: '/flows', app }] })).toThrow(/\/api\/<name>/);
    expect(() => createHttpApp(runtime, { groups: [{ prefix: '/api/flows/', app }] })).toThrow(/\/api\/<name>/);
  });
});

describeEngines('GET /healthz and GET /readyz', (getDb) => {
  it('/healthz says alive without asking the database; /readyz reports it up, then down once it is closed', async () => {
    const { db } = getDb();
    const app = createHttpApp({
      config: { pages: { flows: 'disabled', providers: 'disabled', crons: 'disabled', functions: 'disabled', mcp: 'disabled' } },
      platform: makePlatform([DEFAULT_APP]),
      db,
      logger: capturingLogger().logger,
      version: '1.2.3',
    });
    const server = await startHttpServer(app, { port: 0, hostname: '127.0.0.1' });
    try {
      let res = await fetch(`${server.url}/healthz`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toMatch(UUID_RE);
      expect(await res.json()).toEqual({ ok: true, status: 'alive', version: '1.2.3', uptimeSeconds: expect.any(Number) });
      res = await fetch(`${server.url}/readyz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, status: 'ready', checks: { database: { ok: true } }, version: '1.2.3' });
      await db.close();
      res = await fetch(`${server.url}/readyz`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({
        ok: false,
        status: 'not ready',
        checks: { database: { ok: false, error: 'database unreachable' } },
        version: '1.2.3',
      });
      // alive all the same: an orchestrator must not restart a process because its database is away
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('startHttpServer', () => {
  it('binds port 0 to a free port and closes, waiting for the server', async () => {
    const app = new Hono();
    app.get('/', (c) => c.text('ok'));
    const server = await startHttpServer(app, { port: 0, hostname: '127.0.0.1' });
    expect(server.port).toBeGreaterThan(0);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect(await (await fetch(server.url)).text()).toBe('ok');
    await server.close();
    await server.close();
    await expect(fetch(server.url)).rejects.toThrow();
  });

  it('close() waits for a request in flight, which still gets its answer', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const app = new Hono();
    app.get('/slow', async (c) => {
      entered();
      await gate;
      return c.text('done');
    });
    const server = await startHttpServer(app, { port: 0, hostname: '127.0.0.1' });
    const pending = fetch(`${server.url}/slow`);
    await inHandler;
    let closed = false;
    const closing = server.close().then(() => {
      closed = true;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(false);
    release();
    const res = await pending;
    expect(await res.text()).toBe('done');
    await closing;
    expect(closed).toBe(true);
  });

  it('rejects when the port is taken, with a message saying what to do', async () => {
    const first = await startHttpServer(new Hono(), { port: 0, hostname: '127.0.0.1' });
    try {
      const error = await startHttpServer(new Hono(), { port: first.port, hostname: '127.0.0.1' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PortUnavailableError);
      expect(error).toMatchObject({ code: 'EADDRINUSE', port: first.port });
      expect((error as Error).message).toBe(
        `cannot listen on 127.0.0.1:${first.port}: the port is in use (another mercato process?). Stop that process, or pick another port with --port <n> or PORT (0 picks a free one)`,
      );
      const ops = await startHttpServer(new Hono(), {
        port: first.port,
        hostname: '127.0.0.1',
        portSetting: '--metrics-port <n> or MERCATO_METRICS_PORT',
      }).catch((e: unknown) => e);
      expect((ops as Error).message).toContain('pick another port with --metrics-port <n> or MERCATO_METRICS_PORT');
    } finally {
      await first.close();
    }
  });
});
