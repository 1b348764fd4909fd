/**
 * Issue 20, point 8, in Chromium against `mercato dev`: the MCP token tables fit the page at 1440 px without horizontal
 * overflow, and stay usable at 1024 px (no page-wide horizontal scroll; every column's heading and the token names stay
 * on screen), with realistic data — long names, every permission, calls with long capability names and request ids.
 */
import { existsSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, screenshot, unexpected } from './browser.ts';
import { type LiveApp, openAdmin, startLiveApp } from './live-kit.ts';

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

const LONG_NAMES = [
  'Customer support assistant for the European storefront (night shift, escalations only)',
  'Inventory-reconciliation-bot-with-an-unbroken-hyphenated-name-that-goes-on-and-on-and-on',
  'Ops',
];

interface Overflow {
  what: string;
  scrollWidth: number;
  clientWidth: number;
}

/** Every element that scrolls sideways: the document, and each table's scroll container (with what it holds). */
async function overflows(page: Page): Promise<Overflow[]> {
  return page.evaluate(() => {
    const found: { what: string; scrollWidth: number; clientWidth: number }[] = [];
    const doc = document.scrollingElement ?? document.documentElement;
    if (doc.scrollWidth > doc.clientWidth) found.push({ what: 'document', scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth });
    document.querySelectorAll('table').forEach((table, i) => {
      for (let el: HTMLElement | null = table as HTMLElement; el && el !== document.body; el = el.parentElement) {
        if (el.scrollWidth > el.clientWidth + 1) {
          found.push({
            what: `table ${i} container .${el.className.split(' ')[0]}`,
            scrollWidth: el.scrollWidth,
            clientWidth: el.clientWidth,
          });
        }
      }
    });
    return found;
  });
}

/** Each table's headings that lie (partly) outside the viewport's width. */
async function headingsOffScreen(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    for (const th of document.querySelectorAll('th')) {
      const box = th.getBoundingClientRect();
      if (box.width > 0 && (box.right > window.innerWidth + 1 || box.left < -1)) out.push(th.textContent ?? '');
    }
    return out;
  });
}

describe.skipIf(!hasChromium)('MCP token tables at 1440 and 1024 px', { timeout: 90_000 }, () => {
  let app: LiveApp;
  let page: Page;
  let tokenId = '';

  beforeAll(async () => {
    app = await startLiveApp();
    page = app.page;
    const caps = (await app.api('/api/mcp/capabilities')).body;
    const every = (caps.permissions as { key: string }[]).map((p) => p.key);
    expect(every.length).toBeGreaterThan(5);
    for (const name of LONG_NAMES) {
      const created = await app.api('/api/mcp/tokens', { method: 'POST', json: { name, permissions: every } });
      expect(created.status).toBe(201);
      if (!tokenId) {
        tokenId = created.body.token.id;
        // calls with the token, so its page lists audits (capability names, request ids, errors)
        const client = new Client({ name: 'layout-test', version: '1.0.0' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${app.dev.url}/mcp`), {
            requestInit: { headers: { Authorization: `Bearer ${created.body.secret}` } },
          }),
        );
        const tools = await client.listTools();
        for (const tool of tools.tools.slice(0, 4)) await client.callTool({ name: tool.name, arguments: {} }).catch(() => {});
        await client.close();
      }
    }
    await openAdmin(page, '/mcp-tokens');
  }, 180_000);

  afterAll(async () => {
    await app?.close();
  }, 30_000);

  for (const width of [1440, 1024]) {
    it(`the token list fits ${width} px`, async () => {
      await page.setViewportSize({ width, height: 900 });
      await page.goto('/mcp-tokens');
      await page.getByRole('link', { name: LONG_NAMES[1] }).waitFor();
      await screenshot(page, `mcp-tokens-${width}`);
      expect(await overflows(page)).toEqual([]);
      expect(await headingsOffScreen(page)).toEqual([]);
      for (const name of LONG_NAMES) {
        const box = await page.getByRole('link', { name }).boundingBox();
        expect(box && box.x >= 0 && box.x + box.width <= width).toBe(true);
      }
    });

    it(`a token's page (its calls and permissions) fits ${width} px`, async () => {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`/mcp-tokens/${tokenId}`);
      await page.getByRole('heading', { name: 'Latest calls' }).waitFor();
      await expect.poll(() => page.locator('table tbody tr').count()).toBeGreaterThan(0);
      await screenshot(page, `mcp-token-${width}`);
      expect(await overflows(page)).toEqual([]);
      expect(await headingsOffScreen(page)).toEqual([]);
    });
  }

  it('leaves no console error', () => {
    expect(unexpected(app.w.errors.splice(0))).toEqual([]);
  });
});
