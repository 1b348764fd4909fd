/**
 * Issue 35: durability on the demo, as a person tries it on `npm start` (docs/getting-started.md, "Watch durability").
 * The real `mercato dev` (bin/mercato.js) runs examples/demo; a `backfillOrders` run is dispatched over HTTP; the
 * process is stopped with SIGINT (what Ctrl-C sends) mid-run, and started again on the same database (the embedded
 * PGlite folder, or a fresh PostgreSQL database when DATABASE_URL is set). The run finishes in the second process from
 * its last completed step: the steps the first process completed keep their stored times (they were not run again),
 * no attempt is used up, and each page's log line is written once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogSearchResponse, RunDetail, StepRow } from '../../src/api/types.ts';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { untilListening } from '../helpers/listening.ts';

const BIN = fileURLToPath(new URL('../../bin/mercato.js', import.meta.url));
const DEMO = fileURLToPath(new URL('../../../../examples/demo/', import.meta.url));
const SHOP = 'demo-1.myshopify.com';
const PAGES = 4;

interface Dev {
  child: ChildProcess;
  url: string;
  output(): string;
  /** SIGINT, as Ctrl-C sends it; resolves with the exit code. */
  interrupt(): Promise<number | null>;
}

describe('the demo backfill survives a restart of mercato dev', { timeout: 180_000 }, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mercato-demo-resume-'));
  const children: ChildProcess[] = [];
  let database: TestDatabase | undefined;

  beforeAll(async () => {
    if (process.env.DATABASE_URL) database = await createTestDatabase('postgres', { migrate: false });
  }, 60_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  async function startDev(): Promise<Dev> {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, MERCATO_DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
    if (database) env.DATABASE_URL = database.url;
    const child = spawn(process.execPath, [BIN, 'dev', '--port', '0', '--no-watch'], { cwd: DEMO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const { url, output } = await untilListening(child, 90_000);
    return {
      child,
      url,
      output,
      interrupt: () => {
        child.kill('SIGINT');
        return exited;
      },
    };
  }

  async function api<T>(dev: Dev, path: string, init: { method?: string; json?: unknown } = {}): Promise<{ status: number; body: T }> {
    const minted = await fetch(`${dev.url}/__mercato/preview/session-token`, { method: 'POST', body: JSON.stringify({ shop: SHOP }) });
    const { token } = (await minted.json()) as { token: string };
    const res = await fetch(`${dev.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${token}`, ...(init.json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
    return { status: res.status, body: (await res.json()) as T };
  }

  async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string, ms = 30_000): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await read();
      if (ok(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what}: not reached in ${ms} ms (last: ${JSON.stringify(value)})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const completed = (run: RunDetail) => run.steps.filter((s) => s.status === 'completed');

  it('stopped mid-run with SIGINT, it resumes after a restart from its last completed step', async () => {
    const first = await startDev();
    const dispatched = await api<{ runId: string }>(first, '/api/flows/backfillOrders/run', {
      method: 'POST',
      json: { input: { pages: PAGES, pageMs: 1500, pauseSeconds: 1 } },
    });
    expect(dispatched.status).toBe(202);
    const id = dispatched.body.runId;
    const detail = async (dev: Dev) => (await api<RunDetail>(dev, `/api/runs/${id}`)).body;

    // mid-run: page 2 done, pages 3 and 4 to go
    const before = await until(
      () => detail(first),
      (run) => run.steps.some((s) => s.name === 'page 2' && s.status === 'completed'),
      'page 2 completed',
    );
    expect(before.status).not.toBe('completed');
    const stoppedAt = Date.now();
    expect(await first.interrupt()).toBe(0);
    expect(first.output()).toContain('SIGINT received, shutting down');

    const second = await startDev();
    const after = await until(
      () => detail(second),
      (run) => run.status === 'completed',
      'the run completed after the restart',
      60_000,
    );
    expect(after.output).toEqual({ pages: PAGES, orders: 25 * PAGES });
    expect(after.attempt).toBe(1); // a graceful stop uses no attempt
    expect(after.lostLeases).toBe(0);
    expect(after.steps.map((s) => s.name)).toEqual(['page 1', 'pause 1', 'page 2', 'pause 2', 'page 3', 'pause 3', 'page 4']);
    expect(completed(after)).toHaveLength(2 * PAGES - 1);

    // what the first process completed was not run again: same stored start and end
    const byName = new Map<string, StepRow>(after.steps.map((s) => [s.name, s]));
    for (const step of completed(before)) {
      expect(byName.get(step.name), step.name).toMatchObject({
        startedAt: step.startedAt,
        finishedAt: step.finishedAt,
        status: 'completed',
      });
    }
    // and the rest ran in the second process, after the stop
    const resumed = after.steps.filter((s) => new Date(s.startedAt).getTime() > stoppedAt);
    expect(resumed.map((s) => s.name)).toContain('page 4');

    // one log line per page, whatever replayed
    const logs = (await api<LogSearchResponse>(second, `/api/runs/${id}/logs?limit=200`)).body;
    const pages = logs.logs.map((l) => l.message).filter((m) => /^page \d+ of \d+ backfilled$/.test(m));
    expect(pages.sort()).toEqual(Array.from({ length: PAGES }, (_, i) => `page ${i + 1} of ${PAGES} backfilled`));

    expect(await second.interrupt()).toBe(0);
  });
});
