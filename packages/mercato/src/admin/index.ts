/**
 * Serves the built admin UI (packages/admin-ui) at `/`: hashed files under /assets/ with a year-long immutable cache,
 * other files of the build (favicon) with a short cache, and index.html, with the boot config added, for every other
 * GET that is not the API, MCP, webhooks, public routes, health or the dev preview (client-side routes: /runs/…).
 *
 * Inside the platform's admin (the page is opened with `shop` and `host` in its query), index.html also gets App Bridge
 * (`<meta name="shopify-api-key">` + the platform's app-bridge.js, the only script loaded from elsewhere) so the UI
 * can ask `shopify.idToken()` for session tokens. Anywhere else nothing is loaded from outside this server.
 * Files come from Hono's serveStatic (@hono/node-server), every answer gets an ETag (hono/etag: If-None-Match → 304)
 * and compressible ones are gzipped when asked (hono/compress, which then weakens the ETag).
 * See docs/admin-ui.md.
 */
import { existsSync } from 'node:fs';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { compress } from 'hono/compress';
import { etag } from 'hono/etag';
import type { ResolvedApp, ResolvedPlatform } from '../app/platform.ts';
import { isShopDomain } from '../app/shop.ts';
import { readIndexHtml, resolveAdminUiDir } from './assets.ts';

export const APP_BRIDGE_URL = 'https://cdn.shopify.com/shopifycloud/app-bridge.js';
export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';
export const SHORT_CACHE = 'public, max-age=3600';
export const INDEX_CACHE = 'no-cache';

/** Paths the UI never answers: other parts of the server own them (a miss there stays a JSON 404). */
export const RESERVED_PREFIXES = [
  '/api',
  '/mcp',
  '/routes',
  '/webhooks',
  '/__mercato',
  '/healthz',
  '/readyz',
  '/metrics',
  '/assets',
  // RFC 8615 metadata (OAuth discovery of MCP clients among others): never the admin UI's index.html
  '/.well-known',
];

/** Where App Bridge comes from: Shopify's own path of its CDN (the rest of cdn.shopify.com also serves shops' uploads). */
export const APP_BRIDGE_SOURCE = 'https://cdn.shopify.com/shopifycloud/';

/**
 * The Content-Security-Policy of index.html (docs/security.md, "Admin UI"). The built UI is module scripts and
 * stylesheets from /assets/ (the charts' chunk loaded on demand), JSON from this server, data: images in the stylesheet and style attributes set by Polaris;
 * the boot config is a JSON data block, which no policy needs to allow. Inside the platform's admin App Bridge is added (script and connections to the
 * platform's hosts) and only that shop's admin and admin.shopify.com may frame the page; elsewhere only the page itself.
 */
export function adminCsp(embedded?: { shop: string }): string {
  const directives = [
    "default-src 'self'",
    `script-src 'self'${embedded ? ` ${APP_BRIDGE_SOURCE}` : ''}`,
    // Polaris sets style attributes from its scripts; inline styles cannot run code, scripts stay limited to files
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self'${embedded ? ' https://*.shopify.com' : ''}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    `frame-ancestors ${embedded ? `https://${embedded.shop} https://admin.shopify.com` : "'self'"}`,
  ];
  return `${directives.join('; ')};`;
}

export interface AdminUiOptions {
  platform: Pick<ResolvedPlatform, 'apps' | 'byHandle'>;
  /** Path of the admin preview when mounted (mercato dev), told to the UI so it can get tokens there. */
  previewPath?: string | null;
  version: string;
  /** Folder of the build (default: resolveAdminUiDir()). */
  dir?: string;
}

function isReserved(path: string): boolean {
  return RESERVED_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

function escapeAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** JSON that is safe inside a <script> element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** The `aud` claim of a JWT, unverified: only used to pick which public API key App Bridge gets. */
function audienceOf(idToken: string | undefined): string | undefined {
  const payload = idToken?.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { aud?: unknown };
    return typeof claims.aud === 'string' ? claims.aud : undefined;
  } catch {
    return undefined;
  }
}

/** The app an embedded page belongs to: `?app=<handle>`, else the audience of `?id_token=`, else the first app. */
export function embeddedApp(platform: AdminUiOptions['platform'], query: Record<string, string | undefined>): ResolvedApp | undefined {
  if (query.app) {
    const byHandle = platform.byHandle(query.app);
    if (byHandle) return byHandle;
  }
  const aud = audienceOf(query.id_token);
  return platform.apps.find((a) => a.apiKey === aud) ?? platform.apps[0];
}

export interface IndexContext {
  /** Set inside the platform's admin: App Bridge is added for this app and shop. */
  embedded?: { apiKey: string; shop: string };
  apps: { handle: string; apiKey: string }[];
  previewPath: string | null;
  version: string;
}

