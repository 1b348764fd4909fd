/**
 * Issue 20, point 6: Home and the runs lists follow the shop's runs live, in Chromium against `mercato dev`. Runs are
 * dispatched, finished and canceled from outside the page (the admin API, the test's gates); the counts and rows change
 * within about a second, in the same document (no reload), over the long-polled GET /api/runs/watch — no timer polling
 * from the browser. One engine per run: PGlite, or fresh PostgreSQL databases when DATABASE_URL is set.
 */
import { existsSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, screenshot, unexpected } from './browser.ts';
import { type LiveApp, type TestServer, expectSameDocument, markDocument, openAdmin, startLiveApp, startTestServer } from './live-kit.ts';

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

/** What the UI must show within: the server notices a change within 250 ms, then the page reads and renders. */
const LIVE_MS = 1500;

describe.skipIf(!hasChromium)('live Home and runs lists', { timeout: 90_000 }, () => {
  let app: LiveApp;
  let server: TestServer;
  let page: Page;

  beforeAll(async () => {
    [app, server] = await Promise.all([startLiveApp(), startTestServer()]);
    page = app.page;
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await server?.close();
  }, 30_000);

  const dispatch = async (gateKey: string) => {
    const res = await app.api('/api/flows/gated/run', { method: 'POST', json: { input: { gate: server.gate(gateKey) } } });
    expect(res.status).toBe(202);
    return res.body.runId as string;
  };
  /** The Home count of a status, read from its link's accessible name ("2 Running runs, last 24 hours"). */
  const homeCount = async (status: string) => {
    const label = (await page.locator(`a[data-status="${status}"]`).textContent()) ?? '';
    return Number(/^(\d+)/.exec(label.trim())?.[1] ?? NaN);
  };
  /** Resolves once `check` holds, failing when it takes longer than LIVE_MS; returns how long it took. */
  const within = async (check: () => Promise<boolean>, what: string): Promise<number> => {
    const start = Date.now();
    for (;;) {
      if (await check()) return Date.now() - start;
      if (Date.now() - start > LIVE_MS) throw new Error(`${what}: not shown within ${LIVE_MS} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const rowState = (id: string) =>
    page
      .locator(`.run-state[data-run-id="${id}"]`)
      .getAttribute('data-state', { timeout: 100 })
      .catch(() => null);
  const homeRequests = () => app.w.requests.filter((r) => new URL(r.url).pathname === '/api/home').length;

  it('Home: counts change within a second when runs are dispatched and finish elsewhere, without a reload', async () => {
    await openAdmin(page, '/');
    await page.getByRole('heading', { name: 'Runs in the last 24 hours' }).waitFor();
    await expect.poll(() => homeCount('completed')).toBe(0);
    // the long poll is open before anything happens (its first answer only gives the version)
    await expect.poll(() => app.w.requests.some((r) => r.url.includes('/api/runs/watch?since='))).toBe(true);
    await markDocument(page);

    const a = await dispatch('home-a');
    const b = await dispatch('home-b');
    const seenActive = await within(async () => (await homeCount('pending')) + (await homeCount('running')) === 2, 'two active runs');
    await within(async () => (await homeCount('running')) === 2, 'two running runs');
    server.open('home-a');
    await within(async () => (await homeCount('completed')) === 1 && (await homeCount('running')) === 1, 'one completed');
    const canceled = await app.api(`/api/runs/${b}/cancel`, { method: 'POST' });
    expect(canceled.status).toBe(200);
    await within(async () => (await homeCount('canceled')) === 1 && (await homeCount('running')) === 0, 'one canceled');
    expect(seenActive).toBeLessThan(LIVE_MS);
    await expectSameDocument(page);
    await screenshot(page, 'live-home');

    // Quiet: nothing changes, so nothing is reloaded, and the watch is one request held by the server, not a timer.
    const before = homeRequests();
    const windowStart = Date.now();
    await new Promise((r) => setTimeout(r, 3000));
    const watches = app.w.requests.filter(
      (r) => new URL(r.url).pathname === '/api/runs/watch' && (r.end === undefined || r.end > windowStart) && r.start < Date.now(),
    );
    expect(homeRequests()).toBe(before);
    expect(watches.length).toBeLessThanOrEqual(2);
    expect(watches.some((r) => (r.end ?? Date.now()) - Math.max(r.start, windowStart) > 1500)).toBe(true);
    void a;
  });

  it('Runs: a dispatched run appears and its row follows it to completed or canceled, in the same document', async () => {
    await page.locator('nav').getByRole('link', { name: 'Runs', exact: true }).click();
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    await expectSameDocument(page); // a client-side navigation
    const c = await dispatch('list-c');
    await within(async () => ['pending', 'running'].includes((await rowState(c)) ?? ''), 'the new row');
    await within(async () => (await rowState(c)) === 'running', 'the row running');
    server.open('list-c');
    await within(async () => (await rowState(c)) === 'completed', 'the row completed');
    const d = await dispatch('list-d');
    await within(async () => (await rowState(d)) === 'running', 'a second row running');
    expect(await app.api(`/api/runs/${d}/cancel`, { method: 'POST' })).toMatchObject({ status: 200 });
    await within(async () => (await rowState(d)) === 'canceled', 'the row canceled');
    await expect.poll(() => page.getByText(/^1–4 of 4$/).count()).toBe(1); // the pagination total follows too
    await expectSameDocument(page);
    await screenshot(page, 'live-runs');
  });

  it("a flow's runs list (/runs?flow=gated) follows its runs the same way", async () => {
    await page.goto('/runs?flow=gated');
    await page.getByRole('heading', { name: 'Runs of gated' }).waitFor();
    await markDocument(page);
    const e = await dispatch('flow-e');
    await within(async () => (await rowState(e)) === 'running', 'the flow run running');
    server.open('flow-e');
    await within(async () => (await rowState(e)) === 'completed', 'the flow run completed');
    await expectSameDocument(page);
    expect(unexpected(app.w.errors.splice(0))).toEqual([]);
    expect(app.w.foreign).toEqual([]);
  });
});
