import { createHmac } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeEngines } from '../../src/db/testing.ts';
import { markUninstalled, saveInstallation } from '../../src/platform/store.ts';
import { saveProviderConfig } from '../../src/providers/save.ts';
import { FlowConcurrencyError } from '../../src/routes/errors.ts';
import { RouteLoadError, compareRoutePaths, findRouteFiles, loadRoutes, routePathOf } from '../../src/routes/loader.ts';
import type { Runtime } from '../../src/runtime.ts';
import { serve } from '../../src/serve.ts';
import { app } from '../fixtures/routes-app/app.ts';
import { SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { capturingLogger } from '../kit/index.ts';

const here = dirname(fileURLToPath(import.meta.url));
const fixture = (name: string) => resolve(here, '../fixtures', name);
const UNINSTALLED = 'gone-shop.myshopify.com';
const { logger: routesLogger, lines: logLines } = capturingLogger('info');
/** Holds every run of the `slow` flow active until released (reset for each engine). */
let gate = deferred();

function deferred() {
  let resolvePromise!: () => void;
  const promise = new Promise<void>((r) => (resolvePromise = r));
  return { promise, resolve: resolvePromise };
}

const instance = app.defineConfig({
  flows: {
    handleCallback: app.defineFlow({
      name: 'handleCallback',
      input: z.object({ orderId: z.number() }),
      concurrency: null,
      run: (_ctx, input) => ({ handled: input.orderId }),
    }),
    slow: app.defineFlow({ name: 'slow', input: z.object({}), concurrency: 1, run: async () => gate.promise.then(() => 'released') }),
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
    expect(() => findRouteFiles(join(fixture('clash-app'), 'routes'))).toThrow(
      /routes\/a\.ts and routes\/a\/index\.ts both map to \/routes\/a/,
    );
  });

  it('fails start-up for a route file without auth, naming the file', async () => {
    await expect(loadRoutes(join(fixture('noauth-app'), 'routes'))).rejects.toThrow(RouteLoadError);
    await expect(loadRoutes(join(fixture('noauth-app'), 'routes'))).rejects.toThrow(/routes\/hook\.ts: declares no auth/);
  });

  it('orders static segments before parameters, depth by depth', () => {
    const paths = [
      '/routes/shops/:shop/orders/:orderId',
      '/routes/shops/:shop/orders/new',
      '/routes/orders/:id',
      '/routes/orders/new',
      '/routes/:a/b',
      '/routes/x/:b',
    ];
    expect([...paths].sort(compareRoutePaths)).toEqual([
      '/routes/orders/new',
      '/routes/orders/:id',
      '/routes/x/:b',
      '/routes/shops/:shop/orders/new',
      '/routes/shops/:shop/orders/:orderId',
      '/routes/:a/b',
    ]);
  });
});

