/**
 * The admin UI embedded in the shop admin, in Chromium (issue 33, docs/admin-ui.md "Inside the shop admin"). The shop
 * admin is a stand-in: Playwright answers https://admin.shopify.com with a page that frames the app, as the platform's
 * admin does (`?embedded=1&host=…&shop=…`), and answers the App Bridge script (served only by the platform) with a
 * stand-in whose `shopify.idToken()` returns session tokens the "admin" signs with the app's secret. Checked: App Bridge
 * comes first in the head with the app's API key; every API request carries a token from `idToken()` and the dev preview
 * is never asked; the CSP lets that shop's admin frame the page and refuses another parent; no cookie is set.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { signSessionToken } from 'platform-sim';
import { type Frame, type Response as PwResponse } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_BRIDGE_URL, adminCsp } from '../../src/admin/index.ts';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { ensureAdminUiBuilt } from './build.ts';
import { CHROMIUM, type DevServer, type Watched, launch, startDev } from './browser.ts';

const PROJECT = fileURLToPath(new URL('../fixtures/admin-ui-app/', import.meta.url));
const hasChromium = existsSync(CHROMIUM);
const API_KEY = 'embedded-test-key';
const API_SECRET = 'embedded-test-secret';
const SHOP = 'demo-1.myshopify.com';
const ADMIN = 'https://admin.shopify.com';

/** The App Bridge stand-in: `shopify.idToken()` asks the stand-in admin for a token (the real one asks the platform). */
const APP_BRIDGE_STAND_IN = `
window.__idTokenCalls = 0;
window.shopify = {
  config: { apiKey: document.querySelector('meta[name="shopify-api-key"]')?.content, shop: ${JSON.stringify(SHOP)} },
  async idToken() {
    window.__idTokenCalls++;
    const res = await fetch(${JSON.stringify(`${ADMIN}/__stand-in/id-token`)}, { method: 'POST' });
    return (await res.json()).token;
  },
};`;

