/**
 * The admin UI in a real browser (Debian's Chromium through playwright-core) against `mercato dev` with its platform
 * simulator: every page loads without console errors and nothing comes from another origin; the main journeys work end
 * to end. Each journey ends by checking the console: the only errors allowed are the failed requests it provokes on
 * purpose (status and path listed). Screenshots of each page go to test-artifacts/admin-ui/. One engine per run:
 * mercato dev's embedded PGlite, or a fresh PostgreSQL database when DATABASE_URL is set (so CI's two passes cover both).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { ensureAdminUiBuilt } from './build.ts';
import {
  CHROMIUM,
  type DevServer,
  type ExpectedFailure,
  type Watched,
  describedBy,
  launch,
  pageAction,
  resetArtifacts,
  screenshot,
  startDev,
  unexpected,
  waitForQuiet,
} from './browser.ts';
import { SHOP } from '../kit/index.ts';

const PROJECT = fileURLToPath(new URL('../fixtures/admin-ui-app/', import.meta.url));
const hasChromium = existsSync(CHROMIUM);

/** A preview session token for `shop`, to call the admin API from the test itself. */
async function sessionToken(origin: string, shop = SHOP): Promise<string> {
  const res = await fetch(`${origin}/__mercato/preview/session-token`, { method: 'POST', body: JSON.stringify({ shop }) });
  return ((await res.json()) as { token: string }).token;
}
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

