/**
 * The charts (issue 35, item 1) in Chromium against `mercato dev` with seeded runs: Home's runs over time by status
 * (24 hours and 7 days) with the failure rate, and the Flows page's figures and sparkline per flow. Each chart is drawn
 * (an SVG), its text summary for screen readers carries the seeded figures, the pages fit 1440 and 390 px without a
 * page-wide horizontal scroll, and axe finds no violation. Screenshots go to test-artifacts/admin-ui-charts/. One engine
 * per run: PGlite, or PostgreSQL when DATABASE_URL is set.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FlowStatsResponse } from '../../src/api/types.ts';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { type Violation, axeViolations, blocking } from './axe.ts';
import { ensureAdminUiBuilt } from './build.ts';
import { CHROMIUM, type DevServer, type Watched, launch, startDev, waitForQuiet } from './browser.ts';
import { callApi, openAdmin, runToEnd } from './seed.ts';

const PROJECT = fileURLToPath(new URL('../fixtures/admin-ui-app/', import.meta.url));
const OUT = fileURLToPath(new URL('../../../../test-artifacts/admin-ui-charts/', import.meta.url));
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

/** The page's text for screen readers: what the visually hidden summaries say. */
async function hiddenText(page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).allTextContents()).join(' ').replace(/\s+/g, ' ').trim();
}

/** The same duration text as the UI (lib/format.ts `formatDuration`), for the figures the server computed. */
function formatDuration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

