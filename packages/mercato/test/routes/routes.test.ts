import { createHmac } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineProvider } from '../../src/app/define.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { createHttpApp, startHttpServer } from '../../src/http/server.ts';
import { prepareRoutes } from '../../src/routes/index.ts';
import { RouteLoadError, findRouteFiles, loadRoutes, routePathOf } from '../../src/routes/loader.ts';
import { SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';

const here = dirname(fileURLToPath(import.meta.url));
const fixture = (name: string) => resolve(here, '../fixtures', name);
const installed = new Set<string>([`default/${SHOP}`]);
const logLines: any[] = [];

const crm = defineProvider({ name: 'crm', ui: { fields: { key: { type: 'password', label: 'Key' } } }, methods: { ping: (config: { key: string }) => config.key.length } });
const app = defineApp({ providers: { crm } });
const instance = app.defineConfig({
  flows: {
    handleCallback: app.defineFlow({ name: 'handleCallback', input: z.object({ orderId: z.number() }), concurrency: null, run: (_ctx, input) => ({ handled: input.orderId }) }),
  },
  worker: { pollIntervalMs: 25, pollMaxIntervalMs: 100 },
});

describe('route files', () => {
  it('maps files to paths', () => {
    expect(routePathOf('index.ts')).toBe('/routes');
    expect(routePathOf('callback.ts')).toBe('/routes/callback');
    expect(routePathOf(join('orders', '[id].ts'))).toBe('/routes/orders/:id');
    expect(routePathOf(join('shops', '[shop]', 'orders', '[orderId].ts'))).toBe('/routes/shops/:shop/orders/:orderId');
    expect(routePathOf(join('admin', 'index.mts'))).toBe('/routes/admin');
  });

  it('ignores files and folders starting with _', () => {
    const paths = findRouteFiles(join(fixture('routes-app'), 'routes')).map((r) => r.path);
    expect(paths).not.toContain('/routes/_private');
    expect(paths.some((p) => p.includes('_drafts'))).toBe(false);
    expect(paths).toContain('/routes/orders/:id');
  });

  it('fails start-up when two files map to one path, naming both', () => {
    expect(() => findRouteFiles(join(fixture('clash-app'), 'routes'))).toThrow(/routes\/a\.ts and routes\/a\/index\.ts both map to \/routes\/a/);
  });

  it('fails start-up for a route file without auth, naming the file', async () => {
    await expect(loadRoutes(join(fixture('noauth-app'), 'routes'))).rejects.toThrow(RouteLoadError);
    await expect(loadRoutes(join(fixture('noauth-app'), 'routes'))).rejects.toThrow(/routes\/hook\.ts: declares no auth/);
  });
});

describeEngines('public routes over HTTP', (get) => {
  let t: TestRuntime;
  let url: string;
  const sign = (body: string) => createHmac('sha256', 'route-secret').update(body).digest('hex');

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, new Writable({ write(chunk, _enc, cb) { logLines.push(JSON.parse(chunk.toString())); cb(); } }));
    t = await startTestRuntime(instance, get().db, { worker: true, logger });
    const runtime = { ...t.runtime, projectDir: fixture('routes-app') };
    const routes = await prepareRoutes(runtime, { isActive: async (a, s) => installed.has(`${a}/${s}`) });
    const server = await startHttpServer(createHttpApp(t.runtime, { extra: routes.mount }), { port: 0, hostname: '127.0.0.1' });
    t.runtime.onClose(() => server.close());
    url = server.url;
  });
  afterAll(() => t?.close());

  it('serves index.ts at /routes with no CORS headers added', async () => {
    const res = await fetch(`${url}/routes`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ hello: 'routes' });
    expect([...res.headers.keys()].filter((h) => h.startsWith('access-control'))).toEqual([]);
  });

  it('passes path parameters, nested and several; static files win over parameters', async () => {
    expect(await (await fetch(`${url}/routes/orders/1001`)).json()).toEqual({ orderId: '1001' });
    expect(await (await fetch(`${url}/routes/orders/new`)).text()).toBe('static wins');
    const del = await fetch(`${url}/routes/orders/77`, { method: 'DELETE' });
    expect([del.status, del.headers.get('x-deleted')]).toEqual([204, '77']);
  });

  it('answers 405 with an Allow header listing the file\'s methods', async () => {
    const res = await fetch(`${url}/routes/orders/1`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, DELETE, HEAD');
    const put = await fetch(`${url}/routes`, { method: 'PUT' });
    expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    const head = await fetch(`${url}/routes`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const options = await fetch(`${url}/routes/options`, { method: 'OPTIONS' });
    expect([options.status, options.headers.get('allow')]).toEqual([204, 'OPTIONS, POST']);
  });

  it('never serves files or folders starting with _', async () => {
    expect((await fetch(`${url}/routes/_private`)).status).toBe(404);
    expect((await fetch(`${url}/routes/_drafts/secret`)).status).toBe(404);
  });

  it('does not parse bodies: the handler gets the raw bytes', async () => {
    const res = await fetch(`${url}/routes/options`, { method: 'POST', body: 'a=1&b=2', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(await res.text()).toBe('a=1&b=2');
  });

  it('auth and handler both read the body; the route dispatches a flow and answers 202 with the result', async () => {
    const body = JSON.stringify({ shop: SHOP, orderId: 42 });
    const res = await fetch(`${url}/routes/callback`, { method: 'POST', body, headers: { 'x-signature': sign(body) } });
    expect(res.status).toBe(202);
    const result = (await res.json()) as { runId: string; status: string; authSawBytes: number };
    expect(result).toMatchObject({ status: 'pending', authSawBytes: body.length });
    const run = await waitForRun(get().db, result.runId);
    expect(run.output).toEqual({ handled: 42 });
  });

  it('auth returning null is 401; returning a Response sends it as is', async () => {
    const body = JSON.stringify({ shop: SHOP, orderId: 1 });
    const bad = await fetch(`${url}/routes/callback`, { method: 'POST', body, headers: { 'x-signature': sign('other') } });
    expect(bad.status).toBe(401);
    expect((await fetch(`${url}/routes/errors/auth-null`)).status).toBe(401);
    const teapot = await fetch(`${url}/routes/errors/auth-response`);
    expect([teapot.status, teapot.headers.get('x-from'), await teapot.text()]).toEqual([418, 'auth', 'go away']);
  });

  it('thrown errors and non-Response results are logged and answered with a generic 500', async () => {
    for (const path of ['errors/throws', 'errors/not-response', 'errors/auth-throws']) {
      const res = await fetch(`${url}/routes/${path}`);
      expect(res.status, path).toBe(500);
      const body = (await res.json()) as { error: string; requestId: string };
      expect(Object.keys(body).sort()).toEqual(['error', 'requestId']);
      expect(body.error).toBe('Internal server error');
      expect(JSON.stringify(body)).not.toMatch(/hunter2|abc123|not a Response/);
      expect(logLines.some((l) => l.requestId === body.requestId && l.level === 50)).toBe(true);
    }
  });

  it('forShop resolves an active installation, normalises the domain, and exposes connectors but no config', async () => {
    const res = await fetch(`${url}/routes/shops/${SHOP.toUpperCase()}/orders/9`);
    // the auth function of this route only accepts lower-case domains ending in .myshopify.com
    expect(res.status).toBe(401);
    const ok = await fetch(`${url}/routes/shops/${SHOP}/orders/9`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ shop: SHOP, app: 'default', orderId: '9', providerKeys: ['crm'], tenantKeys: ['shop', 'app', 'providers'] });
    const missing = await fetch(`${url}/routes/shops/not-installed.myshopify.com/orders/9`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'Shop "not-installed.myshopify.com" has no active installation' });
    // a callback whose signed body names an uninstalled shop is refused by forShop inside auth
    const body = JSON.stringify({ shop: 'not-installed.myshopify.com', orderId: 1 });
    expect((await fetch(`${url}/routes/callback`, { method: 'POST', body, headers: { 'x-signature': sign(body) } })).status).toBe(404);
  });
});
