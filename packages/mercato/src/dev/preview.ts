/**
 * The admin preview of `mercato dev`: a development-only way to mint session tokens for a chosen shop, so the
 * admin API and the admin UI can be used in a plain browser. Never mounted outside `mercato dev`, and
 * every request is refused when NODE_ENV=production.
 */
import { Hono } from 'hono';
import { isShopDomain } from '../app/shop.ts';
import type { ResolvedPlatform } from '../app/platform.ts';
import { signSessionToken } from '../http/session-token.ts';

export const PREVIEW_PREFIX = '/__mercato/preview';
export const DEV_SHOPS = ['demo-1.myshopify.com', 'demo-2.myshopify.com'];

export interface PreviewOptions {
  platform: ResolvedPlatform;
  shops: () => string[] | Promise<string[]>;
  /** Read on each request so a process whose NODE_ENV changes cannot mint tokens. */
  isProduction: () => boolean;
  ttlSeconds?: number;
}

export function createPreviewRouter(options: PreviewOptions): Hono {
  const app = new Hono();
  app.use('*', async (c, next) => {
    if (options.isProduction()) return c.json({ error: 'The admin preview is disabled when NODE_ENV=production' }, 403);
    // The page answers at the prefix with and without its trailing slash (the mounted '/' route matches only without).
    if (c.req.method === 'GET' && c.req.path.endsWith('/')) return c.html(previewPage());
    await next();
  });
  app.get('/shops', async (c) =>
    c.json({ shops: await options.shops(), apps: options.platform.apps.map((a) => ({ handle: a.handle, apiKey: a.apiKey })) }),
  );
  app.post('/session-token', async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return c.json({ error: 'Body must be JSON: { "shop": "<domain>", "app"?: "<handle>" }' }, 400);
    }
    const { shop, app: handle } = (body ?? {}) as { shop?: unknown; app?: unknown };
    if (!isShopDomain(shop)) return c.json({ error: 'shop: must be a shop domain like demo-1.myshopify.com', field: 'shop' }, 400);
    const target = typeof handle === 'string' ? options.platform.byHandle(handle) : options.platform.apps[0];
    if (!target) return c.json({ error: `app: unknown app handle "${String(handle)}"`, field: 'app' }, 400);
    const ttl = options.ttlSeconds ?? 60;
    const token = signSessionToken({ apiKey: target.apiKey, apiSecret: target.apiSecret, shop, ttlSeconds: ttl });
    return c.json({ token, shop, app: target.handle, expiresInSeconds: ttl });
  });
  app.get('/', (c) => c.html(previewPage()));
  return app;
}

/**
 * The shop picker: choose a shop (and an app in multi-app mode), then "Open the admin" loads the admin UI at `next`
 * (default `/`) with `?preview-shop=&preview-app=`; the UI keeps the choice for the tab and mints its tokens here.
 */
function previewPage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Mercato admin preview</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<style>body{font:15px system-ui,sans-serif;margin:2rem auto;max-width:40rem;padding:0 1rem;color:#303030}
label{display:block;margin:1rem 0 .25rem;font-weight:600}select,button{font:inherit;padding:.4rem .6rem}
button{margin-top:1.25rem;background:#303030;color:#fff;border:0;border-radius:.5rem;padding:.5rem 1rem;cursor:pointer}
button:focus-visible,select:focus-visible{outline:2px solid #005bd3;outline-offset:2px}.note{color:#616161}#error{color:#8e0b21}</style></head>
<body><main><h1>Mercato admin preview</h1>
<p class="note">Development only. Pick a shop to open the admin UI as that shop: the UI gets short-lived session tokens from
this page's server, signed with the app's secret, as the platform's admin would give them.</p>
<form id="pick"><label for="shop">Shop</label><select id="shop" name="shop" required></select>
<div id="app-field" hidden><label for="app">App</label><select id="app" name="app"></select></div>
<button type="submit">Open the admin</button><p id="error" role="alert"></p></form></main>
<script type="module">
const base = location.pathname.replace(/\\/$/, '');
const params = new URLSearchParams(location.search);
const next = params.get('next') || '/';
const shopSel = document.getElementById('shop');
const appSel = document.getElementById('app');
try {
  const { shops, apps } = await (await fetch(base + '/shops')).json();
  for (const s of shops) shopSel.add(new Option(s, s));
  for (const a of apps) appSel.add(new Option(a.handle, a.handle));
  document.getElementById('app-field').hidden = apps.length < 2;
  if (shops.length === 0) document.getElementById('error').textContent = 'No shop to preview: install the app on a shop first.';
} catch (e) {
  document.getElementById('error').textContent = 'Could not list the shops: ' + e.message;
}
document.getElementById('pick').addEventListener('submit', (event) => {
  event.preventDefault();
  const target = new URL(next.startsWith('/') && !next.startsWith('//') ? next : '/', location.origin);
  target.searchParams.set('preview-shop', shopSel.value);
  if (appSel.options.length > 1) target.searchParams.set('preview-app', appSel.value);
  location.assign(target.pathname + target.search);
});
</script></body></html>`;
}
