/** Serving the built admin UI: SPA fallback, content types, cache headers, App Bridge only when embedded, no traversal. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_BRIDGE_URL, IMMUTABLE_CACHE, adminCsp, INDEX_CACHE, SHORT_CACHE, mountAdminUi, renderIndex } from '../../src/admin/index.ts';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { type StartedHttpServer, startHttpServer } from '../../src/http/server.ts';
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
      expect(res.headers.get('content-security-policy')).toBe(adminCsp());
      expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'self';");
      const html = await res.text();
      expect(boot(html)).toEqual({
        apps: [
          { handle: 'alpha', apiKey: 'key-alpha' },
          { handle: 'beta', apiKey: 'key-beta' },
        ],
        preview: '/__mercato/preview',
        embedded: false,
        version: '1.2.3',
      });
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
    expect(embedded.headers.get('content-security-policy')).toBe(adminCsp({ shop: 'acme.myshopify.com' }));
    expect(embedded.headers.get('content-security-policy')).toContain(
      'frame-ancestors https://acme.myshopify.com https://admin.shopify.com;',
    );

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
    expect(icon.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
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
    const html = renderIndex(INDEX, {
      apps: [{ handle: 'x', apiKey: '</script><script>alert(1)</script>' }],
      previewPath: null,
      version: '1',
    });
    expect(html).not.toContain('</script><script>alert(1)');
    expect(boot(html).apps[0].apiKey).toBe('</script><script>alert(1)</script>');
  });
});

/** A raw GET over node:http: the bytes as sent (fetch would decompress them). */
function rawGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('admin UI over real HTTP: ETag and compression', () => {
  let server: StartedHttpServer;
  beforeAll(async () => {
    const ui = new Hono();
    mountAdminUi(ui, { platform, previewPath: null, version: '1.2.3', dir: fakeBuild() });
    ui.notFound((c) => c.json({ error: 'Not found' }, 404));
    server = await startHttpServer(ui, { port: 0, hostname: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('answers If-None-Match with 304 and no body, for a hashed asset and for index.html', async () => {
    for (const [path, cache] of [
      ['/assets/index-abc123.js', IMMUTABLE_CACHE],
      ['/runs', INDEX_CACHE],
      ['/favicon.svg', SHORT_CACHE],
    ] as const) {
      const first = await rawGet(`${server.url}${path}`);
      expect(first.status, path).toBe(200);
      expect(first.headers['cache-control'], path).toBe(cache);
      expect(first.headers['x-content-type-options'], path).toBe('nosniff');
      const tag = first.headers.etag as string;
      expect(tag, path).toMatch(/^"[^"]+"$/); // identity bytes: a strong ETag
      const again = await rawGet(`${server.url}${path}`, { 'if-none-match': tag });
      expect(again.status, path).toBe(304);
      expect(again.body.length, path).toBe(0);
      expect(again.headers.etag, path).toBe(tag);
      expect(again.headers['cache-control'], path).toBe(cache);
      // another tag, or a changed file, gets the full answer
      expect((await rawGet(`${server.url}${path}`, { 'if-none-match': '"something-else"' })).status, path).toBe(200);
    }
    // the ETag follows the content: index.html differs inside the platform admin
    const plain = (await rawGet(`${server.url}/`)).headers.etag;
    const embedded = (await rawGet(`${server.url}/?shop=acme.myshopify.com&host=x`)).headers.etag;
    expect(embedded).not.toBe(plain);
  });

  it('gzips when Accept-Encoding asks for it, and not otherwise', async () => {
    const gz = await rawGet(`${server.url}/assets/index-abc123.js`, { 'accept-encoding': 'gzip' });
    expect(gz.status).toBe(200);
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.headers.vary).toMatch(/accept-encoding/i);
    expect(gz.headers['cache-control']).toBe(IMMUTABLE_CACHE);
    expect(gz.body.length).toBeLessThan(JS.length);
    expect(gunzipSync(gz.body).toString()).toBe(JS);
    // compressed bytes carry the weak form of the same ETag, and revalidate with it
    const identity = await rawGet(`${server.url}/assets/index-abc123.js`);
    expect(identity.headers['content-encoding']).toBeUndefined();
    expect(identity.body.toString()).toBe(JS);
    expect(gz.headers.etag).toBe(`W/${identity.headers.etag as string}`);
    const revalidated = await rawGet(`${server.url}/assets/index-abc123.js`, {
      'accept-encoding': 'gzip',
      'if-none-match': gz.headers.etag as string,
    });
    expect(revalidated.status).toBe(304);
    // files under the compression threshold go as they are
    const css = await rawGet(`${server.url}/assets/index-abc123.css`, { 'accept-encoding': 'gzip' });
    expect(css.headers['content-encoding']).toBeUndefined();
    expect(css.body.toString()).toBe('body{margin:0}');
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
