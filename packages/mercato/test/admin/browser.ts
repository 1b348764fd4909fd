/**
 * The browser test harness: `mercato dev` as a child process on a free port (with its platform simulator and admin
 * preview), Debian's Chromium driven by playwright-core, console and network watchers, and screenshots written to
 * test-artifacts/admin-ui/.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { untilListening } from '../helpers/listening.ts';
import { type Browser, type BrowserContext, type Page, type Request, chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = fileURLToPath(new URL('../../../../test-artifacts/admin-ui/', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/mercato.js', import.meta.url));

export interface DevServer {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * `mercato dev --port 0` in `projectDir`, on a fresh embedded database (or the given PostgreSQL one); resolves once it
 * listens. `env` adds variables (the fixture reads ADMIN_UI_DISABLED_PAGE).
 */
export async function startDev(
  projectDir: string,
  options: { databaseUrl?: string; env?: Record<string, string> } = {},
): Promise<DevServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mercato-ui-db-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    MERCATO_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...options.env,
  };
  if (options.databaseUrl) env.DATABASE_URL = options.databaseUrl;
  const child: ChildProcess = spawn(process.execPath, [BIN, 'dev', '--port', '0'], {
    cwd: projectDir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const { url, output } = await untilListening(child, 60_000);
  return {
    url,
    output,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(killer);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A request the page made: when it started and ended (Date.now()), its bearer token, its answer's status. */
export interface SeenRequest {
  method: string;
  url: string;
  authorization: string | undefined;
  start: number;
  /** Set when the answer has arrived in full, or the request failed (aborted, network error). */
  end?: number;
  status?: number;
  failed?: boolean;
}

export interface Watched {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught exceptions, as `console: <text> @ <url>` / `exception: <message>`; tests empty it. */
  errors: string[];
  /** Requests to any origin other than the server's. */
  foreign: string[];
  requests: SeenRequest[];
  close(): Promise<void>;
}

export async function launch(origin: string, options: { args?: string[] } = {}): Promise<Watched> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
      '--disable-dev-shm-usage',
      ...(options.args ?? []),
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true, baseURL: origin });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const errors: string[] = [];
  const foreign: string[] = [];
  const requests: SeenRequest[] = [];
  const seen = new WeakMap<Request, SeenRequest>();
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    // Chromium reports a failed resource ("the server responded with a status of 400") at the resource's URL.
    const at = msg.location().url;
    errors.push(`console: ${msg.text()}${at ? ` @ ${at}` : ''}`);
  });
  page.on('pageerror', (error) => errors.push(`exception: ${error.message}`));
  page.on('request', (req) => {
    const url = req.url();
    const entry: SeenRequest = { method: req.method(), url, authorization: req.headers().authorization, start: Date.now() };
    seen.set(req, entry);
    requests.push(entry);
    if (!url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('blob:')) foreign.push(url);
  });
  page.on('requestfinished', (req) => {
    const entry = seen.get(req);
    if (!entry) return;
    entry.end = Date.now();
    // the page may close while the status is read (the suite's end): the request is done either way
    req
      .response()
      .then((res) => {
        if (res) entry.status = res.status();
      })
      .catch(() => {});
  });
  page.on('requestfailed', (req) => {
    const entry = seen.get(req);
    if (entry) Object.assign(entry, { end: Date.now(), failed: true });
  });
  return {
    browser,
    context,
    page,
    errors,
    foreign,
    requests,
    async close() {
      await context.close().catch(() => {});
      await browser.close().catch(() => {});
    },
  };
}

/** The long polls (a run's watch, the shop's runs watch): held open by the server on purpose, so never "idle". */
const LONG_POLL = /\/api\/runs\/(?:[^/]+\/)?watch(?:\?|$)/;

/**
 * Resolves once no request but the long polls has been in flight or started for `quietMs` — what Playwright's
 * `networkidle` means, for pages that keep a long poll open (Home, the runs lists, an active run).
 */
export async function waitForQuiet(w: Watched, quietMs = 500, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = Date.now();
    const busy = w.requests.some(
      (r) => !LONG_POLL.test(new URL(r.url).pathname + new URL(r.url).search) && (r.end === undefined || now - r.end < quietMs),
    );
    if (!busy) return;
    if (now > deadline) throw new Error(`the page did not settle in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function resetArtifacts(): void {
  if (existsSync(ARTIFACTS)) rmSync(ARTIFACTS, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  // Toasts are left out so they do not cover the page (they are checked by the tests themselves).
  await page.screenshot({
    path: join(ARTIFACTS, `${name}.png`),
    fullPage: true,
    style: '.Polaris-Frame-ToastManager { display: none !important; }',
  });
}

/** The texts an input's aria-describedby points at (Polaris puts a field's error and help text there). */
export async function describedBy(page: Page, label: string | RegExp): Promise<string> {
  const input = page.getByLabel(label, { exact: typeof label === 'string' }).first();
  const ids = (await input.getAttribute('aria-describedby')) ?? '';
  const texts: string[] = [];
  for (const id of ids.split(/\s+/).filter(Boolean)) texts.push((await page.locator(`[id="${id}"]`).textContent()) ?? '');
  return texts.join(' | ');
}

/** Clicks a page-level action, opening Polaris' "More actions" menu when the action is rolled up in it. */
export async function pageAction(page: Page, name: string): Promise<void> {
  const direct = page.getByRole('button', { name, exact: true }).filter({ visible: true });
  if ((await direct.count()) > 0) {
    await direct.first().click();
    return;
  }
  await page.getByRole('button', { name: 'More actions' }).filter({ visible: true }).first().click();
  await page
    .getByRole('menuitem', { name, exact: true })
    .or(page.getByRole('button', { name, exact: true }))
    .filter({ visible: true })
    .first()
    .click();
}

/**
 * An error answer a journey provokes on purpose: its status and the request's path (a string: the path exactly; a
 * regular expression: tested against path and query).
 */
export interface ExpectedFailure {
  status: number;
  path: string | RegExp;
}

const FAILED_RESOURCE = /^console: Failed to load resource: the server responded with a status of (\d{3})\b.* @ (\S+)$/;

/**
 * The errors that are not the expected ones: every exception and console error, except Chromium's "Failed to load
 * resource" line for an answer listed in `expected` (same status, same path). Anything else — another status, another
 * URL, an error without a URL — is unexpected.
 */
export function unexpected(errors: string[], expected: ExpectedFailure[] = []): string[] {
  return errors.filter((error) => {
    const m = FAILED_RESOURCE.exec(error);
    if (!m) return true;
    const status = Number(m[1]);
    let url: URL;
    try {
      url = new URL(m[2]!);
    } catch {
      return true;
    }
    return !expected.some(
      (e) => e.status === status && (typeof e.path === 'string' ? url.pathname === e.path : e.path.test(url.pathname + url.search)),
    );
  });
}
