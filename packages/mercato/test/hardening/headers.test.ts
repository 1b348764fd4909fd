/**
 * Security headers and CORS over real HTTP, on the app `mercato start` serves (the real admin UI build included):
 * the admin UI's and custom pages' Content-Security-Policy (framed only by the shop's admin when embedded, scripts from
 * this server and App Bridge only), nosniff and Referrer-Policy; the locked-down policy of every JSON answer; public
 * routes left as their handlers made them; and the CORS rule of docs/security.md: no endpoint ever sends CORS headers,
 * so a preflight from any origin is refused and a browser on another origin cannot read an answer.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_BRIDGE_SOURCE, APP_BRIDGE_URL } from '../../src/admin/index.ts';
import { resolveAdminUiDir } from '../../src/admin/assets.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { startHttpServer } from '../../src/http/server.ts';
import { API_CSP } from '../../src/http/request.ts';
import { buildApp } from '../../src/serve.ts';
import { type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { bearer, startTestServer, tokenFor } from '../http/helpers.ts';
import { createMcpToken, instance, rpc, signedWebhook } from './fixture.ts';

const FOREIGN = 'https://evil.example';
const SHOP_DOMAIN = 'acme.myshopify.com';

/** `a b; c d e` → { a: ['b'], c: ['d', 'e'] }. */
function directives(csp: string | null): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const part of (csp ?? '').split(';')) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) out[name.toLowerCase()] = values;
  }
  return out;
}

/** True when `url` is allowed by one source expression list (the subset our policies use: 'self', scheme+host, path prefixes). */
function allowedBy(sources: string[], url: URL, self: string): boolean {
  return sources.some((source) => {
    if (source === "'self'") return url.origin === self;
    if (!source.startsWith('https://')) return false;
    const s = new URL(source);
    if (s.origin !== url.origin) return false;
    return source.endsWith('/') ? url.pathname.startsWith(s.pathname) : url.pathname === s.pathname || s.pathname === '/';
  });
}

const corsHeaders = (res: Response) => [...res.headers.keys()].filter((name) => name.startsWith('access-control-'));

const hasBuild = existsSync(`${resolveAdminUiDir()}/index.html`);