describe.skipIf(!hasChromium)('admin UI inside the shop admin (App Bridge stand-in), in Chromium', { timeout: 90_000 }, () => {
  let dev: DevServer;
  let w: Watched;
  let database: TestDatabase | undefined;
  const issued = new Set<string>();
  const responses: PwResponse[] = [];
  let appUrl = '';

  beforeAll(async () => {
    if (process.env.DATABASE_URL) database = await createTestDatabase('postgres', { migrate: false });
    const [server] = await Promise.all([
      startDev(PROJECT, { databaseUrl: database?.url, env: { PLATFORM_API_KEY: API_KEY, PLATFORM_API_SECRET: API_SECRET } }),
      ensureAdminUiBuilt(),
    ]);
    dev = server;
    // the stand-in admin is a public https origin framing a loopback one: Chromium's local-network checks would block
    // that (the real admin frames the app's public URL, never localhost)
    w = await launch(dev.url, { args: ['--disable-features=LocalNetworkAccessChecks,PrivateNetworkAccessRespectPreflightResults'] });
    const host = Buffer.from(`admin.shopify.com/store/demo-1`).toString('base64url');
    appUrl = `${dev.url}/?embedded=1&host=${host}&shop=${SHOP}`;
    await w.context.route(APP_BRIDGE_URL, (route) =>
      route.fulfill({
        status: 200,
        contentType: 'text/javascript',
        body: APP_BRIDGE_STAND_IN,
        headers: { 'access-control-allow-origin': '*' },
      }),
    );
    await w.context.route(`${ADMIN}/**`, async (route) => {
      const url = new URL(route.request().url());
      if (url.pathname === '/__stand-in/id-token') {
        const token = await signSessionToken({ apiKey: API_KEY, apiSecret: API_SECRET, shop: SHOP });
        issued.add(token);
        return route.fulfill({
          status: 200,
          contentType: 'application/json',
          body: JSON.stringify({ token }),
          headers: { 'access-control-allow-origin': '*' },
        });
      }
      // the shop admin: a page framing the app, as the platform's admin does
      return route.fulfill({
        status: 200,
        contentType: 'text/html',
        body: `<!doctype html><title>Shop admin</title><iframe name="app" src="${appUrl}" style="width:1200px;height:800px"></iframe>`,
      });
    });
    w.page.on('response', (r) => responses.push(r));
  }, 180_000);

  afterAll(async () => {
    await w?.close();
    await dev?.stop();
    await database?.drop();
  });

  const appFrame = async (): Promise<Frame> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const frame = w.page.frames().find((f) => f.url().startsWith(dev.url));
      if (frame) return frame;
      if (Date.now() > deadline)
        throw new Error(
          `no frame of ${dev.url} in ${w.page
            .frames()
            .map((f) => f.url())
            .join(', ')}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it('loads App Bridge first, takes its session tokens from shopify.idToken(), and never asks the dev preview', async () => {
    await w.page.goto(`${ADMIN}/store/demo-1/apps/mercato`);
    const frame = await appFrame();
    await frame
      .getByRole('heading', { name: 'Flows', exact: true })
      .or(frame.getByRole('heading', { name: 'Home' }))
      .first()
      .waitFor();
    // the first children of <head>: charset, the API key, then App Bridge, before any other script
    const head = await frame.evaluate(() =>
      Array.from(document.head.children)
        .slice(0, 3)
        .map((e) =>
          e.tagName === 'SCRIPT'
            ? `script ${(e as HTMLScriptElement).src}`
            : `${e.tagName.toLowerCase()} ${e.getAttribute('name') ?? e.getAttribute('charset')} ${e.getAttribute('content') ?? ''}`.trim(),
        ),
    );
    expect(head.map((h, i) => (i === 0 ? h.toLowerCase() : h))).toEqual([
      'meta utf-8',
      `meta shopify-api-key ${API_KEY}`,
      `script ${APP_BRIDGE_URL}`,
    ]);
    // the navigation goes to App Bridge's menu (ui-nav-menu), which the admin shows beside the frame
    const menu = await frame.evaluate(() => Array.from(document.querySelectorAll('ui-nav-menu a')).map((a) => a.getAttribute('href')));
    expect(menu).toEqual(expect.arrayContaining(['/', '/flows', '/runs']));
    await frame.goto(appUrl.replace('/?', '/flows?'));
    await frame.getByRole('heading', { name: 'importOrders' }).waitFor();
    const api = w.requests.filter((r) => r.url.startsWith(`${dev.url}/api/`));
    expect(api.length).toBeGreaterThan(1);
    for (const r of api) expect(issued.has(r.authorization?.replace(/^Bearer /, '') ?? ''), r.url).toBe(true);
    expect(api.filter((r) => r.status !== undefined && r.status >= 400)).toEqual([]);
    expect(await frame.evaluate(() => (window as unknown as { __idTokenCalls: number }).__idTokenCalls)).toBeGreaterThan(0);
    expect(w.requests.filter((r) => r.url.includes('/__mercato/preview'))).toEqual([]);
  });

  it("sends the CSP that lets only that shop's admin frame it, and sets no cookie", async () => {
    const index = responses.find((r) => r.url() === appUrl);
    expect(index?.status()).toBe(200);
    const csp = (await index!.allHeaders())['content-security-policy'];
    expect(csp).toBe(adminCsp({ shop: SHOP }));
    expect(csp).toContain(`frame-ancestors https://${SHOP} https://admin.shopify.com;`);
    for (const r of responses) expect((await r.allHeaders())['set-cookie'], r.url()).toBeUndefined();
    expect(await w.context.cookies()).toEqual([]);
  });

  it('another parent cannot frame it: Chromium refuses by the CSP', async () => {
    const page = await w.context.newPage();
    const refused: string[] = [];
    page.on('console', (m) => {
      if (/violates the following Content Security Policy directive: "frame-ancestors/.test(m.text())) refused.push(m.text());
    });
    await page.route('https://elsewhere.example/**', (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: `<!doctype html><iframe src="${appUrl}"></iframe>` }),
    );
    await page.goto('https://elsewhere.example/');
    await expect.poll(() => refused.length).toBeGreaterThan(0);
    expect(refused[0]).toContain(`"frame-ancestors https://${SHOP} https://admin.shopify.com"`);
    await page.close();
  });
});
