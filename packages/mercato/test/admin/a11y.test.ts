/**
 * Accessibility: axe-core (the npm package's own build, evaluated in the page) runs in Debian's Chromium on every page
 * of the admin UI and on its dialogs, against the real `mercato dev` with realistic data (runs with steps and logs, a
 * failed run, a saved provider, an MCP token, a function instance: test/admin/seed.ts). No page may have a serious or
 * critical violation. Every violation found (of any impact) is written to test-artifacts/admin-ui-a11y/report.json with
 * a screenshot of each state checked. One engine per run: PGlite, or PostgreSQL when DATABASE_URL is set.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { type Violation, axeViolations, blocking } from './axe.ts';
import { ensureAdminUiBuilt } from './build.ts';
import { CHROMIUM, type DevServer, type Watched, launch, startDev, unexpected, waitForQuiet } from './browser.ts';
import { type Seeded, openAdmin, seed } from './seed.ts';

const PROJECT = fileURLToPath(new URL('../fixtures/admin-ui-app/', import.meta.url));
const OUT = fileURLToPath(new URL('../../../../test-artifacts/admin-ui-a11y/', import.meta.url));
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`Chromium is missing at ${CHROMIUM}: CI must install it (apt-get install chromium)`);

describe.skipIf(!hasChromium)('admin UI accessibility (axe-core in Chromium)', { timeout: 60_000 }, () => {
  let dev: DevServer;
  let w: Watched;
  let page: Page;
  let data: Seeded;
  let database: TestDatabase | undefined;
  const report: Record<string, Violation[]> = {};

  beforeAll(async () => {
    if (existsSync(OUT)) rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    if (process.env.DATABASE_URL) database = await createTestDatabase('postgres', { migrate: false });
    const [server] = await Promise.all([startDev(PROJECT, { databaseUrl: database?.url }), ensureAdminUiBuilt()]);
    dev = server;
    data = await seed(dev.url);
    w = await launch(dev.url);
    page = w.page;
    await openAdmin(page, '/');
  }, 180_000);

  afterAll(async () => {
    writeFileSync(join(OUT, 'report.json'), JSON.stringify(report, null, 2));
    await w?.close();
    await dev?.stop();
    await database?.drop();
  }, 30_000);

  /** Runs axe on the page as it is now; records every violation; fails on a serious or critical one. */
  async function check(name: string) {
    // not `networkidle`: Home and the runs lists keep a long poll open (their live updates)
    await waitForQuiet(w);
    // Polaris' modal fades in: wait until such animations have ended, so colours are measured as the user sees them
    // (spinners turn for ever: they are left out).
    await page.waitForFunction(() =>
      document.getAnimations().every((a) => a.playState !== 'running' || a.effect?.getTiming().iterations === Infinity),
    );
    const violations = await axeViolations(page);
    report[name] = violations;
    await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
    expect(blocking(violations), `axe on ${name}`).toEqual([]);
  }

  async function visit(path: string, ready: (page: Page) => Promise<unknown>) {
    await page.goto(path);
    await ready(page);
  }

  const dialog = () => page.getByRole('dialog');

  it('home', async () => {
    await visit('/', async (p) => {
      await p.getByText('Runs in the last 24 hours').waitFor();
      await p.getByText('upstream timeout').first().waitFor();
      await p.getByText('Next cron fires').waitFor();
    });
    // A count's link is named by what it shows (the figure, the status) and what it counts.
    await page.getByRole('link', { name: /^1 .*Completed runs, last 24 hours$/ }).waitFor();
    await check('home');
  });

  it('flows', async () => {
    await visit('/flows', (p) => p.getByRole('heading', { name: 'importOrders' }).waitFor());
    await check('flows');
  });

  it('the run-flow modal, empty and with its validation errors', async () => {
    await visit('/flows', (p) => p.getByRole('button', { name: 'Run importOrders' }).waitFor());
    await page.getByRole('button', { name: 'Run importOrders' }).click();
    await dialog().getByLabel('Since *').waitFor();
    await check('run-flow-modal');
    await dialog().getByLabel('Limit').fill('900');
    await dialog().getByRole('button', { name: 'Run', exact: true }).click();
    await dialog().getByText('Must be at most 500').waitFor();
    await check('run-flow-modal-errors');
    await dialog().getByRole('button', { name: 'Edit as JSON' }).click();
    await dialog().getByLabel('Input (JSON object)').waitFor();
    await check('run-flow-modal-json');
  });

  it('runs list', async () => {
    await visit('/runs', (p) => p.getByRole('link', { name: data.failedRunId.slice(0, 8) }).waitFor());
    await check('runs');
  });

  it('a completed run with its steps and logs', async () => {
    await visit(`/runs/${data.completedRunId}`, async (p) => {
      await p.getByRole('list', { name: 'Step timeline' }).waitFor();
      await p.getByText('order 1002 has no email').waitFor();
    });
    await page.getByRole('button', { name: 'Show result of step summarise' }).click();
    await check('run-completed');
  });

  it('a failed run with its error', async () => {
    await visit(`/runs/${data.failedRunId}`, async (p) => {
      await p.getByText('upstream timeout').first().waitFor();
      await p.getByRole('list', { name: 'Step timeline' }).waitFor();
    });
    await check('run-failed');
  });

  it('crons', async () => {
    await visit('/crons', (p) => p.getByText('Every installed shop').waitFor());
    await check('crons');
  });

  it('functions, and the function instance modal with its errors', async () => {
    await visit('/functions', (p) => p.getByRole('row', { name: /Bulk 10/ }).waitFor());
    await check('functions');
    await page.getByRole('button', { name: 'Create instance of Volume discount' }).click();
    await dialog().getByLabel('Discount mode *').waitFor();
    await dialog().getByRole('button', { name: 'Create instance' }).click();
    await dialog().getByText('Choose a discount mode').waitFor();
    await check('function-instance-modal');
  });

  it('providers, and a provider form with a server error', async () => {
    await visit('/providers', (p) => p.getByRole('heading', { name: 'crm' }).waitFor());
    await check('providers');
    await page.getByLabel('Base URL *').fill('not a url');
    await page.getByRole('button', { name: 'Save crm' }).click();
    await page.getByText('Field "baseUrl": Invalid URL').first().waitFor();
    await check('provider-form-errors');
  });

  it('MCP tokens list', async () => {
    await visit('/mcp-tokens', (p) => p.getByRole('link', { name: 'Support assistant' }).waitFor());
    await check('mcp-tokens');
  });

  it('the token editor (create), and the secret shown once', async () => {
    await visit('/mcp-tokens', (p) => p.getByRole('link', { name: 'Support assistant' }).waitFor());
    await page.getByRole('button', { name: 'Create token' }).first().click();
    await dialog().getByLabel('Name').waitFor();
    await dialog()
      .getByRole('checkbox', { name: /^Run flows/ })
      .check({ force: true });
    await dialog()
      .getByText(/High-risk grants selected/)
      .waitFor();
    await check('mcp-token-create');
    await dialog().getByLabel('Name').fill('Reporting');
    await dialog().getByRole('button', { name: 'Create token' }).click();
    await page.getByTestId('mcp-secret').waitFor();
    await check('mcp-token-secret');
  });

  it("a token's page and its permission editor", async () => {
    await visit(`/mcp-tokens/${data.tokenId}`, (p) => p.getByRole('heading', { name: 'Support assistant', level: 1 }).waitFor());
    await check('mcp-token');
    await page.getByRole('button', { name: 'Edit permissions' }).click();
    await dialog()
      .getByRole('checkbox', { name: /List flows and recent runs/ })
      .waitFor();
    await check('mcp-token-edit');
  });

  it('not found', async () => {
    await visit('/no/such/page', (p) => p.getByRole('heading', { name: 'Page not found' }).waitFor());
    await check('not-found');
    // The provider save above failed on purpose (400); nothing else may have logged an error.
    expect(unexpected(w.errors.splice(0), [{ status: 400, path: '/api/providers/crm' }])).toEqual([]);
    expect(w.foreign).toEqual([]);
  });
});