describeEngines('security headers and CORS', (get) => {
  let t: TestRuntime;
  let url: string;
  let mcpSecret: string;

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { env: { PLATFORM_ORIGIN: 'http://127.0.0.1:9' } });
    const server = await startHttpServer(buildApp(t.runtime), { port: 0, hostname: '127.0.0.1' });
    t.runtime.onClose(() => server.close());
    url = server.url;
    mcpSecret = await createMcpToken(url, t.token());
  });
  afterAll(() => t?.close());

  const get$ = (path: string, init: RequestInit = {}) => fetch(`${url}${path}`, init);

  it.skipIf(!hasBuild)(
    'the admin UI (and a custom page path) outside the admin: framed by itself only, scripts from this server only',
    async () => {
      for (const path of ['/', '/runs', '/reports/daily']) {
        const res = await get$(path);
        expect(res.status, path).toBe(200);
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
        expect(res.headers.get('referrer-policy')).toBe('strict-origin-when-cross-origin');
        const d = directives(res.headers.get('content-security-policy'));
        expect(d['frame-ancestors'], path).toEqual(["'self'"]);
        expect(d['default-src']).toEqual(["'self'"]);
        expect(d['script-src']).toEqual(["'self'"]);
        expect(d['object-src']).toEqual(["'none'"]);
        expect(d['base-uri']).toEqual(["'none'"]);
        expect(d['connect-src']).toEqual(["'self'"]);
        expect(d['style-src']).toEqual(["'self'", "'unsafe-inline'"]); // Polaris sets style attributes
        for (const [name, values] of Object.entries(d)) {
          expect(values, name).not.toContain("'unsafe-eval'");
          if (name !== 'style-src') expect(values, name).not.toContain("'unsafe-inline'");
        }
        // Every script the page loads is allowed by the policy it comes with.
        const html = await res.text();
        const scripts = [...html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)].map((m) => new URL(m[1]!, url));
        expect(scripts.length).toBeGreaterThan(0);
        for (const script of scripts) expect(allowedBy(d['script-src']!, script, url), script.href).toBe(true);
      }
    },
  );

  it.skipIf(!hasBuild)(
    "inside the admin: only that shop's admin and admin.shopify.com may frame it; App Bridge is the one outside script",
    async () => {
      const res = await get$(`/runs?shop=${SHOP_DOMAIN}&host=YWRtaW4&embedded=1`);
      const d = directives(res.headers.get('content-security-policy'));
      expect(d['frame-ancestors']).toEqual([`https://${SHOP_DOMAIN}`, 'https://admin.shopify.com']);
      expect(d['script-src']).toEqual(["'self'", APP_BRIDGE_SOURCE]);
      const html = await res.text();
      expect(html).toContain(APP_BRIDGE_URL);
      for (const m of html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)) {
        expect(allowedBy(d['script-src']!, new URL(m[1]!, url), url), m[1]).toBe(true);
      }
      // A shop that is not a shop domain is not embedded: it cannot put itself in frame-ancestors.
      for (const shop of ['evil.example', 'x.myshopify.com%20https://evil.example', 'x.myshopify.com;script-src%20*']) {
        const other = await get$(`/?shop=${shop}&host=YWRtaW4`);
        expect(directives(other.headers.get('content-security-policy'))['frame-ancestors'], shop).toEqual(["'self'"]);
      }
    },
  );

  it('every JSON answer of the server is nosniff with a policy that loads and frames nothing', async () => {
    const answers = await Promise.all([
      get$('/healthz'),
      get$('/api/pages', { headers: bearer(t.token()) }),
      get$('/api/pages/custom', { headers: bearer(t.token()) }),
      get$('/api/flows'),
      get$('/nowhere.json'),
      get$('/mcp', {
        method: 'POST',
        headers: { authorization: `Bearer ${mcpSecret}`, 'content-type': 'application/json' },
        body: rpc('ping'),
      }),
      get$('/webhooks', { method: 'POST', headers: signedWebhook('{"id":1}'), body: '{"id":1}' }),
    ]);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 401, 404, 200, 200]);
    for (const res of answers) {
      expect(res.headers.get('content-type'), res.url).toMatch(/^application\/json/);
      expect(res.headers.get('x-content-type-options'), res.url).toBe('nosniff');
      expect(res.headers.get('content-security-policy'), res.url).toBe(API_CSP);
    }
  });

  it.skipIf(!hasBuild)("a 304 revalidating index.html carries no policy of its own (its headers would replace the page's)", async () => {
    const first = await get$('/runs');
    const etag = first.headers.get('etag');
    expect(etag).toBeTruthy();
    const again = await get$('/runs', { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
    expect(again.headers.get('content-security-policy')).toBeNull();
  });

  it.skipIf(!hasBuild)('the built scripts and styles are nosniff too', async () => {
    const html = await (await get$('/')).text();
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    const res = await get$(asset!);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('CORS: a preflight from another origin gets no CORS header on any endpoint, and is not a success', async () => {
    for (const path of ['/api/flows/echo/run', '/api/pages', '/mcp', '/webhooks', '/healthz', '/', '/runs', '/routes/anything']) {
      const res = await get$(path, {
        method: 'OPTIONS',
        headers: {
          origin: FOREIGN,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type',
        },
      });
      expect(corsHeaders(res), path).toEqual([]);
      expect(res.status, path).toBeGreaterThanOrEqual(400);
    }
  });

  it('CORS: answers to cross-origin requests carry no Access-Control-Allow-Origin (the browser withholds them); /mcp refuses the origin', async () => {
    const api = await get$('/api/pages', { headers: { ...bearer(t.token()), origin: FOREIGN } });
    expect(api.status).toBe(200); // bearer-only: a page on another origin has no token to send, and could not read this
    expect(corsHeaders(api)).toEqual([]);
    const mcp = await get$('/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${mcpSecret}`, 'content-type': 'application/json', origin: FOREIGN },
      body: rpc('ping'),
    });
    expect(mcp.status).toBe(403);
    expect(corsHeaders(mcp)).toEqual([]);
    const hook = await get$('/webhooks', { method: 'POST', headers: { ...signedWebhook('{"id":2}'), origin: FOREIGN }, body: '{"id":2}' });
    expect(corsHeaders(hook)).toEqual([]);
    const ui = await get$('/', { headers: { origin: FOREIGN } });
    expect(corsHeaders(ui)).toEqual([]);
  });
});

describe('public routes keep the headers their handler set', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    server = await startTestServer({
      extra: (app) => {
        app.get('/routes/page', () => new Response('<p>hi</p>', { headers: { 'content-type': 'text/html' } }));
        app.get('/routes/data', () => Response.json({ ok: true }));
      },
    });
  });
  afterAll(() => server?.close());

  it('no policy or nosniff is added under /routes (a route may serve HTML, embed itself or set its own)', async () => {
    for (const path of ['/routes/page', '/routes/data']) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy'), path).toBeNull();
      expect(res.headers.get('x-content-type-options'), path).toBeNull();
    }
    // while the server's own answers next to them get both
    const api = await fetch(`${server.url}/api/pages`, { headers: bearer(tokenFor()) });
    expect(api.headers.get('content-security-policy')).toBe(API_CSP);
  });
});
