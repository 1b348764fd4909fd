/** Serving the built admin UI: SPA fallback, content types, cache headers, App Bridge only when embedded, no traversal. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_BRIDGE_URL, IMMUTABLE_CACHE, INDEX_CACHE, SHORT_CACHE, mountAdminUi, renderIndex } from '../../src/admin/index.ts';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { type TestRuntime, TEST_API_KEY, startTestRuntime } from '../helpers/runtime.ts';

const INDEX = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="UTF-8" />
    <title>Mercato admin</title>
    <script type="module" crossorigin src="/assets/index-abc123.js"></script>
  </head>
  <body><div id="root"></div></body>
</html>`;
const JS = `console.log(${JSON.stringify('x'.repeat(5000))});`;

function fakeBuild(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mercato-ui-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'assets', 'index-abc123.js'), JS);
  writeFileSync(join(dir, 'assets', 'index-abc123.css'), 'body{margin:0}');
  writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(dir, '.hidden'), 'secret');
  return dir;
}

const appA = { handle: 'alpha', apiKey: 'key-alpha', apiSecret: 's1', appUrl: null };
const appB = { handle: 'beta', apiKey: 'key-beta', apiSecret: 's2', appUrl: null };
const platform = { apps: [appA, appB], byHandle: (h: string) => [appA, appB].find((a) => a.handle === h) };

function boot(html: string): any {
  const m = /<script id="mercato-boot" type="application\/json">(.*?)<\/script>/s.exec(html);
  return m ? JSON.parse(m[1]!) : undefined;
}

describe('admin UI files', () => {
  const dir = fakeBuild();
  const app = new Hono();
  app.get('/api/pages', (c) => c.json({ pages: {} }));
  mountAdminUi(app, { platform, previewPath: '/__mercato/preview', version: '1.2.3', dir });
  app.notFound((c) => c.json({ error: 'Not found' }, 404));
  const get = (path: string, init?: RequestInit) => app.request(path, init);

  it('answers index.html with the boot config for / and every client-side route, never cached', async () => {
    for (const path of ['/', '/runs', '/runs/3f0c1f0e-1111-4111-8111-111111111111', '/mcp-tokens/x', '/no/such/page']) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe(INDEX_CACHE);
      expect(res.headers.get('content-security-policy')).toBe("frame-ancestors 'self';");
      const html = await res.text();
      expect(boot(html)).toEqual({ apps: [{ handle: 'alpha', apiKey: 'key-alpha' }, { handle: 'beta', apiKey: 'key-beta' }], preview: '/__mercato/preview', embedded: false, version: '1.2.3' });
      expect(html).not.toContain(APP_BRIDGE_URL);
      expect(html).not.toContain('apiSecret');
      expect(html).not.toContain('s1');
    }
  });

  it('adds App Bridge, first in <head>, only inside the platform admin (shop + host), for the app the page belongs to', async () => {
    const embedded = await get('/?shop=acme.myshopify.com&host=YWRtaW4&embedded=1');
    const html = await embedded.text();
    expect(html).toContain(`<meta name="shopify-api-key" content="key-alpha" />`);
    expect(html.indexOf(APP_BRIDGE_URL)).toBeGreaterThan(-1);
    expect(html.indexOf(APP_BRIDGE_URL)).toBeLessThan(html.indexOf('/assets/index-abc123.js'));
    expect(html.indexOf('<meta charset="UTF-8" />')).toBeLessThan(html.indexOf(APP_BRIDGE_URL));
    expect(boot(html).embedded).toBe(true);
    expect(embedded.headers.get('content-security-policy')).toBe('frame-ancestors https://acme.myshopify.com https://admin.shopify.com;');

    const byHandle = await (await get('/runs?shop=acme.myshopify.com&host=x&app=beta')).text();
    expect(byHandle).toContain('content="key-beta"');
    const payload = Buffer.from(JSON.stringify({ aud: 'key-beta', dest: 'https://acme.myshopify.com' })).toString('base64url');
    const byToken = await (await get(`/?shop=acme.myshopify.com&host=x&id_token=e30.${payload}.sig`)).text();
    expect(byToken).toContain('content="key-beta"');

    for (const query of ['?shop=acme.myshopify.com', '?host=x', '?shop=evil.com&host=x', '?preview-shop=acme.myshopify.com']) {
      expect(await (await get(`/${query}`)).text(), query).not.toContain(APP_BRIDGE_URL);
    }
  });

  it('serves hashed assets with their content type, a year-long immutable cache and gzip', async () => {
    const js = await get('/assets/index-abc123.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe(IMMUTABLE_CACHE);
    expect(await js.text()).toBe(JS);
    const css = await get('/assets/index-abc123.css');
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    const gz = await get('/assets/index-abc123.js', { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gunzipSync(Buffer.from(await gz.arrayBuffer())).toString()).toBe(JS);
    const icon = await get('/favicon.svg');
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.headers.get('cache-control')).toBe(SHORT_CACHE);
  });

  it('answers 404 (JSON, not index.html) for missing files, hidden files and traversal attempts', async () => {
    for (const path of ['/assets/missing.js', '/missing.png', '/.hidden', '/assets/..%2f..%2fpackage.json', '/..%2fetc%2fpasswd.txt']) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type'), path).toContain('application/json');
    }
  });

  it('leaves the API, MCP, webhooks, public routes, health and the preview to their owners', async () => {
    expect(await (await get('/api/pages')).json()).toEqual({ pages: {} });
    for (const path of ['/api/nope', '/mcp', '/webhooks/x', '/routes/hello', '/healthz', '/__mercato/preview/']) {
      const res = await get(path);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ error: 'Not found' });
    }
  });

  it('answers HEAD like GET, without a body', async () => {
    const res = await get('/runs', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await res.text()).toBe('');
  });

  it('explains how to build the UI when there is no build', async () => {
    const bare = new Hono();
    mountAdminUi(bare, { platform, version: '0', dir: join(tmpdir(), 'mercato-no-such-build') });
    const res = await bare.request('/');
    expect(res.status).toBe(503);
    expect(await res.text()).toContain('npm run build -w packages/admin-ui');
  });

  it('keeps the boot config inert inside its <script>', () => {
    const html = renderIndex(INDEX, { apps: [{ handle: 'x', apiKey: '</script><script>alert(1)</script>' }], previewPath: null, version: '1' });
    expect(html).not.toContain('</script><script>alert(1)');
    expect(boot(html).apps[0].apiKey).toBe('</script><script>alert(1)</script>');
  });
});

const app = defineApp();
const instance = app.defineConfig({ flows: {} });

describeEngines('admin UI in the real server', (get) => {
  let t: TestRuntime;
  const previous = process.env.MERCATO_ADMIN_UI_DIR;
  beforeAll(async () => {
    process.env.MERCATO_ADMIN_UI_DIR = fakeBuild();
    t = await startTestRuntime(instance, get().db, { http: true });
  });
  afterAll(async () => {
    if (previous === undefined) delete process.env.MERCATO_ADMIN_UI_DIR;
    else process.env.MERCATO_ADMIN_UI_DIR = previous;
    await t?.close();
  });

  it('serves the UI at / and client routes, while /api keeps its authentication and JSON errors', async () => {
    const home = await fetch(`${t.url}/`);
    expect(home.status).toBe(200);
    expect(boot(await home.text())).toMatchObject({ apps: [{ handle: 'default', apiKey: TEST_API_KEY }], preview: null });
    expect((await fetch(`${t.url}/runs/abc`)).status).toBe(200);
    const api = await fetch(`${t.url}/api/flows`);
    expect(api.status).toBe(401);
    expect(api.headers.get('content-type')).toContain('application/json');
    expect((await t.api('/api/pages')).status).toBe(200);
    expect(await (await t.api('/api/nope')).json()).toEqual({ error: 'Not found' });
    expect((await (await fetch(`${t.url}/healthz`)).json()).ok).toBe(true);
  });
});
