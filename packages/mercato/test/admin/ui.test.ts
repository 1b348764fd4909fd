/**
 * The admin UI in a real browser (Debian's Chromium through playwright-core) against `mercato dev` with its platform
 * simulator: every page loads without console errors and nothing comes from another origin; the main journeys work end
 * to end. Screenshots of each page go to test-artifacts/admin-ui/. One engine per run: mercato dev's embedded PGlite, or
 * a fresh PostgreSQL database when DATABASE_URL is set (so CI's two passes cover both).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { ensureAdminUiBuilt } from './build.ts';
import { CHROMIUM, type DevServer, type Watched, describedBy, launch, pageAction, resetArtifacts, screenshot, startDev, unexpected } from './browser.ts';

const PROJECT = fileURLToPath(new URL('../fixtures/admin-ui-app/', import.meta.url));
const SHOP = 'demo-1.myshopify.com';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

describe.skipIf(!hasChromium)('admin UI in Chromium', { timeout: 60_000 }, () => {
  let dev: DevServer;
  let w: Watched;
  let page: Page;
  let firstRunId = '';

  let database: TestDatabase | undefined;

  beforeAll(async () => {
    resetArtifacts();
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

  const runStatus = () => page.getByTestId('run-status');

  it('the preview picks a shop and opens the UI; the navigation shows visible pages only', async () => {
    await page.goto('/runs');
    // No shop chosen yet: the UI sends the browser to the preview, which comes back to /runs.
    await page.waitForURL(/\/__mercato\/preview\/\?next=/);
    await screenshot(page, '00-preview');
    await page.getByLabel('Shop').selectOption(SHOP);
    await page.getByRole('button', { name: 'Open the admin' }).click();
    await page.waitForURL((url) => url.pathname === '/runs' && !url.search.includes('preview-shop'));
    await expect.poll(() => page.getByRole('heading', { name: 'Runs', level: 1 }).isVisible()).toBe(true);
    const nav = page.locator('nav');
    for (const label of ['Home', 'Flows', 'Runs', 'Providers', 'MCP']) await expect.poll(() => nav.getByRole('link', { name: label, exact: true }).count()).toBe(1);
    expect(await nav.getByRole('link', { name: 'Crons' }).count()).toBe(0); // hidden
    expect(await nav.getByRole('link', { name: 'Functions' }).count()).toBe(0); // disabled
    await page.getByRole('button', { name: new RegExp(SHOP) }).waitFor();
  });

  it('runs a flow from a form generated from its schema, validated before sending, and watches it complete live', async () => {
    await page.locator('nav').getByRole('link', { name: 'Flows', exact: true }).click();
    await page.getByRole('heading', { name: 'importOrders' }).waitFor();
    await screenshot(page, '02-flows');
    await page.getByRole('button', { name: 'Run importOrders' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Limit').fill('900');
    const before = w.requests.length;
    await dialog.getByRole('button', { name: 'Run', exact: true }).click();
    // Validated in the browser: errors next to the fields, nothing sent.
    await expect.poll(() => describedBy(page, 'Since *')).toContain('Required');
    expect(await describedBy(page, 'Limit')).toContain('Must be at most 500');
    expect(await describedBy(page, 'Email *')).toContain('Required');
    expect(w.requests.slice(before).filter((r) => r.url.includes('/api/flows/'))).toEqual([]);
    await screenshot(page, '03-run-form');
    await dialog.getByLabel('Since *').fill('7d');
    await dialog.getByLabel('Limit').fill('20');
    await dialog.getByLabel('Dry run').check({ force: true });
    await dialog.getByLabel('Channel *').selectOption({ label: 'pos' });
    await dialog.getByLabel('Email *').fill('ada@example.com');
    await dialog.getByRole('button', { name: 'Add Tags item' }).click();
    await dialog.getByLabel('Tags item 1 *').fill('vip');
    expect(await describedBy(page, 'Limit')).not.toContain('Must be at most 500');
    await page.getByText('The run was not started').waitFor({ state: 'detached' });
    await dialog.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    firstRunId = page.url().split('/').pop()!;
    await expect.poll(() => runStatus().getAttribute('data-status')).toMatch(/pending|running/);

    // A second run of the same flow while this one is active: 409, with a link to the active run.
    await page.goBack();
    await page.getByRole('button', { name: 'Run importOrders' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Edit as JSON' }).click();
    await page.getByRole('dialog').getByLabel('Input (JSON object)').fill('{"since":"1d","channel":"web","customer":{"email":"x@example.com"}}');
    await page.getByRole('dialog').getByRole('button', { name: 'Run', exact: true }).click();
    await page.getByText('This flow is already running').waitFor();
    await screenshot(page, '04-conflict');
    await page.getByRole('link', { name: 'Open the active run' }).click();
    await page.waitForURL(`**/runs/${firstRunId}`);

    const watchesBefore = w.requests.filter((r) => r.url.includes(`/api/runs/${firstRunId}/watch`)).length;
    await screenshot(page, '05-run-active');
    await expect.poll(() => runStatus().getAttribute('data-status'), { timeout: 20_000 }).toBe('completed');
    const watches = w.requests.filter((r) => r.url.includes(`/api/runs/${firstRunId}/watch`)).length - watchesBefore;
    // Long polling: one request per change, not a fixed fast poll (the run lasts ~2.5 s).
    expect(watches).toBeLessThan(10);
    const steps = page.getByRole('list', { name: 'Step timeline' }).getByRole('listitem');
    await expect.poll(() => steps.count()).toBe(3);
    expect(await steps.first().getAttribute('data-status')).toBe('completed');
    await page.getByRole('button', { name: 'Show result of step summarise' }).click();
    await expect.poll(() => page.getByLabel('Result of step summarise', { exact: true }).textContent()).toContain('"channel": "pos"');
    await screenshot(page, '06-run-completed');
  });

  it('searches the run logs with the query language, marks context lines, and exports CSV and JSON', async () => {
    const lines = page.getByRole('list', { name: 'Log lines, newest first' }).getByRole('listitem');
    await expect.poll(() => lines.count()).toBe(6);
    await page.getByRole('button', { name: 'Syntax help' }).click();
    await page.getByRole('table').getByText('message matches the regular expression (i: ignore case)').waitFor();
    await page.getByLabel('Search logs').fill('level:warn');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => lines.count()).toBe(1);
    expect(await lines.first().textContent()).toContain('order 1002 has no email');
    await page.getByLabel('Search logs').fill('"order 1002" C:1');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => page.locator('li.log-line[data-context="true"]').count()).toBeGreaterThan(0);
    expect(await page.locator('li.log-line[data-match="true"]').count()).toBe(2);
    await screenshot(page, '07-logs-context');
    // Level toggles: info off leaves the warning only.
    await page.getByLabel('Search logs').fill('');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('button', { name: 'Show info lines' }).click();
    await expect.poll(() => lines.count()).toBe(1);
    await page.getByRole('button', { name: 'Show info lines' }).click();
    await expect.poll(() => lines.count()).toBe(6);
    // A query that does not parse: the server's message under the box.
    await page.getByLabel('Search logs').fill('level:loud');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => describedBy(page, 'Search logs')).toContain('level: must be info, warn or error');
    await page.getByLabel('Search logs').fill('"read"');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await expect.poll(() => lines.count()).toBe(3);

    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export matching logs as CSV' }).click()]);
    expect(csv.suggestedFilename()).toBe(`run-${firstRunId}-logs.csv`);
    const csvText = readFileSync((await csv.path())!, 'utf8');
    expect(csvText.trim().split('\n')).toHaveLength(4); // header + the 3 matching lines
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export matching logs as JSON' }).click()]);
    const exported = JSON.parse(readFileSync((await json.path())!, 'utf8'));
    expect(JSON.stringify(exported)).toContain('order 1002 read');
    expect(JSON.stringify(exported)).not.toContain('has no email');
  });

  it('retries a failed run and shows it recover', async () => {
    await page.goto('/flows');
    await page.getByRole('button', { name: 'Run flaky' }).click();
    await page.getByRole('dialog').getByText('This flow takes no input.').waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    await expect.poll(() => runStatus().getAttribute('data-status'), { timeout: 15_000 }).toBe('failed');
    await page.getByText('upstream timeout').first().waitFor();
    await screenshot(page, '08-run-failed');
    await pageAction(page, 'Retry (resume)');
    await expect.poll(() => runStatus().getAttribute('data-status'), { timeout: 15_000 }).toBe('completed');
    await page.getByText('Run retried from its last completed step').first().waitFor();

    // Cancel an active run from its page.
    await page.goto('/flows');
    await page.getByRole('button', { name: 'Run importOrders' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Edit as JSON' }).click();
    await page.getByRole('dialog').getByLabel('Input (JSON object)').fill('{"since":"1d","channel":"web","customer":{"email":"x@example.com"},"delayMs":10000}');
    await page.getByRole('dialog').getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    await expect.poll(() => runStatus().getAttribute('data-status')).toBe('running');
    await pageAction(page, 'Cancel run');
    await expect.poll(() => runStatus().getAttribute('data-status')).toBe('canceled');
  });

  it('loads every page without console errors or requests to other origins, and shows not-found pages', async () => {
    w.errors.length = 0;
    const pages: [string, string, string][] = [
      ['/', 'Home', '01-home'],
      ['/flows', 'Flows', '02-flows'],
      ['/runs', 'Runs', '09-runs-all'],
      [`/runs/${firstRunId}`, 'importOrders', '06-run-completed'],
      ['/providers', 'Providers', '11-providers'],
      ['/crons', 'Crons', '12-crons'],
      ['/mcp-tokens', 'MCP', '13-mcp'],
    ];
    for (const [path, title, shot] of pages) {
      await page.goto(path);
      await page.getByRole('heading', { name: title, level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      await screenshot(page, shot);
    }
    await page.goto('/');
    await page.getByText('Runs in the last 24 hours').waitFor();
    await expect.poll(() => page.getByLabel(/completed runs in the last 24 hours/).textContent()).toMatch(/^\d/);
    await page.getByText('Next cron fires').waitFor();
    await screenshot(page, '01-home');
    expect(w.errors).toEqual([]);
    for (const path of ['/functions', '/no/such/page']) {
      await page.goto(path);
      await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    }
    await screenshot(page, '16-not-found');
    expect(unexpected(w.errors)).toEqual([]);
    expect(w.foreign).toEqual([]);
  });

  it('lists runs with search, status and date filters, pages them, and bulk-deletes a selection', async () => {
    await page.goto('/runs');
    const rows = page.locator('.Polaris-IndexTable__TableRow');
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(2);
    await page.getByLabel('Search', { exact: true }).fill('flaky');
    await page.waitForURL(/search=flaky/);
    await expect.poll(async () => (await rows.allTextContents()).every((t) => t.includes('flaky'))).toBe(true);
    await page.getByLabel('Search', { exact: true }).fill('');
    await page.getByLabel('Status').selectOption('completed');
    await page.waitForURL(/status=completed/);
    const today = new Date();
    const day = `${today.getFullYear()}-${String(today.getMonth() + 1).padStart(2, '0')}-${String(today.getDate()).padStart(2, '0')}`;
    await page.getByLabel('Created from').fill(day);
    await page.waitForURL(/from=/);
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(2);
    await screenshot(page, '09-runs');
    const count = await rows.count();
    await page.getByLabel('Created from').fill('2001-01-01');
    await page.getByLabel('Created to').fill('2001-01-02');
    await page.getByText('No runs match these filters').waitFor();
    // Pagination: 26 more runs (made through the API with a preview session token) make two pages of 25.
    const { token } = (await (await fetch(`${dev.url}/__mercato/preview/session-token`, { method: 'POST', body: JSON.stringify({ shop: SHOP }) })).json()) as { token: string };
    for (let i = 0; i < 26; i++) {
      const res = await fetch(`${dev.url}/api/flows/flaky/run`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"input":{}}' });
      expect(res.status).toBe(202);
    }
    await page.goto('/runs?search=flaky');
    await page.getByText(/^1–25 of 2\d$/).waitFor();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.waitForURL(/offset=25/);
    await page.getByText(/^26–2\d of 2\d$/).waitFor();
    await page.goto('/runs?status=completed');
    await expect.poll(() => rows.count()).toBe(count);
    await page.locator('.Polaris-IndexTable__TableHeading--first').getByRole('checkbox').check({ force: true });
    await page.getByRole('button', { name: 'Delete runs' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByText(new RegExp(`Deleted ${count} runs`)).first().waitFor();
    await page.getByText('No runs match these filters').waitFor();
  });

  it('saves a provider: exact server errors next to fields, "saved" passwords kept, check button and status badge', async () => {
    await page.goto('/providers');
    await page.getByRole('heading', { name: 'crm' }).waitFor();
    const badge = page.locator('form[aria-label="crm settings"] .Polaris-Badge').first();
    expect(await badge.textContent()).toContain('Not configured');
    await page.getByLabel('Base URL *').fill('not a url');
    await page.getByLabel('API key *').fill('wrong-key');
    await page.getByLabel('Region *').selectOption('eu');
    await page.getByRole('button', { name: 'Save crm' }).click();
    await expect.poll(() => describedBy(page, 'Base URL *')).toContain('Field "baseUrl": Invalid URL');
    expect(await page.getByLabel('Base URL *').getAttribute('aria-invalid')).toBe('true');
    await screenshot(page, '10-provider-error');
    await page.getByLabel('Base URL *').fill('https://crm.example');
    await page.getByRole('button', { name: 'Save crm' }).click();
    await page.getByText('crm saved').first().waitFor();
    await expect.poll(() => badge.textContent()).toContain('Configured');
    expect(await page.getByLabel('API key *').inputValue()).toBe('');
    expect(await page.getByLabel('API key *').getAttribute('placeholder')).toBe('saved');
    await page.getByRole('button', { name: 'Check crm connection' }).click();
    await expect.poll(() => badge.textContent()).toContain('Error');
    // Save again with the password left empty: the stored one is kept (the check still fails), then replace it.
    await page.getByRole('button', { name: 'Save crm' }).click();
    await page.getByRole('button', { name: 'Check crm connection' }).click();
    await expect.poll(() => badge.textContent()).toContain('Error');
    await page.getByLabel('API key *').fill('right-key');
    await page.getByRole('button', { name: 'Save crm' }).click();
    await page.getByRole('button', { name: 'Check crm connection' }).click();
    await expect.poll(() => badge.textContent()).toContain('Connected');
    await screenshot(page, '11-providers');
  });

  it('shows crons (hidden page, reached by URL) in words with the next fire time, and toggles one for this shop', async () => {
    await page.goto('/crons');
    await page.getByText('flaky', { exact: true }).first().waitFor();
    await page.getByText('Every installed shop').waitFor();
    const toggle = page.getByRole('checkbox', { name: /flaky enabled for this shop/ });
    expect(await toggle.isChecked()).toBe(true);
    await toggle.uncheck({ force: true });
    await page.getByText(`flaky disabled for ${SHOP}`).first().waitFor();
    await screenshot(page, '12-crons');
    await page.reload();
    await expect.poll(() => page.getByRole('checkbox', { name: /flaky enabled for this shop/ }).isChecked()).toBe(false);
  });

  it('creates an MCP token (secret shown once), which works once; then revokes it', async () => {
    await page.goto('/mcp-tokens');
    await page.getByText('No tokens yet').waitFor();
    await pageAction(page, 'Create token');
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('Support assistant');
    expect(await dialog.getByLabel('90 days').isChecked()).toBe(true);
    await dialog.getByRole('checkbox', { name: /List flows and recent runs/ }).check({ force: true });
    await dialog.getByRole('checkbox', { name: /^Run flows/ }).check({ force: true });
    await dialog.getByText(/High-risk grants selected: Run flows/).waitFor();
    await screenshot(page, '13-mcp-create');
    await dialog.getByRole('button', { name: 'Create token' }).click();
    const secret = (await page.getByTestId('mcp-secret').textContent())!.trim();
    expect(secret.length).toBeGreaterThan(20);
    expect(await page.getByTestId('mcp-endpoint').textContent()).toBe(`${dev.url}/mcp`);
    await screenshot(page, '14-mcp-secret');
    await page.getByRole('button', { name: 'I have stored it' }).click();

    const call = () =>
      fetch(`${dev.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'service.flows.list', arguments: {} } }),
      });
    const used = await call();
    expect(used.status).toBe(200);
    expect(JSON.stringify(await used.json())).toContain('importOrders');

    await page.getByRole('link', { name: 'Support assistant' }).click();
    await page.getByText('service.flows.list').waitFor();
    await screenshot(page, '15-mcp-token');
    await pageAction(page, 'Revoke');
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await page.getByText('Token revoked').first().waitFor();
    await page.getByText(/This token was revoked/).waitFor();
    expect((await call()).status).toBe(403);
  });

  it('gets a new session token once when the API answers 401, and is usable with the keyboard alone', async () => {
    let rejected = 0;
    await page.route('**/api/pages', async (route) => {
      if (rejected++ === 0) await route.fulfill({ status: 401, contentType: 'application/json', body: '{"error":"Session token expired"}' });
      else await route.continue();
    });
    const mints = () => w.requests.filter((r) => r.method === 'POST' && r.url.endsWith('/__mercato/preview/session-token')).length;
    const before = mints();
    await page.goto('/flows');
    await page.getByRole('heading', { name: 'Flows', level: 1 }).waitFor();
    expect(rejected).toBe(2);
    expect(mints() - before).toBeGreaterThanOrEqual(1);
    await page.unroute('**/api/pages');

    // Keyboard: Tab to the Runs link of the navigation, Enter follows it; a dialog opens with Enter and closes with Escape.
    await page.goto('/');
    await page.getByText('Runs in the last 24 hours').waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Skip to content');
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement?.textContent?.trim() === 'Runs' && document.activeElement.tagName === 'A');
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    await page.waitForURL('**/runs');
    await page.goto('/flows');
    await page.getByRole('button', { name: 'Run flaky' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    expect(unexpected(w.errors)).toEqual([]);
  });
});