/** index.html with the boot config (and App Bridge when embedded) right after `<meta charset>`, before any other script. */
export function renderIndex(html: string, ctx: IndexContext): string {
  const boot = { apps: ctx.apps, preview: ctx.previewPath, embedded: !!ctx.embedded, version: ctx.version };
  const tags: string[] = [];
  if (ctx.embedded) {
    tags.push(`<meta name="shopify-api-key" content="${escapeAttr(ctx.embedded.apiKey)}" />`, `<script src="${APP_BRIDGE_URL}"></script>`);
  }
  tags.push(`<script id="mercato-boot" type="application/json">${scriptJson(boot)}</script>`);
  const block = `\n    ${tags.join('\n    ')}`;
  const charset = /<meta\s+charset=[^>]*>/i.exec(html);
  if (charset) return html.slice(0, charset.index + charset[0].length) + block + html.slice(charset.index + charset[0].length);
  const head = /<head[^>]*>/i.exec(html);
  if (head) return html.slice(0, head.index + head[0].length) + block + html.slice(head.index + head[0].length);
  return block + html;
}

function notBuiltPage(dir: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Mercato admin</title></head>
<body style="font:15px system-ui,sans-serif;margin:2rem;max-width:48rem"><h1>The admin UI is not built</h1>
<p>No <code>index.html</code> in <code>${escapeAttr(dir)}</code>. Build it with <code>npm run build -w packages/admin-ui</code>
(the root <code>npm start</code> does this), or point <code>MERCATO_ADMIN_UI_DIR</code> at a build.</p></body></html>`;
}

/** A dot file or folder anywhere in the path (serveStatic itself refuses only `.` and `..` segments). */
function isHidden(path: string): boolean {
  return path.split('/').some((segment) => segment.startsWith('.'));
}

/**
 * serveStatic over the build folder with our headers on every file it finds; created once the folder exists (the build
 * may appear after start-up, and serveStatic complains about a missing root). Hidden files are never served.
 */
function buildFiles(dir: string, cacheControl: string): MiddlewareHandler {
  let files: MiddlewareHandler | undefined;
  return async (c, next) => {
    if (isHidden(decodePath(c.req.path))) return next();
    if (!files) {
      if (!existsSync(dir)) return next();
      files = serveStatic({ root: dir });
    }
    const res = await files(c, next);
    // on the Response itself: headers set from serveStatic's onFound do not reach it in every path (app.request)
    if (res instanceof Response) {
      res.headers.set('Cache-Control', cacheControl);
      res.headers.set('X-Content-Type-Options', 'nosniff');
    }
    return res;
  };
}

export function mountAdminUi(app: Hono<any>, options: AdminUiOptions): void {
  const dir = options.dir ?? resolveAdminUiDir();
  const apps = options.platform.apps.map((a) => ({ handle: a.handle, apiKey: a.apiKey }));
  const assets = buildFiles(dir, IMMUTABLE_CACHE);
  const otherFiles = buildFiles(dir, SHORT_CACHE);

  // compress() outside etag(): the ETag is the digest of the identity bytes, weakened (W/) when gzipped
  app.get('/assets/*', compress(), etag(), assets, (c) => c.json({ error: 'Not found' }, 404));

  app.get('*', compress(), etag(), async (c, next) => {
    const path = decodePath(c.req.path);
    if (isReserved(path)) return next();
    const last = path.split('/').pop() ?? '';
    // A file of the build (favicon.svg, robots.txt); a missing one is a 404, never index.html.
    if (last.includes('.') && path !== '/index.html') return otherFiles(c, next);
    return serveIndex(c, dir, apps, options);
  });
}

async function serveIndex(c: Context, dir: string, apps: IndexContext['apps'], options: AdminUiOptions): Promise<Response> {
  const index = await readIndexHtml(dir);
  const headers: Record<string, string> = {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': INDEX_CACHE,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'strict-origin-when-cross-origin',
  };
  if (index === undefined) {
    // The explanation page: no script, one inline style attribute.
    headers['content-security-policy'] = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'self';";
    return c.body(notBuiltPage(dir), 503, headers);
  }
  const query = c.req.query();
  const shop = query.shop?.toLowerCase();
  let embedded: IndexContext['embedded'];
  if (shop && isShopDomain(shop) && query.host) {
    const target = embeddedApp(options.platform, query);
    if (target) embedded = { apiKey: target.apiKey, shop };
  }
  headers['content-security-policy'] = adminCsp(embedded);
  const html = renderIndex(index, { embedded, apps, previewPath: options.previewPath ?? null, version: options.version });
  return c.body(html, 200, headers);
}

function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
