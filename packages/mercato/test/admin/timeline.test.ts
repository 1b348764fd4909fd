/**
 * Issue 35: the run page's waterfall, live, in Chromium against `mercato dev` running the demo app (examples/demo, what
 * `npm start` runs) on a real database (PGlite, or fresh PostgreSQL when DATABASE_URL is set). A `backfillOrders` run is
 * dispatched; the page gains a bar as each page completes, shows the run asleep between pages (its sleep bar and its
 * wait with the reason), is canceled from the page, and ends with the final state. Screenshots at 1440 and 390 px, and
 * axe on the live page.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, blocking } from './axe.ts';
import { CHROMIUM, pageAction, screenshot, unexpected, waitForQuiet } from './browser.ts';
import { type LiveApp, expectSameDocument, markDocument, openAdmin, startLiveApp } from './live-kit.ts';

const DEMO = fileURLToPath(new URL('../../../../examples/demo/', import.meta.url));
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

describe.skipIf(!hasChromium)('the run waterfall of the demo backfill, live', { timeout: 120_000 }, () => {
  let app: LiveApp;
  let page: Page;

  beforeAll(async () => {
    app = await startLiveApp(DEMO);
    page = app.page;
  }, 180_000);

  afterAll(async () => {
    await app?.close();
  }, 30_000);

  const bars = (kind: string, state?: string) =>
    page.locator(`.waterfall-bar:not(.waterfall-planned)[data-kind="${kind}"]${state ? `[data-state="${state}"]` : ''}`);
  const status = () => page.getByTestId('run-status').getAttribute('data-status');
  const summary = () => page.getByTestId('waterfall-summary').textContent();
  const poll = { timeout: 15_000, interval: 50 };

  /** No part of the page is wider than the window (no sideways scrolling), and every bar lies inside it. */
  async function fitsWidth(width: number) {
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    const boxes = await page.locator('.waterfall-bar').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().right));
    for (const right of boxes) expect(right).toBeLessThanOrEqual(width);
  }

  it('gains a bar per page, sleeps between pages with its reason, is canceled, and shows the final state', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    const dispatched = await app.api('/api/flows/backfillOrders/run', {
      method: 'POST',
      json: { input: { pages: 12, pageMs: 1500, pauseSeconds: 2 } }, // about 40 s: canceled long before its end
    });
    expect(dispatched.status).toBe(202);
    const id = dispatched.body.runId as string;
    await openAdmin(page, `/runs/${id}`);
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    await markDocument(page);

    // the first page completes, then the run sleeps: its sleep bar, the wait row with the reason, the status
    await expect.poll(() => bars('step', 'completed').count(), poll).toBeGreaterThanOrEqual(1);
    await expect.poll(() => status(), poll).toBe('sleeping');
    await expect.poll(() => bars('sleep', 'sleeping').count(), poll).toBe(1);
    expect(await bars('wait', 'waiting').count()).toBe(1);
    expect(await page.locator('.waterfall-row[data-kind="wait"] .waterfall-name').textContent()).toBe('Sleeping');
    expect(await summary()).toMatch(/; now: sleeping until \S/);
    expect(await page.locator('.waterfall-now').count()).toBe(1);
    await screenshot(page, 'timeline-sleeping-1440');

    // axe on the live page (the long poll stays open: wait for the rest to settle)
    await waitForQuiet(app.w);
    expect(blocking(await axeViolations(page)), 'axe on the live run page').toEqual([]);

    // more pages complete: the waterfall gains bars, live, in the same document; each sleep that ended is a sleep bar
    const seen = await bars('step', 'completed').count();
    await expect.poll(() => bars('step', 'completed').count(), poll).toBeGreaterThan(seen);
    await expect.poll(() => bars('sleep', 'completed').count(), poll).toBeGreaterThanOrEqual(1);
    await expectSameDocument(page);

    // the text alternative: a visually hidden table with a row per bar, in the same order
    const rows = page.locator('.waterfall table tbody tr');
    expect(await rows.count()).toBe(await page.locator('.waterfall-row:not(.waterfall-axis):not(.waterfall-now-row)').count());
    expect(await rows.first().locator('th').textContent()).toBe('page 1');
    expect(await rows.first().locator('td').nth(1).textContent()).toBe('completed');
    expect(await rows.nth(1).locator('td').first().textContent()).toBe('sleep');

    // a phone's width: the labels go above their tracks, nothing scrolls sideways
    await page.setViewportSize({ width: 390, height: 844 });
    await fitsWidth(390);
    await screenshot(page, 'timeline-390');
    await page.setViewportSize({ width: 1440, height: 900 });
    await fitsWidth(1440);
    await screenshot(page, 'timeline-live-1440');

    // cancel from the page, before the last page
    expect(await status()).not.toBe('completed');
    const done = await bars('step', 'completed').count();
    expect(done).toBeLessThan(12);
    await pageAction(page, 'Cancel run');
    await expect.poll(() => status(), poll).toBe('canceled');
    await expect.poll(() => summary(), poll).toMatch(/the run was canceled$/);
    expect(await bars('wait').count()).toBe(0);
    expect(await page.locator('.waterfall-now').count()).toBe(0);
    expect(await bars('sleep', 'sleeping').count()).toBe(0);
    // a sleep (or a page) cut short by the cancel: interrupted in the waterfall and in the step list
    const cut = await page.locator('.waterfall-bar:not(.waterfall-planned)[data-state="interrupted"]').count();
    expect(cut).toBeLessThanOrEqual(1);
    expect(await page.locator('ol.timeline > li[data-status="interrupted"]').count()).toBe(cut);
    expect(await page.locator('ol.timeline > li[data-status="sleeping"]').count()).toBe(0);
    expect(await bars('step', 'completed').count()).toBeGreaterThanOrEqual(done);
    const detail = (await app.api(`/api/runs/${id}`)).body;
    expect(detail.status).toBe('canceled');
    expect(await bars('step', 'completed').count()).toBe(
      detail.steps.filter((s: { kind: string; status: string }) => s.kind === 'step' && s.status === 'completed').length,
    );
    await expectSameDocument(page);
    await screenshot(page, 'timeline-canceled-1440');
    await page.setViewportSize({ width: 390, height: 844 });
    await fitsWidth(390);
    await screenshot(page, 'timeline-canceled-390');
    await waitForQuiet(app.w);
    expect(blocking(await axeViolations(page)), 'axe on the finished run page at 390 px').toEqual([]);
    await page.setViewportSize({ width: 1440, height: 900 });

    expect(unexpected(app.w.errors.splice(0))).toEqual([]);
    expect(app.w.foreign).toEqual([]);
  });
});
