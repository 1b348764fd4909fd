/**
 * Proof under real conditions (PostgreSQL only): real `mercato worker` processes, spawned from the CLI, against one database.
 * (a) 3 processes and 1,000 runs of a 3-step flow: every run completed once, every step function executed once;
 * (b) a worker killed with SIGKILL in the middle of a step: the run is reclaimed after its lease and completes without
 *     re-running its completed step;
 * (c) a cancel over the HTTP API reaches the run executing in another process within about a second, and nothing more is stored.
 * The fixture app (test/fixtures/proof-app) appends `<runId> <step> <pid>` to PROOF_LOG on every step execution.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import instance, { markerPath } from '../fixtures/proof-app/service.config.ts';
import { SHOP, TEST_API_KEY, TEST_API_SECRET, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { eventually } from '../kit/index.ts';

const ROOT = resolve(import.meta.dirname, '../../../..');
const BIN = join(ROOT, 'packages/mercato/bin/mercato.js');
const FIXTURE = join(ROOT, 'packages/mercato/test/fixtures/proof-app/service.config.ts');
const LEASE_MS = 2000;

interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readLines(path: string): string[] {
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];
}

describe.skipIf(!process.env.DATABASE_URL)('flows proof with real worker processes [postgres]', () => {
  let tdb: TestDatabase;
  let t: TestRuntime;
  let dir: string;
  const spawned: WorkerProcess[] = [];

  async function startWorker(log: string, concurrency: number): Promise<WorkerProcess> {
    const child = spawn(process.execPath, [BIN, 'worker', '--config', FIXTURE, `--concurrency=${concurrency}`], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        DATABASE_URL: tdb.url,
        PLATFORM_API_KEY: TEST_API_KEY,
        PLATFORM_API_SECRET: TEST_API_SECRET,
        PROOF_LOG: log,
        PROOF_LEASE_MS: String(LEASE_MS),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
      child.once('exit', (code, signal) => res({ code, signal })),
    );
    const proc: WorkerProcess = { child, pid: child.pid!, output: () => out, exited };
    spawned.push(proc);
    let gone = false;
    void exited.then(() => (gone = true));
    // 'exited' ends the polling at once (a throwing probe would be polled again until the timeout)
    const state = await eventually(() => (gone ? 'exited' : /mercato worker .*concurrency \d+/.test(out) && 'ready'), {
      timeout: 30_000,
      interval: 25,
      message: `worker ${child.pid} to start`,
    });
    if (state === 'exited') throw new Error(`worker exited before it was ready:\n${out}`);
    return proc;
  }

  /** SIGTERM (graceful) every live worker; SIGKILL whatever is still alive after 5 s. */
  async function stopWorkers(): Promise<Array<{ code: number | null; signal: NodeJS.Signals | null }>> {
    const live = spawned.splice(0).filter((p) => p.child.exitCode === null && p.child.signalCode === null);
    for (const p of live) p.child.kill('SIGTERM');
    return Promise.all(
      live.map(async (p) => {
        const timer = setTimeout(() => p.child.kill('SIGKILL'), 5000);
        const result = await p.exited;
        clearTimeout(timer);
        return result;
      }),
    );
  }

  const dispatch = (flowName: string, input: Record<string, unknown> = {}) =>
    t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input, trigger: 'api' }).then((r) => r.runId);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mercato-proof-'));
    tdb = await createTestDatabase('postgres');
    // the API server runs here, in the test process, with no worker: every run executes in a spawned process
    t = await startTestRuntime(instance, tdb.db, { http: true });
  }, 60_000);

  afterEach(async () => {
    await stopWorkers();
  }, 15_000);

  afterAll(async () => {
    await stopWorkers();
    await t?.close();
    await tdb?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('3 worker processes, 1,000 runs of a 3-step flow: every run completes once and every step executes once', async () => {
    const RUNS = 1000;
    const log = join(dir, 'many.log');
    const workers = await Promise.all([startWorker(log, 10), startWorker(log, 10), startWorker(log, 10)]);

    const ids: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < RUNS) {
          const n = next++;
          ids[n] = await dispatch('threeSteps', { n });
        }
      }),
    );
    expect(new Set(ids).size).toBe(RUNS);

    await expect
      .poll(
        async () => {
          const [row] = await tdb.db.query<{ open: number }>(
            sql`select count(*)::int as open from runs where status not in ('completed','failed','canceled')`,
          );
          return row.open;
        },
        { timeout: 45_000, interval: 100, message: 'all runs to finish' },
      )
      .toBe(0);

    const runs = await tdb.db.query<{
      id: string;
      status: string;
      attempt: number;
      lost_leases: number;
      input: { n: number };
      output: any;
    }>(sql`select id, status, attempt - attempt_base as attempt, lost_leases, input, output from runs`);
    expect(runs).toHaveLength(RUNS);
    for (const r of runs) {
      expect({ id: r.id, status: r.status, attempt: r.attempt, lostLeases: r.lost_leases }).toEqual({
        id: r.id,
        status: 'completed',
        attempt: 1,
        lostLeases: 0,
      });
      expect(r.output).toEqual({ n: r.input.n, sum: 2 * r.input.n + 1 });
    }
    const [steps] = await tdb.db.query<{ total: number; good: number }>(
      sql`select count(*)::int as total, count(*) filter (where status = 'completed' and attempt = 1)::int as good from steps`,
    );
    expect(steps).toEqual({ total: 3 * RUNS, good: 3 * RUNS });

    // the side effects, counted across processes
    const lines = readLines(log);
    expect(lines).toHaveLength(3 * RUNS);
    const executions = new Set(lines.map((l) => l.split(' ').slice(0, 2).join(' ')));
    expect(executions.size).toBe(3 * RUNS);
    for (const id of ids) for (const step of ['one', 'two', 'three']) expect(executions.has(`${id} ${step}`)).toBe(true);
    const perPid = new Map<number, number>();
    for (const l of lines) {
      const pid = Number(l.split(' ')[2]);
      perPid.set(pid, (perPid.get(pid) ?? 0) + 1);
    }
    expect([...perPid.keys()].sort()).toEqual(workers.map((w) => w.pid).sort());
    for (const count of perPid.values()) expect(count).toBeGreaterThan(0);

    // graceful stop: exit 0
    const exits = await stopWorkers();
    expect(exits).toEqual(workers.map(() => ({ code: 0, signal: null })));
  }, 90_000);

  it('SIGKILL in the middle of a step: the run is reclaimed after the lease and completes without re-running its completed step', async () => {
    const log = join(dir, 'kill.log');
    const first = await startWorker(log, 2);
    const runId = await dispatch('killable');
    const marker = markerPath(log, runId);
    await expect.poll(() => existsSync(marker), { timeout: 15_000, interval: 25, message: 'the step to be in flight' }).toBe(true);

    const [before] = await tdb.db.query<{ status: string; lease_owner: string; lease: string }>(
      sql`select status, lease_owner, to_json(lease_expires_at) #>> '{}' as lease from runs where id = ${runId}::uuid`,
    );
    expect(before.status).toBe('running');
    expect(before.lease_owner).toContain(`:${first.pid}:`);
    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });

    const second = await startWorker(log, 2);
    const done = await waitForRun(tdb.db, runId, undefined, 20_000);
    expect(done.status).toBe('completed');
    expect(done.attempt).toBe(1); // a crash-reclaim is not an attempt
    expect(done.lost_leases).toBe(1);
    // the stored result of `first` was replayed (it carries the killed process's pid); `second` ran again in the new process
    expect(done.output).toEqual({ first: { pid: first.pid }, second: { pid: second.pid, resumed: true } });

    const lines = readLines(log);
    expect(lines.filter((l) => l.startsWith(`${runId} first `))).toEqual([`${runId} first ${first.pid}`]);
    expect(lines.filter((l) => l.startsWith(`${runId} second `))).toEqual([
      `${runId} second ${first.pid}`,
      `${runId} second ${second.pid}`,
    ]);

    // reclaimed only after the lease the killed worker held had expired
    const steps = await tdb.db.query<{ name: string; status: string; started: string }>(
      sql`select name, status, to_json(started_at) #>> '{}' as started from steps where run_id = ${runId}::uuid order by name`,
    );
    expect(steps.map((s) => [s.name, s.status])).toEqual([
      ['first', 'completed'],
      ['second', 'completed'],
    ]);
    expect(Date.parse(steps[1].started)).toBeGreaterThanOrEqual(Date.parse(before.lease));
  }, 60_000);

  it('a cancel over the HTTP API reaches the run executing in another process within a second; nothing more is stored', async () => {
    const log = join(dir, 'cancel.log');
    const worker = await startWorker(log, 2);
    const res = await t.api('/api/flows/cancelable/run', { method: 'POST', json: { input: {} } });
    expect(res.status).toBe(202);
    const { runId } = (await res.json()) as { runId: string };
    await expect
      .poll(() => readLines(log), { timeout: 15_000, interval: 25, message: 'the step to be waiting' })
      .toContain(`${runId} wait ${worker.pid}`);

    const cancelAt = Date.now();
    const cancel = await t.api(`/api/runs/${runId}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    expect(await cancel.json()).toMatchObject({ runId, status: 'canceled', previousStatus: 'running' });

    const abortedAt = await eventually(
      () => {
        const line = readLines(log).find((l) => l.startsWith(`aborted ${runId} `));
        return line ? Number(line.split(' ')[2]) : undefined;
      },
      { timeout: 5000, interval: 25, message: 'the worker process to see the abort' },
    );
    expect(abortedAt - cancelAt).toBeLessThan(1500);

    await sleep(500); // the flow tries to go on after the abort (it swallows the error and calls one more step)
    const detail = await t.api(`/api/runs/${runId}`);
    expect(detail.status).toBe(200);
    const body = (await detail.json()) as { status: string; output: unknown; steps: Array<{ name: string; status: string }> };
    expect(body.status).toBe('canceled');
    expect(body.output).toBeNull();
    expect(body.steps.map((s) => [s.name, s.status])).toEqual([['before', 'completed']]);
    const [late] = await tdb.db.query<{ n: number }>(
      sql`select count(*)::int as n from steps s join runs r on r.id = s.run_id where s.run_id = ${runId}::uuid and (s.finished_at is null or s.finished_at >= r.finished_at)`,
    );
    expect(late.n).toBe(0);
    expect(readLines(log).filter((l) => l.startsWith(`${runId} after `))).toEqual([]);

    // the worker process is still healthy and its slot is free again
    const other = await dispatch('threeSteps', { n: 1 });
    expect((await waitForRun(tdb.db, other, undefined, 10_000)).status).toBe('completed');
    expect(readLines(log).filter((l) => l.startsWith(`${other} `))).toHaveLength(3);
  }, 60_000);
});