describe.skipIf(!hasChromium)('admin charts (Chromium)', { timeout: 90_000 }, () => {
  let dev: DevServer;
  let w: Watched;
  let page: Page;
  let database: TestDatabase | undefined;
  let flowStats: FlowStatsResponse;
  const report: Record<string, Violation[]> = {};

  beforeAll(async () => {
    if (existsSync(OUT)) rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    if (process.env.DATABASE_URL) database = await createTestDatabase('postgres', { migrate: false });
    const [server] = await Promise.all([startDev(PROJECT, { databaseUrl: database?.url }), ensureAdminUiBuilt()]);
    dev = server;
    // 3 completed runs of importOrders (one after the other: the flow allows one active run), 2 failed runs of flaky
    for (const delayMs of [0, 20, 40]) {
      const run = await runToEnd(dev.url, 'importOrders', { since: '1d', channel: 'web', customer: { email: 'a@example.com' }, delayMs });
      expect(run.status).toBe('completed');
    }
    for (let i = 0; i < 2; i++) expect((await runToEnd(dev.url, 'flaky', {})).status).toBe('failed');
    flowStats = (await callApi(dev.url, 'GET', '/api/stats/flows')) as FlowStatsResponse;
    w = await launch(dev.url);
    page = w.page;
    await openAdmin(page, '/');
  }, 180_000);

  afterAll(async () => {
    if (existsSync(OUT)) writeFileSync(join(OUT, 'axe-report.json'), JSON.stringify(report, null, 2));
    await w?.close();
    await dev?.stop();
    await database?.drop();
  }, 30_000);

  /**
   * Waits until the page has settled, then runs axe: no violation of any impact, but one of the app's frame that every
   * page has at desktop widths (moderate `region`: the top bar's context control and Polaris' frame container are not in
   * a landmark; a11y.test.ts lets moderate findings pass and reports them).
   */
  async function axe(name: string) {
    await waitForQuiet(w);
    const violations = await axeViolations(page);
    report[name] = violations;
    const ofTheFrame = (v: Violation) =>
      v.id === 'region' && v.nodes.every((n) => n.target.startsWith('.Polaris-TopBar') || n.target.startsWith('.Polaris-Frame >'));
    expect(
      violations.filter((v) => !ofTheFrame(v)).map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target).join(' | ')}`),
      `axe on ${name}`,
    ).toEqual([]);
    expect(blocking(violations), `axe on ${name}, as a11y.test.ts checks`).toEqual([]);
  }

  /** No page-wide horizontal scroll. */
  async function fitsWidth() {
    const { scrollWidth, clientWidth } = await page.evaluate(() => {
      const doc = document.scrollingElement ?? document.documentElement;
      return { scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth };
    });
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
  }

  async function shot(name: string) {
    await waitForQuiet(w);
    await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
  }

  const chartSvg = () => page.locator('.run-stats-chart svg').first();

  for (const width of [1440, 390]) {
    it(`Home at ${width} px: runs over time by status (24 hours, 7 days) and the failure rate`, async () => {
      await page.setViewportSize({ width, height: 900 });
      await page.goto('/');
      await page.getByRole('heading', { name: 'Runs over time' }).waitFor();
      await chartSvg().waitFor();
      await expect.poll(() => page.locator('.run-stats-chart[data-range="24h"] svg rect').count()).toBeGreaterThan(0);
      await expect.poll(() => page.getByText('Failure rate 40%', { exact: true }).isVisible()).toBe(true);
      expect(await page.getByText('2 of 5 finished runs failed, last 24 hours').isVisible()).toBe(true);
      const summary = await hiddenText(page, '[data-testid="run-stats-summary"] p');
      expect(summary).toBe(
        'Runs per hour over the last 24 hours: 5 runs in total, 3 completed, 2 failed, 0 canceled, 0 running, 0 sleeping, 0 pending. ' +
          'Failure rate 40% (2 of 5 finished runs).',
      );
      // the table of every hour: 24 rows whose totals add up to the 5 runs
      const totals = await page.locator('[data-testid="run-stats-summary"] tbody tr td:last-child').allTextContents();
      expect(totals).toHaveLength(24);
      expect(totals.map(Number).reduce((a, b) => a + b, 0)).toBe(5);
      await fitsWidth();
      await shot(`home-24h-${width}`);
      await axe(`home-24h-${width}`);

      await page.getByRole('group', { name: 'Period of the runs chart' }).getByRole('button', { name: '7 days' }).click();
      await page.locator('.run-stats-chart[data-range="7d"] svg').first().waitFor();
      expect(await page.getByRole('button', { name: '7 days' }).getAttribute('aria-pressed')).toBe('true');
      expect(await hiddenText(page, '[data-testid="run-stats-summary"] p')).toBe(
        'Runs per 6 hours over the last 7 days: 5 runs in total, 3 completed, 2 failed, 0 canceled, 0 running, 0 sleeping, 0 pending. ' +
          'Failure rate 40% (2 of 5 finished runs).',
      );
      expect(await page.locator('[data-testid="run-stats-summary"] tbody tr').count()).toBe(28);
      await fitsWidth();
      await shot(`home-7d-${width}`);
      await axe(`home-7d-${width}`);
    });

    it(`Flows at ${width} px: runs, success rate, p50/p95 and a sparkline per flow`, async () => {
      await page.setViewportSize({ width, height: 900 });
      await page.goto('/flows');
      await page.getByRole('heading', { name: 'importOrders' }).waitFor();
      await expect.poll(() => page.locator('.flow-sparkline svg').count()).toBe(2);
      const imports = flowStats.flows.find((f) => f.flowName === 'importOrders')!;
      const flaky = flowStats.flows.find((f) => f.flowName === 'flaky')!;
      expect([imports.runs, imports.completed, imports.successRate, flaky.runs, flaky.failed, flaky.successRate]).toEqual([
        3, 3, 1, 2, 2, 0,
      ]);
      const hourly = (row: typeof imports) => row.hourly.join(', ');
      const sentences = await page.locator('.flow-stats > p.visually-hidden').allTextContents();
      expect(sentences).toEqual([
        `importOrders, last 24 hours: 3 runs, success rate 100% (3 of 3 finished runs), duration p50 ${formatDuration(imports.p50Ms)}, ` +
          `p95 ${formatDuration(imports.p95Ms)}. Runs per hour, oldest first: ${hourly(imports)}.`,
        `flaky, last 24 hours: 2 runs, success rate 0% (0 of 2 finished runs), duration p50 ${formatDuration(flaky.p50Ms)}, ` +
          `p95 ${formatDuration(flaky.p95Ms)}. Runs per hour, oldest first: ${hourly(flaky)}.`,
      ]);
      expect(imports.hourly.reduce((a, b) => a + b, 0)).toBe(3);
      // the visible figures say the same
      const first = page.locator('.flow-figures').first();
      expect((await first.innerText()).replace(/\s+/g, ' ')).toBe(
        `Runs, 24 h 3 Success rate 100% p50 duration ${formatDuration(imports.p50Ms)} p95 duration ${formatDuration(imports.p95Ms)}`,
      );
      await fitsWidth();
      await shot(`flows-${width}`);
      await axe(`flows-${width}`);
    });
  }

  it('no console error or failed request on the way', () => {
    expect(w.errors).toEqual([]);
  });
});
