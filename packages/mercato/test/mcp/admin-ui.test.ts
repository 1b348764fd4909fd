/**
 * Issue 20 in the admin UI (a real Chromium against `mercato dev`): a request refused with 403 shows on the token's page
 * with its status and reason (point 4); a reserved permission a token holds is not offered as a checkbox, is explained
 * under the checkboxes, and is kept when the permissions are saved (point 10). One engine per run, like test/admin.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { ensureAdminUiBuilt } from '../admin/build.ts';
import { CHROMIUM, type DevServer, type Watched, launch, pageAction, startDev, unexpected } from '../admin/browser.ts';
import { SHOP } from '../kit/index.ts';

const PROJECT = fileURLToPath(new URL('../fixtures/admin-ui-app/', import.meta.url));
const hasChromium = existsSync(CHROMIUM);

describe.skipIf(!hasChromium)('MCP token page in Chromium: refusals and held reserved permissions', { timeout: 60_000 }, () => {
  let dev: DevServer;
  let w: Watched;
  let page: Page;
  let database: TestDatabase | undefined;

  beforeAll(async () => {
    if (process.env.DATABASE_URL) database = await createTestDatabase('postgres', { migrate: false });
    const [server] = await Promise.all([startDev(PROJECT, { databaseUrl: database?.url }), ensureAdminUiBuilt()]);
    dev = server;
    w = await launch(dev.url);
    page = w.page;
  }, 180_000);
  afterAll(async () => {
    await w?.close();
    await dev?.stop();
    await database?.drop();
  }, 30_000);

  async function api(method: string, path: string, body?: unknown): Promise<any> {
    const res = await fetch(`${dev.url}/__mercato/preview/session-token`, { method: 'POST', body: JSON.stringify({ shop: SHOP }) });
    const { token } = (await res.json()) as { token: string };
    const answer = await fetch(`${dev.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: answer.status, body: await answer.json() };
  }

  it('shows a refused call with its reason, and keeps a held reserved permission it does not offer', async () => {
    // Open the admin for the shop (the preview sets the session).
    await page.goto('/mcp-tokens');
    await page.waitForURL(/\/__mercato\/preview\/\?next=/);
    await page.getByLabel('Shop').selectOption(SHOP);
    await page.getByRole('button', { name: 'Open the admin' }).click();
    await page.waitForURL((url) => url.pathname === '/mcp-tokens' && !url.search.includes('preview-shop'));

    const created = await api('POST', '/api/mcp/tokens', { name: 'Old assistant', permissions: ['read_providers', 'read_flows'] });
    expect(created.status).toBe(201);
    const { id } = created.body.token;
    expect((await api('PATCH', `/api/mcp/tokens/${id}`, { status: 'disabled' })).status).toBe(200);
    const refused = await fetch(`${dev.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${created.body.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'service.flows.list', arguments: {} } }),
    });
    expect(refused.status).toBe(403);

    await page.goto(`/mcp-tokens/${id}`);
    await page.getByText('MCP token is disabled').waitFor();
    await expect.poll(() => page.getByText('Refused', { exact: true }).count()).toBeGreaterThan(0);
    expect(await page.getByText('service.flows.list').count()).toBeGreaterThan(0);

    await pageAction(page, 'Edit permissions');
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('checkbox', { name: /List flows and recent runs/ }).waitFor();
    expect(await dialog.getByRole('checkbox', { name: /read_providers|Read providers/ }).count()).toBe(0);
    expect(await dialog.getByText('Reserved', { exact: true }).count()).toBe(0);
    await dialog.getByText(/Also held, kept as they are: read_providers\. No tool uses this permission, so it grants nothing/).waitFor();
    await dialog.getByRole('checkbox', { name: /^Run flows/ }).check({ force: true });
    const [saved] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'PUT' && new URL(r.url()).pathname === `/api/mcp/tokens/${id}/permissions`),
      dialog.getByRole('button', { name: 'Save permissions' }).click(),
    ]);
    expect((saved.postDataJSON() as { permissions: string[] }).permissions.sort()).toEqual(['read_flows', 'read_providers', 'run_flows']);
    await expect
      .poll(async () => (await api('GET', `/api/mcp/tokens/${id}`)).body.permissions.sort())
      .toEqual(['read_flows', 'read_providers', 'run_flows']);
    expect(unexpected(w.errors.splice(0))).toEqual([]);
  });
});
