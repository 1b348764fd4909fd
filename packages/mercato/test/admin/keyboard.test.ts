/**
 * The main journeys with the keyboard alone (Tab, Shift+Tab, Enter, Space, Escape, typing) in Debian's Chromium against
 * the real `mercato dev`: open a flow and run it through its dialog, open a run, create an MCP token, save a provider.
 * At each step the test asserts where the focus is — on the control a user expects, inside an open dialog (Tab and
 * Shift+Tab stay in it), back on the control that opened a dialog once it closes, on the main content after a
 * navigation — and that the focused control shows it (the pixels around it differ from its unfocused look).
 * One engine per run: PGlite, or PostgreSQL when DATABASE_URL is set.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { ensureAdminUiBuilt } from './build.ts';
import { CHROMIUM, type DevServer, type Watched, launch, startDev, unexpected } from './browser.ts';
import { type Seeded, callApi, openAdmin, seed } from './seed.ts';

const PROJECT = fileURLToPath(new URL('../fixtures/admin-ui-app/', import.meta.url));
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

describe.skipIf(!hasChromium)('admin UI with the keyboard alone', { timeout: 60_000 }, () => {
  let dev: DevServer;
  let w: Watched;
  let page: Page;
  let data: Seeded;
  let database: TestDatabase | undefined;

  beforeAll(async () => {
    if (process.env.DATABASE_URL) database = await createTestDatabase('postgres', { migrate: false });
    const [server] = await Promise.all([startDev(PROJECT, { databaseUrl: database?.url }), ensureAdminUiBuilt()]);
    dev = server;
    data = await seed(dev.url);
    w = await launch(dev.url);
    page = w.page;
    await openAdmin(page, '/');
  }, 180_000);

  afterAll(async () => {
    await w?.close();
    await dev?.stop();
    await database?.drop();
  }, 30_000);

  const isFocused = (target: Locator) => target.evaluate((el) => el === document.activeElement);
  const focusInDialog = () => page.evaluate(() => !!document.activeElement?.closest('[role="dialog"]'));
  const focusOnMain = () => page.evaluate(() => document.activeElement?.id === 'main-content');
  const dialog = () => page.getByRole('dialog');

  /** Presses Tab (or Shift+Tab) until `target` has the focus; fails after `max` presses. */
  async function tabTo(target: Locator, { back = false, max = 60 } = {}) {
    await target.waitFor();
    for (let i = 0; i < max; i++) {
      if (await isFocused(target)) return;
      await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    }
    expect(await isFocused(target), `${target} never got the focus in ${max} presses of ${back ? 'Shift+Tab' : 'Tab'}`).toBe(true);
  }

  /** The focused element looks focused: the pixels in and around it change when it loses the focus. */
  async function expectVisibleFocus() {
    const el = await page.evaluateHandle(() => document.activeElement as HTMLElement);
    const described = await el.evaluate((e) => `${e.tagName} ${e.getAttribute('aria-label') ?? e.textContent?.trim().slice(0, 40)}`);
    await el.evaluate((e) => e.scrollIntoView({ block: 'center' }));
    const box = await el.asElement()!.boundingBox();
    expect(box, `the focused ${described} is rendered`).not.toBeNull();
    const viewport = page.viewportSize()!;
    const x = Math.max(0, box!.x - 4);
    const y = Math.max(0, box!.y - 4);
    const clip = { x, y, width: Math.min(viewport.width - x, box!.width + 8), height: Math.min(viewport.height - y, box!.height + 8) };
    const focused = await page.screenshot({ clip, animations: 'disabled' });
    await el.evaluate((e) => e.blur());
    const blurred = await page.screenshot({ clip, animations: 'disabled' });
    await el.evaluate((e) => e.focus());
    expect(focused.equals(blurred), `the focused ${described} shows no focus indicator`).toBe(false);
  }

  it('skips to the content, then moves through the navigation to a page', async () => {
    await page.goto('/');
    await page.getByText('Next cron fires').waitFor();
    await page.keyboard.press('Tab');
    const skip = page.getByRole('link', { name: 'Skip to content' });
    expect(await isFocused(skip)).toBe(true);
    await expectVisibleFocus();
    await page.keyboard.press('Enter');
    expect(await focusOnMain()).toBe(true);
    // The next Tab goes into the page, past the navigation.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => !!document.activeElement?.closest('#main-content'))).toBe(true);
    // Back to the navigation (Shift+Tab), then follow Flows with Enter: the focus moves to the new page's content.
    const flowsLink = page.locator('nav').getByRole('link', { name: 'Flows', exact: true });
    await tabTo(flowsLink, { back: true });
    await expectVisibleFocus();
    await page.keyboard.press('Enter');
    await page.waitForURL('**/flows');
    await page.getByRole('heading', { name: 'importOrders' }).waitFor();
    expect(await focusOnMain()).toBe(true);
  });

  it('opens a flow and runs it through its dialog: Escape closes, focus is trapped and returns', async () => {
    await page.goto('/flows');
    const runButton = page.getByRole('button', { name: 'Run importOrders' });
    await tabTo(runButton);
    await expectVisibleFocus();
    // Enter opens the dialog, with the focus inside; Escape closes it and gives the focus back to the button.
    await page.keyboard.press('Enter');
    await dialog().waitFor();
    await expect.poll(focusInDialog).toBe(true);
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog().count()).toBe(0);
    await expect.poll(() => isFocused(runButton)).toBe(true);
    // Space opens it too. Tab and Shift+Tab cycle inside it.
    await page.keyboard.press('Space');
    await dialog().waitFor();
    await expect.poll(focusInDialog).toBe(true);
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press('Tab');
      expect(await focusInDialog(), `Tab ${i + 1} left the dialog`).toBe(true);
    }
    for (let i = 0; i < 25; i++) {
      await page.keyboard.press('Shift+Tab');
      expect(await focusInDialog(), `Shift+Tab ${i + 1} left the dialog`).toBe(true);
    }
    // Fill the form by typing; a select takes type-ahead; Space ticks a checkbox.
    await tabTo(dialog().getByLabel('Since *'));
    await expectVisibleFocus();
    await page.keyboard.type('7d');
    await tabTo(dialog().getByLabel('Dry run'));
    await page.keyboard.press('Space');
    expect(await dialog().getByLabel('Dry run').isChecked()).toBe(true);
    await tabTo(dialog().getByLabel('Channel *'));
    await page.keyboard.type('pos');
    expect(
      await dialog()
        .getByLabel('Channel *')
        .evaluate((s: HTMLSelectElement) => s.selectedOptions[0]?.textContent),
    ).toBe('pos');
    await tabTo(dialog().getByLabel('Email *'));
    await page.keyboard.type('ada@example.com');
    const run = dialog().getByRole('button', { name: 'Run', exact: true });
    await tabTo(run);
    await expectVisibleFocus();
    await page.keyboard.press('Enter');
    // The run's page: the dialog is gone and the focus is on the new page's content, not lost on <body>.
    await page.waitForURL(/\/runs\/[0-9a-f-]{36}$/);
    await page.getByTestId('run-status').waitFor();
    expect(await dialog().count()).toBe(0);
    expect(await focusOnMain()).toBe(true);
    const runId = page.url().split('/').pop()!;
    const started = (await callApi(dev.url, 'GET', `/api/runs/${runId}`)) as { flowName: string; input: Record<string, unknown> };
    expect(started.flowName).toBe('importOrders');
    expect(started.input).toMatchObject({ since: '7d', dryRun: true, channel: 'pos', customer: { email: 'ada@example.com' } });
  });

  it('opens a run from the runs list', async () => {
    await page.goto('/runs');
    const link = page.getByRole('link', { name: data.completedRunId.slice(0, 8), exact: true });
    await tabTo(link, { max: 80 });
    await expectVisibleFocus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/runs/${data.completedRunId}`);
    await page.getByRole('heading', { name: 'importOrders', level: 1 }).waitFor();
    expect(await focusOnMain()).toBe(true);
    // A step's result opens with the keyboard (a disclosure button) and shows its JSON.
    const show = page.getByRole('button', { name: 'Show result of step summarise' });
    await tabTo(show, { max: 80 });
    await page.keyboard.press('Enter');
    await page.getByLabel('Result of step summarise', { exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Hide result of step summarise' }).getAttribute('aria-expanded')).toBe('true');
  });

  it('creates an MCP token: the editor and the one-time secret, then the focus is back on Create token', async () => {
    await page.goto('/mcp-tokens');
    await page.getByRole('link', { name: 'Support assistant' }).waitFor();
    const create = page.getByRole('button', { name: 'Create token' }).filter({ visible: true }).first();
    await tabTo(create);
    await expectVisibleFocus();
    await page.keyboard.press('Enter');
    await dialog().waitFor();
    await expect.poll(focusInDialog).toBe(true);
    await tabTo(dialog().getByLabel('Name'));
    await page.keyboard.type('Keyboard client');
    const listFlows = dialog().getByRole('checkbox', { name: /List flows and recent runs/ });
    await tabTo(listFlows);
    await expectVisibleFocus();
    await page.keyboard.press('Space');
    expect(await listFlows.isChecked()).toBe(true);
    await tabTo(dialog().getByRole('button', { name: 'Create token' }));
    await page.keyboard.press('Enter');
    // The secret dialog replaces the editor; the focus is in it.
    await page.getByTestId('mcp-secret').waitFor();
    await expect.poll(focusInDialog).toBe(true);
    const stored = dialog().getByRole('button', { name: 'I have stored it' });
    await tabTo(stored);
    await page.keyboard.press('Enter');
    await expect.poll(() => dialog().count()).toBe(0);
    await expect.poll(() => isFocused(create)).toBe(true);
    await page.getByRole('link', { name: 'Keyboard client' }).waitFor();
    const tokens = (await callApi(dev.url, 'GET', '/api/mcp/tokens')) as { tokens: { name: string; permissions: string[] }[] };
    expect(tokens.tokens.find((t) => t.name === 'Keyboard client')?.permissions).toEqual(['read_flows']);
  });

  it('saves a provider: Enter in a field submits its form, Space checks the connection; the focus stays put', async () => {
    await page.goto('/providers');
    const baseUrl = page.getByLabel('Base URL *');
    await tabTo(baseUrl);
    await expectVisibleFocus();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('not a url');
    await page.keyboard.press('Enter');
    // The server's error is next to the field, and the focus has not moved.
    await expect.poll(() => baseUrl.getAttribute('aria-invalid')).toBe('true');
    expect(await isFocused(baseUrl)).toBe(true);
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('https://crm.example/v2');
    await tabTo(page.getByLabel('API key *'));
    await page.keyboard.type('right-key');
    const save = page.getByRole('button', { name: 'Save crm' });
    await tabTo(save);
    await expectVisibleFocus();
    await page.keyboard.press('Enter');
    await page.getByText('crm saved').first().waitFor();
    await expect.poll(() => baseUrl.getAttribute('aria-invalid')).not.toBe('true');
    expect(await isFocused(save)).toBe(true);
    const check = page.getByRole('button', { name: 'Check connection to crm' });
    await tabTo(check, { back: true });
    await page.keyboard.press('Space');
    await expect.poll(() => page.locator('form[aria-label="crm settings"] .Polaris-Badge').first().textContent()).toContain('Connected');
    const saved = (await callApi(dev.url, 'GET', '/api/providers')) as { providers: { name: string; config: Record<string, unknown> }[] };
    expect(saved.providers.find((p) => p.name === 'crm')?.config).toMatchObject({ baseUrl: 'https://crm.example/v2' });
    // Only the wrong URL was refused (400); nothing else logged an error, nothing came from elsewhere.
    expect(unexpected(w.errors.splice(0), [{ status: 400, path: '/api/providers/crm' }])).toEqual([]);
    expect(w.foreign).toEqual([]);
  });
});
