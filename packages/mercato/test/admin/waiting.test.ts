/**
 * Runs say why they wait, in Chromium against `mercato dev` (test/admin/waiting-app, real runs and a real worker): the
 * run page of a waiting run shows a banner with the reason in words, its time and countdown, its key and, for a
 * concurrency slot, a link to the run holding it; the runs list and the flow's runs list show a short hint beside the
 * status. axe finds nothing on a waiting run's page that a finished run's page does not have.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { SHOP } from '../kit/index.ts';
import { axeViolations, blocking } from './axe.ts';
import { CHROMIUM, type DevServer, type Watched, launch, screenshot, startDev, unexpected, waitForQuiet } from './browser.ts';
import { ensureAdminUiBuilt } from './build.ts';
import { type TestServer, openAdmin, startTestServer } from './live-kit.ts';

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

const PROJECT = fileURLToPath(new URL('./waiting-app/', import.meta.url));

describe.skipIf(!hasChromium)('waiting runs in the admin UI', { timeout: 90_000 }, () => {
  let database: TestDatabase | undefined;
  let dev: DevServer;
  let w: Watched;
  let page: Page;
  let server: TestServer;

  const api = async (path: string, init: { method?: string; json?: unknown } = {}) => {
    const minted = await fetch(`${dev.url}/__mercato/preview/session-token`, { method: 'POST', body: JSON.stringify({ shop: SHOP }) });
    const { token } = (await minted.json()) as { token: string };
    const res = await fetch(`${dev.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${token}`, ...(init.json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const dispatch = async (flow: string, input: unknown) => {
    const res = await api(`/api/flows/${flow}/run`, { method: 'POST', json: { input } });
    expect(res.status).toBe(202);
    return res.body as { runId: string; joined?: boolean };
  };
  /** Polls the run until its `waiting.reason` is `reason`; returns the run. */
  const waitFor = async (id: string, reason: string | null) => {
    let run: any;
    await expect
      .poll(
        async () => {
          run = (await api(`/api/runs/${id}`)).body;
          return run.waiting?.reason ?? null;
        },
        { timeout: 15_000, interval: 100 },
      )
      .toBe(reason);
    return run;
  };
  /** Waits (up to 15 s) until the run has `status` (outside a test, where expect.poll is not available). */
  const reach = async (id: string, status: string) => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const now = (await api(`/api/runs/${id}`)).body.status;
      if (now === status) return;
      if (Date.now() > deadline) throw new Error(`run ${id} still ${now} after 15 s (expected ${status})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const banner = () => page.getByTestId('waiting');
  /** axe on the page as it is now, once the page has settled. */
  const axe = async () => {
    await waitForQuiet(w);
    await page.waitForFunction(() =>
      document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity),
    );
    return axeViolations(page);
  };

  let holder: string;
  let waiter: string;
  let limited: string;
  let baselineRules: string[];

  beforeAll(async () => {
    if (process.env.DATABASE_URL) database = await createTestDatabase('postgres', { migrate: false });
    // built first: the server reads the UI's files when it starts
    await ensureAdminUiBuilt();
    [dev, server] = await Promise.all([startDev(PROJECT, { databaseUrl: database?.url }), startTestServer()]);
    w = await launch(dev.url);
    page = w.page;
    await openAdmin(page, '/runs');

    // a run holds customer c1's only slot (it waits on the gate); a second run of c1 waits for the slot
    holder = (await dispatch('perCustomer', { customer: 'c1', gate: server.gate('c1') })).runId;
    await reach(holder, 'running');
    waiter = (await dispatch('perCustomer', { customer: 'c1', gate: server.gate('c1') })).runId;
    // the first run of customer r1 takes the hour's only start; the second waits, rate-limited
    const first = (await dispatch('throttled', { customer: 'r1' })).runId;
    await reach(first, 'completed');
    limited = (await dispatch('throttled', { customer: 'r1' })).runId;

    // axe's findings on a finished run's page: what a waiting run's page is compared with
    await page.goto(`/runs/${first}`);
    await page.getByRole('list', { name: 'Step timeline' }).or(page.getByText('This run recorded no steps.')).waitFor();
    baselineRules = (await axe()).map((v) => v.id);
  }, 180_000);

  afterAll(async () => {
    server?.open('c1');
    await w?.close();
    await server?.close();
    await dev?.stop();
    await database?.drop();
  }, 30_000);

  it('a run waiting for a concurrency slot names its key and links to the run holding it', async () => {
    const run = await waitFor(waiter, 'concurrency');
    expect(run.waiting).toMatchObject({ reason: 'concurrency', key: 'c1', heldBy: holder });
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`/runs/${waiter}`);
    await banner().waitFor();
    expect(await banner().getAttribute('data-reason')).toBe('concurrency');
    expect(await banner().getByRole('heading').first().textContent()).toBe('Waiting for a concurrency slot');
    expect(await page.getByTestId('waiting-key').textContent()).toBe('Key: c1');
    expect(await page.getByTestId('waiting-detail').textContent()).toBe(
      `Every slot of the flow's concurrency key is taken; one is held by run ${holder}.`,
    );
    const link = banner().getByRole('link', { name: holder });
    expect(await link.getAttribute('href')).toBe(`/runs/${holder}`);
    expect(await page.getByTestId('waiting-until').textContent()).toMatch(/^Looked at again by \S.* \((in \d+ s|any moment now)\)$/);

    const violations = await axe();
    expect(blocking(violations)).toEqual([]);
    expect(violations.map((v) => v.id).filter((id) => !baselineRules.includes(id))).toEqual([]);
    await screenshot(page, 'run-waiting-concurrency-1440');

    // the link opens the holder's page, which has no waiting banner (it runs)
    await link.click();
    await page.waitForURL((url) => url.pathname === `/runs/${holder}`);
    await expect.poll(() => page.getByTestId('run-status').getAttribute('data-status')).toBe('running');
    expect(await banner().count()).toBe(0);
  });

  it('a rate-limited run shows when it can start, with a live countdown, at 390 px too', async () => {
    const run = await waitFor(limited, 'rate_limited');
    const until = new Date(run.waiting.until).getTime();
    expect(until - Date.now()).toBeGreaterThan(55 * 60_000);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`/runs/${limited}`);
    await banner().waitFor();
    expect(await banner().getByRole('heading').first().textContent()).toBe('Rate-limited');
    expect(await page.getByTestId('waiting-key').textContent()).toBe('Key: r1');
    expect(await page.getByTestId('waiting-until').textContent()).toMatch(/^Can start at \S.* \(in (59 min \d+ s|1 h 0 min)\)$/);
    // the countdown moves on its own, without a new answer from the server
    const before = await banner().getByTestId('countdown').textContent();
    await expect.poll(() => banner().getByTestId('countdown').textContent(), { timeout: 4000 }).not.toBe(before);

    const violations = await axe();
    expect(blocking(violations)).toEqual([]);
    expect(violations.map((v) => v.id).filter((id) => !baselineRules.includes(id))).toEqual([]);
    // nothing wider than the phone's screen
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await screenshot(page, 'run-waiting-rate-limited-390');
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('the runs list and the flow runs list show a waiting hint beside the status', async () => {
    await waitFor(waiter, 'concurrency');
    const { runId: debounced, joined } = await dispatch('debounced', { customer: 'd1' });
    expect(joined).toBeFalsy();
    const again = await dispatch('debounced', { customer: 'd1' });
    expect(again).toMatchObject({ runId: debounced, joined: true });
    await waitFor(debounced, 'debounced');

    const hint = (id: string) => page.locator(`.run-state[data-run-id="${id}"] .waiting-hint`);
    await page.goto('/runs');
    await expect.poll(() => hint(limited).textContent()).toMatch(/^ rate-limited · (59 min \d+ s|1 h 0 min)$/);
    expect(await hint(limited).getAttribute('data-reason')).toBe('rate_limited');
    await expect.poll(() => hint(waiter).textContent()).toBe(' waiting for slot');
    expect(await hint(debounced).textContent()).toMatch(/^ debounced · (59 min \d+ s|1 h 0 min)$/);
    // a running or finished run has none
    expect(await hint(holder).count()).toBe(0);
    expect(await page.locator(`.run-state[data-run-id="${limited}"]`).textContent()).toMatch(/Pending rate-limited · \d/);
    // the title says it in full, for a pointer
    expect(await hint(limited).getAttribute('title')).toMatch(/^rate-limited until \S+ \(key "r1"\)$/);
    await screenshot(page, 'runs-waiting');

    await page.goto('/runs?flow=perCustomer');
    await expect.poll(() => hint(waiter).textContent()).toBe(' waiting for slot');
    expect(await page.locator(`.run-state[data-run-id="${limited}"]`).count()).toBe(0);

    // the holder finishes: the waiting run gets the slot and runs
    server.open('c1');
    await expect.poll(async () => (await api(`/api/runs/${waiter}`)).body.status, { timeout: 15_000 }).toBe('completed');
    await expect.poll(() => hint(waiter).count(), { timeout: 10_000 }).toBe(0);
    expect(unexpected(w.errors.splice(0))).toEqual([]);
  });
});