describe.skipIf(!hasChromium)('admin UI in Chromium', { timeout: 60_000 }, () => {
  let dev: DevServer;
  let w: Watched;
  let page: Page;
  let firstRunId = '';
  let tokenPageUrl = '';

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

  /** Ends a journey: no console error or exception but the failed requests it provoked on purpose. */
  function checkConsole(expected: ExpectedFailure[] = []) {
    // Taken first, so a failing journey does not leave its errors to the next one.
    const errors = w.errors.splice(0);
    expect(unexpected(errors, expected)).toEqual([]);
  }

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
    for (const label of ['Home', 'Flows', 'Runs', 'Providers', 'Functions', 'MCP'])
      await expect.poll(() => nav.getByRole('link', { name: label, exact: true }).count()).toBe(1);
    expect(await nav.getByRole('link', { name: 'Crons' }).count()).toBe(0); // hidden (a disabled page: see the last describe)
    await page.getByRole('button', { name: new RegExp(SHOP) }).waitFor();
    checkConsole();
  });

  it(
    'runs a flow from a form generated from its schema, validated before sending, and watches it complete live',
    { timeout: 90_000 },
    async () => {
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
      // Long enough that the run is still active when the second submission below is made, on a loaded CI machine too
      // (the conflict step takes a few seconds there; the default 2.5 s once ran out first).
      await dialog.getByLabel('Delay ms').fill('10000');
      await dialog.getByLabel('Dry run').check({ force: true });
      await dialog.getByLabel('Channel *').selectOption({ label: 'pos' });
      await dialog.getByLabel('Email *').fill('ada@example.com');
      await dialog.getByRole('button', { name: 'Add item to Tags' }).click();
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
      // The JSON is checked against the schema like the form: the problems under the box, nothing sent.
      const beforeJson = w.requests.length;
      await page
        .getByRole('dialog')
        .getByLabel('Input (JSON object)')
        .fill('{"since":"1","limit":900,"channel":"tv","customer":{"email":"x"}}');
      await page.getByRole('dialog').getByRole('button', { name: 'Run', exact: true }).click();
      await expect
        .poll(() => describedBy(page, 'Input (JSON object)'))
        .toContain(
          'since: Must be at least 2 characters; limit: Must be at most 500; channel: Must be one of "web", "pos"; customer.email: Must be an email address',
        );
      expect(w.requests.slice(beforeJson).filter((r) => r.url.includes('/api/flows/'))).toEqual([]);
      await page
        .getByRole('dialog')
        .getByLabel('Input (JSON object)')
        .fill('{"since":"1d","channel":"web","customer":{"email":"x@example.com"}}');
      await page.getByRole('dialog').getByRole('button', { name: 'Run', exact: true }).click();
      await page.getByText('This flow is already running').waitFor();
      await screenshot(page, '04-conflict');
      await page.getByRole('link', { name: 'Open the active run' }).click();
      await page.waitForURL(`**/runs/${firstRunId}`);

      const watchesBefore = w.requests.filter((r) => r.url.includes(`/api/runs/${firstRunId}/watch`)).length;
      await screenshot(page, '05-run-active');
      await expect.poll(() => runStatus().getAttribute('data-status'), { timeout: 20_000 }).toBe('completed');
      const watches = w.requests.filter((r) => r.url.includes(`/api/runs/${firstRunId}/watch`)).length - watchesBefore;
      // Long polling: one request per change, not a fixed fast poll (the run lasts ~10 s).
      expect(watches).toBeLessThan(10);
      const steps = page.getByRole('list', { name: 'Step timeline' }).getByRole('listitem');
      await expect.poll(() => steps.count()).toBe(3);
      expect(await steps.first().getAttribute('data-status')).toBe('completed');
      await page.getByRole('button', { name: 'Show result of step summarise' }).click();
      await expect.poll(() => page.getByLabel('Result of step summarise', { exact: true }).textContent()).toContain('"channel": "pos"');
      await screenshot(page, '06-run-completed');
      checkConsole([{ status: 409, path: '/api/flows/importOrders/run' }]);
    },
  );

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

    const [csv] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV of the matching logs' }).click(),
    ]);
    expect(csv.suggestedFilename()).toBe(`run-${firstRunId}-logs.csv`);
    const csvText = readFileSync((await csv.path())!, 'utf8');
    expect(csvText.trim().split('\n')).toHaveLength(4); // header + the 3 matching lines
    const [json] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export JSON of the matching logs' }).click(),
    ]);
    const exported = JSON.parse(readFileSync((await json.path())!, 'utf8'));
    expect(JSON.stringify(exported)).toContain('order 1002 read');
    expect(JSON.stringify(exported)).not.toContain('has no email');
    checkConsole([{ status: 400, path: new RegExp(`^/api/runs/${firstRunId}/logs\\?(.*&)?q=level%3Aloud(&|$)`) }]);
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
    await page
      .getByRole('dialog')
      .getByLabel('Input (JSON object)')
      .fill('{"since":"1d","channel":"web","customer":{"email":"x@example.com"},"delayMs":10000}');
    await page.getByRole('dialog').getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    await expect.poll(() => runStatus().getAttribute('data-status'), { timeout: 10_000 }).toBe('running');
    // Live updates are long polls: while the run sleeps (10 s) nothing changes, so the server holds the watch request
    // open. Over 3 s at most two watch requests are in flight and one of them stays open more than 1.5 s — a fixed
    // poll (any interval) has every request answered at once.
    const runId = page.url().split('/').pop()!;
    await page.waitForTimeout(500);
    const windowStart = Date.now();
    await page.waitForTimeout(3000);
    const now = Date.now();
    const watches = w.requests.filter(
      (r) => r.url.includes(`/api/runs/${runId}/watch`) && r.url.includes('since=') && (r.end ?? now) > windowStart,
    );
    expect(watches.length).toBeGreaterThanOrEqual(1);
    expect(watches.length).toBeLessThanOrEqual(2);
    expect(Math.max(...watches.map((r) => (r.end ?? now) - r.start))).toBeGreaterThan(1500);
    await pageAction(page, 'Cancel run');
    // the page hears the cancel through its open long poll; 10 s leaves room for a loaded CI machine
    await expect.poll(() => runStatus().getAttribute('data-status'), { timeout: 10_000 }).toBe('canceled');
    checkConsole();
  });

  it('loads every page without console errors or requests to other origins, and shows not-found pages', async () => {
    const pages: [string, string, string][] = [
      ['/', 'Home', '01-home'],
      ['/flows', 'Flows', '02-flows'],
      ['/runs', 'Runs', '09-runs-all'],
      [`/runs/${firstRunId}`, 'importOrders', '06-run-completed'],
      ['/providers', 'Providers', '11-providers'],
      ['/crons', 'Crons', '12-crons'],
      ['/functions', 'Functions', '17-functions'],
      ['/mcp-tokens', 'MCP', '13-mcp'],
    ];
    for (const [path, title, shot] of pages) {
      await page.goto(path);
      await page.getByRole('heading', { name: title, level: 1 }).waitFor();
      // not `networkidle`: Home and the runs lists keep a long poll open (their live updates)
      await waitForQuiet(w);
      await screenshot(page, shot);
    }
    await page.goto('/');
    await page.getByText('Runs in the last 24 hours').waitFor();
    await expect.poll(() => page.getByRole('link', { name: /Completed runs, last 24 hours/ }).textContent()).toMatch(/^\d/);
    await page.getByText('Next cron fires').waitFor();
    await screenshot(page, '01-home');
    expect(w.errors).toEqual([]);
    for (const path of ['/no/such/page', '/runs/1/extra']) {
      await page.goto(path);
      await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    }
    await screenshot(page, '16-not-found');
    checkConsole();
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
    const token = await sessionToken(dev.url);
    for (let i = 0; i < 26; i++) {
      const res = await fetch(`${dev.url}/api/flows/flaky/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{"input":{}}',
      });
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
    await page
      .getByText(new RegExp(`Deleted ${count} runs`))
      .first()
      .waitFor();
    await page.getByText('No runs match these filters').waitFor();
    checkConsole();
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
    await page.getByRole('button', { name: 'Check connection to crm' }).click();
    await expect.poll(() => badge.textContent()).toContain('Error');
    // Save again with the password left empty: the stored one is kept (the check still fails), then replace it.
    await page.getByRole('button', { name: 'Save crm' }).click();
    await page.getByRole('button', { name: 'Check connection to crm' }).click();
    await expect.poll(() => badge.textContent()).toContain('Error');
    await page.getByLabel('API key *').fill('right-key');
    await page.getByRole('button', { name: 'Save crm' }).click();
    await page.getByRole('button', { name: 'Check connection to crm' }).click();
    await expect.poll(() => badge.textContent()).toContain('Connected');
    await screenshot(page, '11-providers');
    checkConsole([{ status: 400, path: '/api/providers/crm' }]);
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
    checkConsole();
  });

  it('creates an MCP token (secret shown once), which works once; then revokes it', async () => {
    await page.goto('/mcp-tokens');
    await page.getByText('No tokens yet').waitFor();
    await pageAction(page, 'Create token');
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('Support assistant');
    // The expiry choices are the server's (GET /api/mcp/capabilities), with its default preselected: 90 days.
    const caps = (await (
      await fetch(`${dev.url}/api/mcp/capabilities`, { headers: { authorization: `Bearer ${await sessionToken(dev.url)}` } })
    ).json()) as {
      expiryOptions: { label: string; default: boolean }[];
    };
    expect(caps.expiryOptions.map((o) => o.label)).toEqual(expect.arrayContaining(['30 days', '90 days', '1 year', 'Never']));
    const radios = dialog.getByRole('radio');
    expect(await radios.count()).toBe(caps.expiryOptions.length);
    for (const option of caps.expiryOptions)
      expect(await dialog.getByRole('radio', { name: option.label, exact: true }).isChecked()).toBe(option.default);
    expect(caps.expiryOptions.find((o) => o.default)?.label).toBe('90 days');
    await dialog.getByRole('radio', { name: '1 year', exact: true }).check({ force: true });
    await dialog.getByRole('checkbox', { name: /List flows and recent runs/ }).check({ force: true });
    await dialog.getByRole('checkbox', { name: /^Run flows/ }).check({ force: true });
    await dialog.getByText(/High-risk grants selected: Run flows/).waitFor();
    await screenshot(page, '13-mcp-create');
    const [created] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/api/mcp/tokens'),
      dialog.getByRole('button', { name: 'Create token' }).click(),
    ]);
    expect(created.postDataJSON()).toEqual({ name: 'Support assistant', permissions: expect.any(Array), expiresInDays: 365 });
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
    tokenPageUrl = new URL(page.url()).pathname;
    await screenshot(page, '15-mcp-token');
    await pageAction(page, 'Revoke');
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await page.getByText('Token revoked').first().waitFor();
    await page.getByText(/This token was revoked/).waitFor();
    expect((await call()).status).toBe(403);
    checkConsole();
  });

  it('manages function instances: create, userErrors next to their fields, edit (a re-created cart transform names its new id), delete', async () => {
    const base = '/api/functions/volume-discount/instances';
    await page.goto('/');
    await page.locator('nav').getByRole('link', { name: 'Functions', exact: true }).click();
    await page.getByRole('heading', { name: 'Functions', level: 1 }).waitFor();
    const discount = page.getByRole('region', { name: 'Volume discount function' });
    const bundles = page.getByRole('region', { name: 'Bundles function' });
    await discount.getByText('No instances yet').waitFor();
    await bundles.getByText('No instances yet').waitFor();
    // A type without platform mutations: listed, nothing to manage.
    await page.getByRole('region', { name: 'Nearest store function' }).getByText("Managed in the platform's admin").waitFor();
    expect(
      await page
        .getByRole('region', { name: 'Nearest store function' })
        .getByRole('button', { name: /Create/ })
        .count(),
    ).toBe(0);

    // Create a code discount. Checked before sending: the mode, the title, the configuration's required fields.
    await discount.getByRole('button', { name: 'Create instance of Volume discount' }).click();
    const dialog = page.getByRole('dialog');
    const before = w.requests.length;
    await dialog.getByRole('button', { name: 'Create instance' }).click();
    await expect.poll(() => describedBy(page, 'Discount mode *')).toContain('Choose a discount mode');
    expect(await describedBy(page, 'Title *')).toContain('Required');
    expect(await describedBy(page, 'Percent off *')).toContain('Required');
    expect(w.requests.slice(before).filter((r) => r.url.includes(base))).toEqual([]);
    // The code-only fields appear with the code mode.
    expect(await dialog.getByLabel('Discount code *').count()).toBe(0);
    await dialog.getByLabel('Discount mode *').selectOption('code');
    await dialog.getByLabel('Title *').fill('Bulk 10');
    await dialog.getByLabel('Discount code *').fill('BULK10');
    await dialog.getByLabel('Minimum quantity per line *').fill('3');
    await dialog.getByLabel('Percent off *').fill('150');
    await dialog.getByRole('button', { name: 'Create instance' }).click();
    // Mercato's own check (the field's validator): its userError next to the field, nothing created.
    await expect.poll(() => describedBy(page, 'Percent off *')).toContain('Field "percentage"');
    await dialog.getByText('Not saved').waitFor();
    await dialog.getByLabel('Percent off *').fill('10');
    const [createRequest] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === base),
      dialog.getByRole('button', { name: 'Create instance' }).click(),
    ]);
    expect(createRequest.postDataJSON()).toMatchObject({
      mode: 'code',
      title: 'Bulk 10',
      code: 'BULK10',
      appliesOncePerCustomer: false,
      config: { minQuantity: 3, percentage: 10 },
    });
    await page.getByText('Bulk 10 created').first().waitFor();
    const bulkRow = discount.getByRole('row', { name: /Bulk 10/ });
    await bulkRow.waitFor();
    expect(await bulkRow.textContent()).toMatch(/Discount code: BULK10.*Percent off: 10/);

    // The platform's userError: the code is taken (case-insensitive) — shown next to the code field.
    await discount.getByRole('button', { name: 'Create instance of Volume discount' }).click();
    await dialog.getByLabel('Discount mode *').selectOption('code');
    await dialog.getByLabel('Title *').fill('Bulk again');
    await dialog.getByLabel('Discount code *').fill('bulk10');
    await dialog.getByLabel('Minimum quantity per line *').fill('2');
    await dialog.getByLabel('Percent off *').fill('5');
    await dialog.getByRole('button', { name: 'Create instance' }).click();
    await expect.poll(() => describedBy(page, 'Discount code *')).toContain('Code must be unique. Please try a different code.');
    expect(await dialog.getByLabel('Discount code *').getAttribute('aria-invalid')).toBe('true');
    await dialog.getByText('The platform refused it').waitFor();
    await screenshot(page, '18-function-user-error');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => dialog.count()).toBe(0);

    // Edit: only what changed is sent; an end before the start is the platform's userError next to "Ends at".
    await discount.getByRole('button', { name: 'Edit Bulk 10' }).click();
    expect(await dialog.getByLabel('Discount mode *').isDisabled()).toBe(true);
    await dialog.getByLabel('Ends at').fill('2001-01-01T00:00');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => describedBy(page, 'Ends at')).toContain('Ends at needs to be after starts_at');
    await dialog.getByLabel('Ends at').fill('');
    await dialog.getByLabel('Title *').fill('Bulk 15');
    await dialog.getByLabel('Percent off *').fill('15');
    const [updateRequest] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'PUT' && new URL(r.url()).pathname.startsWith(`${base}/`)),
      dialog.getByRole('button', { name: 'Save' }).click(),
    ]);
    expect(updateRequest.postDataJSON()).toEqual({ title: 'Bulk 15', config: { minQuantity: 3, percentage: 15 } });
    await page.getByText('Bulk 10 saved').first().waitFor();
    const renamed = discount.getByRole('row', { name: /Bulk 15/ });
    await renamed.waitFor();
    expect(await renamed.textContent()).toContain('Percent off: 15');

    // A cart transform cannot be updated on the platform: saving re-creates it, and the page names the id that stands.
    await bundles.getByRole('button', { name: 'Create instance of Bundles' }).click();
    await dialog.getByLabel('Bundle tag *').fill('bundle');
    await dialog.getByRole('button', { name: 'Create instance' }).click();
    await bundles.getByRole('row', { name: /Cart transform/ }).waitFor();
    const previousId = (await bundles.getByTestId('instance-id').textContent())!.trim();
    expect(previousId).toMatch(/^gid:\/\/shopify\/CartTransform\/\d+$/);
    await bundles.getByRole('button', { name: /^Edit Cart transform/ }).click();
    await dialog.getByText('saving deletes this one and creates it again').waitFor();
    await dialog.getByLabel('Bundle tag *').fill('kit');
    const [updated] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().includes('/api/functions/bundles/instances/')),
      dialog.getByRole('button', { name: 'Save' }).click(),
    ]);
    const answer = (await updated.json()) as { ok: boolean; id: string; previousId: string; recreated: boolean };
    expect(answer).toMatchObject({ ok: true, recreated: true, previousId });
    expect(answer.id).not.toBe(previousId);
    await expect
      .poll(() => bundles.getByTestId('recreated-notice').textContent())
      .toContain(`its id is now ${answer.id} (it was ${previousId})`);
    await expect.poll(() => bundles.getByTestId('instance-id').textContent()).toBe(answer.id);
    expect(await bundles.getByRole('row', { name: /Cart transform/ }).textContent()).toContain('Bundle tag: kit');
    await screenshot(page, '17-functions');

    // Delete with a confirmation; a discount definition with both modes sends the instance's mode.
    await discount.getByRole('button', { name: 'Delete Bulk 15' }).click();
    await dialog.getByText('This cannot be undone').waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => dialog.count()).toBe(0);
    expect(await renamed.count()).toBe(1);
    await discount.getByRole('button', { name: 'Delete Bulk 15' }).click();
    const [deleteRequest] = await Promise.all([
      page.waitForRequest((r) => r.method() === 'DELETE' && r.url().includes(base)),
      dialog.getByRole('button', { name: 'Delete instance' }).click(),
    ]);
    expect(new URL(deleteRequest.url()).searchParams.get('mode')).toBe('code');
    await page.getByText('Bulk 15 deleted').first().waitFor();
    await discount.getByText('No instances yet').waitFor();
    // The platform agrees: no discount instance left, the re-created cart transform stands.
    const token = await sessionToken(dev.url);
    const list = async (handle: string) =>
      (
        (await (await fetch(`${dev.url}/api/functions/${handle}/instances`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
          instances: { id: string }[];
        }
      ).instances;
    expect(await list('volume-discount')).toEqual([]);
    expect((await list('bundles')).map((i) => i.id)).toEqual([answer.id]);
    checkConsole([
      { status: 400, path: base },
      { status: 400, path: new RegExp(`^${base}/[^/?]+$`) },
    ]);
  });

  it('shows an error with Try again when an API fails, and recovers', async () => {
    // The page's own list fails.
    let fail = true;
    await page.route('**/api/functions', (route) =>
      fail
        ? route.fulfill({ status: 500, contentType: 'application/json', body: '{"error":"The platform request failed: simulated outage"}' })
        : route.continue(),
    );
    await page.goto('/functions');
    await page.getByText('Functions could not be loaded').waitFor();
    await page.getByText('The platform request failed: simulated outage').waitFor();
    await screenshot(page, '19-error-state');
    fail = false;
    await page.getByRole('button', { name: 'Try again' }).click();
    await page
      .getByRole('region', { name: 'Bundles function' })
      .getByRole('row', { name: /Cart transform/ })
      .waitFor();
    await page.unroute('**/api/functions');

    // One definition's instances fail (the app not installed: 409): that card says so, the others work.
    fail = true;
    await page.route('**/api/functions/bundles/instances', (route) =>
      fail
        ? route.fulfill({ status: 409, contentType: 'application/json', body: '{"error":"The app is not installed on this shop"}' })
        : route.continue(),
    );
    await page.goto('/functions');
    const bundles = page.getByRole('region', { name: 'Bundles function' });
    await bundles.getByText('The instances could not be loaded').waitFor();
    await bundles.getByText('The app is not installed on this shop').waitFor();
    await page.getByRole('region', { name: 'Volume discount function' }).getByText('No instances yet').waitFor();
    fail = false;
    await bundles.getByRole('button', { name: 'Try again' }).click();
    await bundles.getByRole('row', { name: /Cart transform/ }).waitFor();
    await page.unroute('**/api/functions/bundles/instances');

    // A token's page whose capabilities fail shows the error (it used to show a skeleton for ever).
    expect(tokenPageUrl).toMatch(/^\/mcp-tokens\/.+/);
    fail = true;
    await page.route('**/api/mcp/capabilities', (route) =>
      fail
        ? route.fulfill({ status: 500, contentType: 'application/json', body: '{"error":"capabilities unavailable"}' })
        : route.continue(),
    );
    await page.goto(tokenPageUrl);
    await page.getByText('MCP token could not be loaded').waitFor();
    await page.getByText('capabilities unavailable').waitFor();
    fail = false;
    await page.getByRole('button', { name: 'Try again' }).click();
    await page.getByRole('heading', { name: 'Support assistant', level: 1 }).waitFor();
    await page.unroute('**/api/mcp/capabilities');
    checkConsole([
      { status: 500, path: '/api/functions' },
      { status: 409, path: '/api/functions/bundles/instances' },
      { status: 500, path: '/api/mcp/capabilities' },
    ]);
  });

  it('after a 401, mints one new session token and retries with it, without reloading the page', async () => {
    await page.goto('/flows');
    await page.getByRole('heading', { name: 'Flows', level: 1 }).waitFor();
    await page.waitForLoadState('networkidle');
    // A mark on the window: a page load would remove it.
    await page.evaluate(() => ((window as unknown as { __sameDocument: boolean }).__sameDocument = true));
    let rejected = 0;
    await page.route('**/api/providers', async (route) => {
      if (rejected++ === 0)
        await route.fulfill({ status: 401, contentType: 'application/json', body: '{"error":"Session token expired"}' });
      else await route.continue();
    });
    const before = w.requests.length;
    const [minted] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/__mercato/preview/session-token')),
      page.locator('nav').getByRole('link', { name: 'Providers', exact: true }).click(),
    ]);
    await page.getByRole('heading', { name: 'crm' }).waitFor();
    await page.unroute('**/api/providers');
    const seen = w.requests.slice(before);
    const calls = seen.filter((r) => new URL(r.url).pathname === '/api/providers');
    const mints = seen.filter((r) => r.method === 'POST' && r.url.endsWith('/__mercato/preview/session-token'));
    expect(rejected).toBe(2);
    expect(calls).toHaveLength(2);
    expect(mints).toHaveLength(1);
    // In order: the refused call, one mint, the retry — which carries the new token, not the refused one.
    expect(seen.indexOf(calls[0]!)).toBeLessThan(seen.indexOf(mints[0]!));
    expect(seen.indexOf(mints[0]!)).toBeLessThan(seen.indexOf(calls[1]!));
    const { token } = (await minted.json()) as { token: string };
    expect(calls[1]!.authorization).toBe(`Bearer ${token}`);
    expect(calls[0]!.authorization).toMatch(/^Bearer .+/);
    expect(calls[1]!.authorization).not.toBe(calls[0]!.authorization);
    expect(seen.filter((r) => r.method === 'GET' && new URL(r.url).pathname === '/providers')).toEqual([]); // no document load
    expect(await page.evaluate(() => (window as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    checkConsole([{ status: 401, path: '/api/providers' }]);
  });

  it('is usable with the keyboard alone', async () => {
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
    checkConsole();
  });
});

/** A second `mercato dev` of the same app with one page disabled: its address is Page not found, its API 404. */
describe.skipIf(!hasChromium)('admin UI with a disabled page', { timeout: 60_000 }, () => {
  let dev: DevServer;
  let w: Watched;
  let database: TestDatabase | undefined;

  beforeAll(async () => {
    if (process.env.DATABASE_URL) database = await createTestDatabase('postgres', { migrate: false });
    const [server] = await Promise.all([
      startDev(PROJECT, { databaseUrl: database?.url, env: { ADMIN_UI_DISABLED_PAGE: 'functions' } }),
      ensureAdminUiBuilt(),
    ]);
    dev = server;
    w = await launch(dev.url);
  }, 180_000);

  afterAll(async () => {
    await w?.close();
    await dev?.stop();
    await database?.drop();
  }, 30_000);

  it('leaves the page out of the navigation and shows Page not found at its address', async () => {
    const page = w.page;
    await page.goto(`/__mercato/preview/?next=${encodeURIComponent('/functions')}`);
    await page.getByLabel('Shop').selectOption(SHOP);
    await page.getByRole('button', { name: 'Open the admin' }).click();
    await page.waitForURL((url) => url.pathname === '/functions' && !url.search.includes('preview-shop'));
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    const nav = page.locator('nav');
    await expect.poll(() => nav.getByRole('link', { name: 'Flows', exact: true }).count()).toBe(1);
    expect(await nav.getByRole('link', { name: 'Functions' }).count()).toBe(0);
    expect(await nav.getByRole('link', { name: 'Crons' }).count()).toBe(0); // hidden, not disabled
    await page.goto('/crons'); // a hidden page still works by URL
    await page.getByRole('heading', { name: 'Crons', level: 1 }).waitFor();
    const res = await fetch(`${dev.url}/api/functions`, { headers: { authorization: `Bearer ${await sessionToken(dev.url)}` } });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'Not found' });
    expect(unexpected(w.errors)).toEqual([]);
    expect(w.foreign).toEqual([]);
  });
});