describeEngines('public routes over HTTP', (get) => {
  let t: TestRuntime;
  let runtime: Runtime;
  let url: string;
  const sign = (body: string) => createHmac('sha256', 'route-secret').update(body).digest('hex');
  const lastError = (requestId: string) => logLines.find((l) => l.requestId === requestId && l.level === 50);

  beforeAll(async () => {
    gate = deferred();
    t = await startTestRuntime(instance, get().db, { worker: true, logger: routesLogger });
    // the real server start of `mercato dev`/`start`: serve() loads <projectDir>/routes, forShop reads the installations table
    runtime = { ...t.runtime, projectDir: fixture('routes-app') };
    const exec = get().db.query;
    await saveInstallation(exec, runtime.secrets, { appHandle: 'default', shop: SHOP, accessToken: 'shpat_one', scopes: null });
    await saveInstallation(exec, runtime.secrets, { appHandle: 'default', shop: UNINSTALLED, accessToken: 'shpat_gone', scopes: null });
    await markUninstalled(exec, 'default', UNINSTALLED);
    await saveProviderConfig({ db: runtime.db, secrets: runtime.secrets, providers: runtime.config.providers }, 'default', SHOP, 'crm', {
      config: { key: 'abc123' },
    });
    url = (await serve(runtime, { port: 0, hostname: '127.0.0.1' })).url;
  });
  afterAll(async () => {
    gate.resolve();
    await t?.close();
  });

  it('serve() refuses to start with a route clash or a route without auth, naming the files', async () => {
    const start = (app: string) => serve({ ...t.runtime, projectDir: fixture(app) }, { port: 0, hostname: '127.0.0.1' });
    await expect(start('clash-app')).rejects.toThrow(/routes\/a\.ts and routes\/a\/index\.ts both map to \/routes\/a/);
    await expect(start('noauth-app')).rejects.toThrow(RouteLoadError);
    await expect(start('noauth-app')).rejects.toThrow(/routes\/hook\.ts: declares no auth/);
  });

  it('serves index.ts at /routes with no CORS headers added', async () => {
    const res = await fetch(`${url}/routes`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ hello: 'routes' });
    expect([...res.headers.keys()].filter((h) => h.startsWith('access-control'))).toEqual([]);
  });

  it('passes path parameters, nested and several; static files win over parameters at every depth', async () => {
    expect(await (await fetch(`${url}/routes/orders/1001`)).json()).toEqual({ orderId: '1001' });
    expect(await (await fetch(`${url}/routes/orders/new`)).text()).toBe('static wins');
    expect(await (await fetch(`${url}/routes/shops/${SHOP}/orders/new`)).text()).toBe('nested static wins');
    const del = await fetch(`${url}/routes/orders/77`, { method: 'DELETE' });
    expect([del.status, del.headers.get('x-deleted')]).toEqual([204, '77']);
  });

  it("answers 405 with an Allow header listing the file's methods", async () => {
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
    const res = await fetch(`${url}/routes/options`, {
      method: 'POST',
      body: 'a=1&b=2',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
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

  it('any other auth result, undefined included, reaches the handler as ctx.auth', async () => {
    for (const [v, expected] of [
      ['undefined', { type: 'undefined', value: 'undefined' }],
      ['false', { type: 'boolean', value: false }],
      ['zero', { type: 'number', value: 0 }],
      ['empty', { type: 'string', value: '' }],
    ] as const) {
      const res = await fetch(`${url}/routes/auth-values?v=${v}`);
      expect(res.status, v).toBe(200);
      expect(await res.json(), v).toEqual(expected);
    }
  });

  it('thrown errors and non-Response results are logged and answered with a generic 500', async () => {
    for (const path of ['errors/throws', 'errors/not-response', 'errors/auth-throws']) {
      const res = await fetch(`${url}/routes/${path}`);
      expect(res.status, path).toBe(500);
      const body = (await res.json()) as { error: string; requestId: string };
      expect(Object.keys(body).sort()).toEqual(['error', 'requestId']);
      expect(body.error).toBe('Internal server error');
      expect(JSON.stringify(body)).not.toMatch(/hunter2|abc123|not a Response/);
      expect(lastError(body.requestId)).toBeDefined();
    }
  });

  it("forShop normalises the domain and calls provider methods through the tenant's connectors, never exposing config", async () => {
    const res = await fetch(`${url}/routes/tenant`, {
      method: 'POST',
      headers: { 'x-test-token': 'let-me-in' },
      body: JSON.stringify({ shop: ` ${SHOP.toUpperCase()} ` }),
    });
    expect(res.status).toBe(200);
    // ping(config, 2) = key length × 2: the method ran with the saved config, which the route never sees
    expect(await res.json()).toEqual({ shop: SHOP, app: 'default', ping: 12, tenantKeys: ['shop', 'app', 'providers'] });
    const ok = await fetch(`${url}/routes/shops/${SHOP}/orders/9`);
    expect(await ok.json()).toEqual({
      shop: SHOP,
      app: 'default',
      orderId: '9',
      providerKeys: ['crm'],
      tenantKeys: ['shop', 'app', 'providers'],
    });
  });

  it('an uncaught typed error (forShop: not installed, uninstalled, not a shop) is a logged generic 500 too', async () => {
    const tenant = (shop: string) =>
      fetch(`${url}/routes/tenant`, { method: 'POST', headers: { 'x-test-token': 'let-me-in' }, body: JSON.stringify({ shop }) });
    for (const [shop, logged] of [
      ['never-installed.myshopify.com', 'ShopNotInstalledError'],
      [UNINSTALLED, 'ShopNotInstalledError'], // a real installation row, marked uninstalled
      ['not a shop', 'InvalidShopError'],
    ]) {
      const res = await tenant(shop);
      expect(res.status, shop).toBe(500);
      const body = (await res.json()) as { error: string; requestId: string };
      expect(body, shop).toEqual({ error: 'Internal server error', requestId: body.requestId });
      expect(lastError(body.requestId)?.err?.type, shop).toBe(logged);
    }
    // a callback whose signed body names an uninstalled shop: forShop throws inside auth
    const body = JSON.stringify({ shop: UNINSTALLED, orderId: 1 });
    expect((await fetch(`${url}/routes/callback`, { method: 'POST', body, headers: { 'x-signature': sign(body) } })).status).toBe(500);
  });

  it('a route catches the typed dispatch conflict and answers 409 with existingRunId', async () => {
    const dispatch = () => fetch(`${url}/routes/limited?shop=${SHOP}`, { method: 'POST', headers: { 'x-test-token': 'let-me-in' } });
    const first = await dispatch();
    expect(first.status).toBe(202);
    const { runId } = (await first.json()) as { runId: string };
    const second = await dispatch();
    expect(second.status).toBe(409);
    expect(await second.json()).toEqual({ error: 'already running', existingRunId: runId });
    // the instance's dispatchFlow (what a route file imports from service.config.ts) throws the same typed error
    const conflict = await instance.dispatchFlow({ flowName: 'slow', input: {}, shop: SHOP }).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(FlowConcurrencyError);
    expect(conflict).toMatchObject({ name: 'FlowConcurrencyError', flowName: 'slow', existingRunId: runId });
    gate.resolve();
    expect((await waitForRun(get().db, runId)).output).toBe('released');
  });
});
