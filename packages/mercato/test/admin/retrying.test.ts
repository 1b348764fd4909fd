/**
 * Issue 20, point 7, in Chromium against `mercato dev`: the run page shows the step a run is in now (and a step a
 * canceled run was in as interrupted), and a run waiting to retry shows as **Retrying** with its next attempt's time —
 * on its page, in the runs list, in its flow's runs list and on Home, all from the API's `nextAttemptAt`.
 */
import { existsSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, screenshot, unexpected } from './browser.ts';
import { type LiveApp, type TestServer, openAdmin, startLiveApp, startTestServer } from './live-kit.ts';

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

describe.skipIf(!hasChromium)('running step and Retrying', { timeout: 90_000 }, () => {
  let app: LiveApp;
  let server: TestServer;
  let page: Page;

  beforeAll(async () => {
    [app, server] = await Promise.all([startLiveApp(), startTestServer()]);
    page = app.page;
    await openAdmin(page, '/runs');
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await server?.close();
  }, 30_000);

  const dispatch = async (flow: string, input: unknown) => {
    const res = await app.api(`/api/flows/${flow}/run`, { method: 'POST', json: { input } });
    expect(res.status).toBe(202);
    return res.body.runId as string;
  };
  const step = (name: string) => page.getByRole('list', { name: 'Step timeline' }).getByRole('listitem').filter({ hasText: name });
  /** How the page formats a date and time (the browser's locale and time zone). */
  const formatted = (iso: string) =>
    page.evaluate((at) => new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' }).format(new Date(at)), iso);

  it('the run page shows the step running now, live, then the run completing', async () => {
    const id = await dispatch('gated', { gate: server.gate('step') });
    await page.goto(`/runs/${id}`);
    await expect
      .poll(() => page.getByTestId('current-step').textContent(), { timeout: 5000 })
      .toMatch(/^Running step “wait for the gate” since /);
    expect(await step('wait for the gate').getAttribute('data-status')).toBe('running');
    expect(await step('wait for the gate').getAttribute('aria-current')).toBe('step');
    expect(await step('wait for the gate').textContent()).toContain('running now');
    expect(await step('prepare').getAttribute('data-status')).toBe('completed');
    await screenshot(page, 'run-current-step');
    server.open('step');
    await expect.poll(() => page.getByTestId('run-status').getAttribute('data-status')).toBe('completed');
    expect(await step('wait for the gate').getAttribute('data-status')).toBe('completed');
    expect(await page.getByTestId('current-step').count()).toBe(0);
  });

  it('a run canceled inside a step shows that step as interrupted', async () => {
    const id = await dispatch('gated', { gate: server.gate('never') });
    await page.goto(`/runs/${id}`);
    await page.getByTestId('current-step').waitFor();
    expect((await app.api(`/api/runs/${id}/cancel`, { method: 'POST' })).status).toBe(200);
    await expect.poll(() => page.getByTestId('run-status').getAttribute('data-status')).toBe('canceled');
    await expect.poll(() => step('wait for the gate').getAttribute('data-status')).toBe('interrupted');
    expect(await step('wait for the gate').textContent()).toContain('Interrupted');
    expect(await page.getByTestId('current-step').count()).toBe(0);
  });

  it('a run waiting to retry is Retrying with its next attempt, the same on its page, both lists and Home', async () => {
    const id = await dispatch('flaky', {});
    await page.goto(`/runs/${id}`);
    await expect.poll(() => page.getByTestId('run-status').getAttribute('data-state'), { timeout: 5000 }).toBe('retrying');
    const detail = (await app.api(`/api/runs/${id}`)).body;
    expect(detail).toMatchObject({ status: 'pending', attempt: 1, nextAttemptAt: expect.any(String) });
    const next = detail.nextAttemptAt as string;
    expect(new Date(next).getTime() - Date.now()).toBeGreaterThan(100_000); // the two-minute backoff
    expect(await page.getByTestId('run-status').textContent()).toMatch(/Retrying$/); // after the badge's hidden tone words
    await page.getByText('Attempt 1 failed: retrying').waitFor();
    expect(await page.getByTestId('next-attempt').textContent()).toMatch(/^Next attempt at .+ \(in (2 minutes|1[0-9]{2} seconds)\)\.$/);
    const banner = page.locator('.Polaris-Banner').filter({ hasText: 'Attempt 1 failed: retrying' });
    expect(await banner.textContent()).toContain('Error: upstream answered 503');
    const details = page.locator('.run-details');
    expect(await details.getByText('Next attempt').count()).toBe(1);
    expect(await details.getByText(await formatted(next), { exact: true }).count()).toBe(1);
    expect(await details.getByText('Pending', { exact: true }).count()).toBe(0);
    await screenshot(page, 'run-retrying');

    // the runs list and the flow's runs list say the same
    for (const path of ['/runs', '/runs?flow=flaky']) {
      await page.goto(path);
      const cell = page.locator(`.run-state[data-run-id="${id}"]`);
      await expect.poll(() => cell.getAttribute('data-state')).toBe('retrying');
      expect(await cell.textContent()).toMatch(/Retrying next attempt at \S/);
      expect(await cell.locator('[title]').last().getAttribute('title')).toBe(await formatted(next));
    }
    await screenshot(page, 'runs-retrying');
    // Home counts it as pending, of them retrying
    await page.goto('/');
    await page.getByRole('link', { name: /^1 .*Pending runs, last 24 hours 1 retrying$/ }).waitFor();
    expect(await page.locator('a[data-status="pending"]').textContent()).toContain('1 retrying');
    expect(unexpected(app.w.errors.splice(0))).toEqual([]);
  });
});
