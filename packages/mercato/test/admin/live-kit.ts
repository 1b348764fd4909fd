/**
 * What the live, retry, layout and provider-check browser tests share: `mercato dev` for the fixture in
 * test/fixtures/admin-ui-live-app (on fresh PostgreSQL when DATABASE_URL is set, else its embedded PGlite), Chromium,
 * the admin API called from the test with a preview session token, and an HTTP server the test controls (the gates its
 * runs wait on, and a fake CRM for the provider's checker).
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { SHOP } from '../kit/index.ts';
import { ensureAdminUiBuilt } from './build.ts';
import { type DevServer, type Watched, launch, startDev } from './browser.ts';

export const LIVE_PROJECT = fileURLToPath(new URL('../fixtures/admin-ui-live-app/', import.meta.url));

export interface LiveApp {
  dev: DevServer;
  w: Watched;
  page: Page;
  /** The admin API as the shop's merchant (a preview session token, minted per call). */
  api(path: string, init?: { method?: string; json?: unknown; shop?: string }): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

/** `project`: the app `mercato dev` runs (the live fixture unless told; the timeline test runs examples/demo). */
export async function startLiveApp(project = LIVE_PROJECT): Promise<LiveApp> {
  let database: TestDatabase | undefined;
  if (process.env.DATABASE_URL) database = await createTestDatabase('postgres', { migrate: false });
  const [dev] = await Promise.all([startDev(project, { databaseUrl: database?.url }), ensureAdminUiBuilt()]);
  const w = await launch(dev.url);
  const api: LiveApp['api'] = async (path, init = {}) => {
    const minted = await fetch(`${dev.url}/__mercato/preview/session-token`, {
      method: 'POST',
      body: JSON.stringify({ shop: init.shop ?? SHOP }),
    });
    const { token } = (await minted.json()) as { token: string };
    const res = await fetch(`${dev.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${token}`, ...(init.json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  return {
    dev,
    w,
    page: w.page,
    api,
    async close() {
      await w.close();
      await dev.stop();
      await database?.drop();
    },
  };
}

/** Picks the shop in the admin preview, which then opens `path` (the way a merchant starts in `mercato dev`). */
export async function openAdmin(page: Page, path: string): Promise<void> {
  await page.goto(path);
  await page.waitForURL(/\/__mercato\/preview\/\?next=/);
  await page.getByLabel('Shop').selectOption(SHOP);
  await page.getByRole('button', { name: 'Open the admin' }).click();
  await page.waitForURL((url) => url.pathname === path.split('?')[0] && !url.search.includes('preview-shop'));
}

/**
 * Marks the current document, to prove later that no reload happened: a reload (or any navigation that loads a new
 * document) loses the mark.
 */
export async function markDocument(page: Page): Promise<void> {
  await page.evaluate(() => ((window as unknown as { __noReload: boolean }).__noReload = true));
}

export async function expectSameDocument(page: Page): Promise<void> {
  expect(await page.evaluate(() => (window as unknown as { __noReload?: boolean }).__noReload === true)).toBe(true);
}

/**
 * The test's HTTP server. `GET /gate/<key>` is held open until `open(key)` (a run's step waits on it);
 * `GET /crm/ping` answers 200 for the `x-api-key` `right-key`, else 401; `GET /slow/ping` never answers.
 */
export interface TestServer {
  url: string;
  gate(key: string): string;
  open(key: string): void;
  /** How many requests are waiting on `key`. */
  waiting(key: string): number;
  close(): Promise<void>;
}

export async function startTestServer(): Promise<TestServer> {
  const held = new Map<string, ServerResponse[]>();
  const opened = new Set<string>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const gate = /^\/gate\/([\w-]+)$/.exec(path);
    if (gate) {
      const key = gate[1]!;
      if (opened.has(key)) return void res.end('open');
      const list = held.get(key) ?? [];
      list.push(res);
      held.set(key, list);
      req.on('close', () => {
        const now = held.get(key);
        if (now)
          held.set(
            key,
            now.filter((r) => r !== res),
          );
      });
      return;
    }
    if (path === '/crm/ping') {
      res.statusCode = req.headers['x-api-key'] === 'right-key' ? 200 : 401;
      return void res.end();
    }
    if (path === '/slow/ping') return; // never answers: the checker's own time limit ends it
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    gate: (key) => `${url}/gate/${key}`,
    open(key) {
      opened.add(key);
      for (const res of held.get(key) ?? []) res.end('open');
      held.delete(key);
    },
    waiting: (key) => held.get(key)?.length ?? 0,
    async close() {
      for (const list of held.values()) for (const res of list) res.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
