/**
 * Exactly once with real processes (PostgreSQL only): three `mercato start` processes, spawned from the CLI on one database,
 * run their schedulers on the database clock for a few real seconds (an every-second and an every-2-seconds cron). Every
 * fire time is dispatched exactly once (one tick row and one run each), with no gap while the three run.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { TEST_API_KEY, TEST_API_SECRET } from '../helpers/runtime.ts';

const ROOT = resolve(import.meta.dirname, '../../../..');
const BIN = join(ROOT, 'packages/mercato/bin/mercato.js');
const FIXTURE = join(import.meta.dirname, 'fixtures/cron-proof-app/service.config.ts');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!process.env.DATABASE_URL)('cron exactly-once with real scheduler processes [postgres]', () => {
  let tdb: TestDatabase;
  const children: Array<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> = [];

  function start(): Promise<void> {
    const child = spawn(process.execPath, [BIN, 'start', '--config', FIXTURE, '--port', '0'], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        DATABASE_URL: tdb.url,
        PLATFORM_API_KEY: TEST_API_KEY,
        PLATFORM_API_SECRET: TEST_API_SECRET,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    children.push({ child, output: () => out, exited });
    return new Promise((res, rej) => {
      const deadline = Date.now() + 30_000;
      const check = () => {
        if (/listening on/.test(out)) return res();
        if (child.exitCode !== null || Date.now() > deadline) return rej(new Error(`mercato start did not come up:\n${out}`));
        setTimeout(check, 50);
      };
      check();
    });
  }

  async function stopAll() {
    const live = children.filter((c) => c.child.exitCode === null && c.child.signalCode === null);
    for (const c of live) c.child.kill('SIGTERM');
    return Promise.all(live.map((c) => c.exited));
  }

  beforeAll(async () => {
    tdb = await createTestDatabase('postgres');
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await tdb?.drop();
  }, 30_000);

  it('3 processes, a few real seconds: every fire time once, no gaps', { timeout: 90_000 }, async () => {
    await Promise.all([start(), start(), start()]);
    const allUp = Date.now();
    await sleep(5000);
    expect(await stopAll()).toEqual([0, 0, 0]);

    const ticks = await tdb.db.query<{ cron_key: string; fire_at: string; status: string; run_id: string | null; scheduler_id: string }>(
      sql`select cron_key, to_json(fire_at) #>> '{}' as fire_at, status, run_id, scheduler_id from cron_ticks order by cron_key, fire_at`,
    );
    const [runs] = await tdb.db.query<{ n: number; linked: number }>(
      sql`select count(*)::int as n, count(*) filter (where id in (select run_id from cron_ticks))::int as linked from runs where trigger = 'cron'`,
    );
    // Gaps are checked once all three run (before that, one process starting under load may stall past a fire time).
    const times = (key: string) =>
      ticks.filter((r) => r.cron_key === key && Date.parse(r.fire_at) > allUp).map((r) => Date.parse(r.fire_at));
    const everySecond = times('tick:* * * * * *');
    const everyTwo = times('tick:*/2 * * * * *');
    const context = JSON.stringify({ ticks, output: children.map((c) => c.output()) }).slice(0, 4000);

    expect(everySecond.length, context).toBeGreaterThanOrEqual(3);
    expect(
      ticks.every((r) => r.status === 'dispatched' && r.run_id !== null),
      context,
    ).toBe(true);
    expect(runs, context).toEqual({ n: ticks.length, linked: ticks.length });
    // Consecutive fire times, each once (the primary key forbids a second row; no gaps means none was lost).
    everySecond.slice(1).forEach((t, i) => expect(t - everySecond[i]!, context).toBe(1000));
    everyTwo.slice(1).forEach((t, i) => expect(t - everyTwo[i]!, context).toBe(2000));
    console.info(
      `cron ticks claimed per process: ${JSON.stringify(Object.fromEntries([...new Set(ticks.map((r) => r.scheduler_id))].map((id) => [id, ticks.filter((r) => r.scheduler_id === id).length])))}`,
    );
  });
});
