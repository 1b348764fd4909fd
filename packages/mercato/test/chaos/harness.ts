/**
 * What the chaos files share: the fixture app, the CLI processes (`mercato worker`, `mercato start`), the instrumentation
 * tables the test adds to its own database, the dispatcher of the test process, and the checks at the end.
 *
 * Instrumentation (test database only, created after the migrations):
 * - `chaos_effects`: one row per execution of a step of the fixture (written by the step itself, see the fixture);
 * - `chaos_step_commits`: a trigger on `steps` copies every committed write of a completed step result (the row exists
 *   only if the engine's transaction committed), with the database clock;
 * - `chaos_claims`: a trigger on `runs` records every new lease owner (each claim), with the database clock;
 * - `chaos_recoveries`: the same trigger records each expired lease recovered by a worker (the run back to `pending`);
 * - `chaos_releases`: and each lease given up by its owner (a hand-back of a run claimed ahead, a final write), with
 *   the owner that gave it up.
 * The triggers only record; they change nothing the engine reads.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { sql } from 'drizzle-orm';
import { type Database, openDatabase } from '../../src/db/engine.ts';
import { silentLogger } from '../../src/logger.ts';
import { type Runtime, createRuntime } from '../../src/runtime.ts';
import instance from '../fixtures/chaos-app/service.config.ts';
import { TEST_API_KEY, TEST_API_SECRET } from '../helpers/runtime.ts';
import { SHOP } from '../kit/index.ts';

export const ROOT = resolve(import.meta.dirname, '../../../..');
export const BIN = join(ROOT, 'packages/mercato/bin/mercato.js');
export const FIXTURE = join(ROOT, 'packages/mercato/test/fixtures/chaos-app/service.config.ts');
export const ENCRYPTION_KEY = '5c'.repeat(32);

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A positive number from the environment, or the fallback. */
export function envNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

const started = Date.now();
/** A progress line (the suite runs for minutes). */
export function progress(line: string) {
  const s = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`[chaos ${s}s] ${line}\n`);
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const fmt = (ms: number) => (Number.isNaN(ms) ? 'n/a' : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`);

/**
 * Waits for a clean-up step for at most `ms`, so that one step that hangs cannot keep the others (stopping the cluster)
 * from running; says which one hung.
 */
export async function settle(label: string, work: () => Promise<unknown>, ms = 30_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((res) => (timer = setTimeout(() => res('timeout'), ms)));
  const outcome = await Promise.race([
    work().then(
      () => 'done' as const,
      (error: unknown) => {
        progress(`clean-up: ${label} failed: ${(error as Error)?.message ?? String(error)}`);
        return 'failed' as const;
      },
    ),
    timeout,
  ]);
  clearTimeout(timer);
  if (outcome === 'timeout') progress(`clean-up: ${label} did not finish within ${ms / 1000} s; going on`);
}

// ---------------------------------------------------------------------------------------------
// CLI processes

export interface Proc {
  kind: 'worker' | 'server';
  /** The current child (a start that failed because dist/ was being rebuilt is retried with a new child). */
  readonly child: ChildProcess;
  readonly pid: number;
  /** stdout and stderr so far. */
  output(): string;
  ready: Promise<void>;
  isReady(): boolean;
  alive(): boolean;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  /** Marks the coming exit as the test's doing (a kill or a stop); any other exit is a crash. */
  expectExit(): void;
}

export interface Crash {
  kind: Proc['kind'];
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The end of its output. */
  output: string;
}

const crashes: Crash[] = [];
/** Processes that exited without the test stopping or killing them. */
export const unexpectedExits = (): readonly Crash[] => crashes;

const processes = new Set<Proc>();

function processEnv(databaseUrl: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: databaseUrl,
    PLATFORM_API_KEY: TEST_API_KEY,
    PLATFORM_API_SECRET: TEST_API_SECRET,
    ENCRYPTION_KEY,
    ...extra,
  };
}

/**
 * Why a process that exited before it was ready may be started again (at most a few times), instead of counting as a
 * crash: dist/ was swapped under it while it loaded (another vitest run in the same checkout rebuilt the package), or
 * PostgreSQL was restarting at that moment (a `mercato worker`/`start` that cannot connect at start-up exits 1, for its
 * supervisor to start it again). Both are counted and printed (`startRetries()`).
 */
const RETRYABLE_START: Array<[RegExp, string]> = [
  [/ERR_MODULE_NOT_FOUND[^\n]*packages\/mercato\/dist\//, 'dist/ rebuilt by another process while it loaded'],
  [
    /ECONNREFUSED|the database system is (?:shutting down|starting up)|terminating connection due to administrator command/,
    'PostgreSQL unreachable at start-up',
  ],
];

const retries: Array<{ kind: Proc['kind']; pid: number; reason: string }> = [];
/** Processes that exited before they were ready for a reason in RETRYABLE_START, and were started again. */
export const startRetries = (): ReadonlyArray<{ kind: Proc['kind']; pid: number; reason: string }> => retries;

function spawnCli(kind: Proc['kind'], args: string[], env: NodeJS.ProcessEnv, readyPattern: RegExp): Proc {
  let out = '';
  let ready = false;
  let gone = false;
  let expected = false;
  let resolveExit!: (value: { code: number | null; signal: NodeJS.Signals | null; at: number }) => void;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((res) => (resolveExit = res));
  let resolveReady!: () => void;
  let rejectReady!: (error: Error) => void;
  const readyPromise = new Promise<void>((res, rej) => {
    resolveReady = res;
    rejectReady = rej;
  });
  readyPromise.catch(() => {}); // awaited by the caller; a process killed while starting is not an unhandled rejection
  let child!: ChildProcess;

  const launch = (tries: number) => {
    child = spawn(process.execPath, [BIN, ...args, '--config', FIXTURE], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const current = child;
    let mine = '';
    current.stdout!.on('data', (d) => {
      mine += d;
      out += d;
      if (!ready && readyPattern.test(mine)) {
        ready = true;
        resolveReady();
      }
    });
    current.stderr!.on('data', (d) => {
      mine += d;
      out += d;
    });
    current.once('exit', (code, signal) => {
      const retryable = RETRYABLE_START.find(([pattern]) => pattern.test(mine))?.[1];
      if (!ready && !expected && tries < 5 && retryable) {
        retries.push({ kind, pid: current.pid!, reason: retryable });
        progress(`${kind} ${current.pid} exited before it was ready (${retryable}); starting it again`);
        setTimeout(() => {
          if (!expected) return launch(tries + 1);
          gone = true; // stopped by the test meanwhile
          rejectReady(new Error(`${kind} stopped before it came up`));
          resolveExit({ code, signal, at: Date.now() });
        }, 1000);
        return;
      }
      gone = true;
      if (!ready) rejectReady(new Error(`${kind} ${current.pid} did not come up (code ${code}, signal ${signal}):\n${out.slice(-3000)}`));
      if (!expected) {
        crashes.push({ kind, pid: current.pid!, code, signal, output: out.slice(-3000) });
        progress(`CRASH: ${kind} ${current.pid} exited on its own (code ${code}, signal ${signal}); its last output:\n${out.slice(-1500)}`);
      }
      resolveExit({ code, signal, at: Date.now() });
    });
  };
  launch(1);
  const timer = setTimeout(() => {
    if (!ready && !gone) rejectReady(new Error(`${kind} ${child.pid} did not come up within 60 s:\n${out.slice(-3000)}`));
  }, 60_000);
  timer.unref();

  const proc: Proc = {
    kind,
    get child() {
      return child;
    },
    get pid() {
      return child.pid!;
    },
    output: () => out,
    ready: readyPromise,
    isReady: () => ready && !gone,
    alive: () => !gone,
    exited,
    expectExit: () => {
      expected = true;
    },
  };
  processes.add(proc);
  void exited.then(() => processes.delete(proc));
  return proc;
}

export function startWorkerProcess(databaseUrl: string, concurrency: number, extraEnv: Record<string, string> = {}): Proc {
  return spawnCli(
    'worker',
    ['worker', `--concurrency=${concurrency}`],
    processEnv(databaseUrl, extraEnv),
    /mercato worker .*concurrency \d+/,
  );
}

export function startServerProcess(databaseUrl: string, port: number, platformOrigin: string): Proc {
  return spawnCli(
    'server',
    ['start', '--port', String(port)],
    processEnv(databaseUrl, { MERCATO_BIND_ADDRESS: '127.0.0.1', PLATFORM_ORIGIN: platformOrigin }),
    /listening on/,
  );
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves with how it ended. */
export async function stopProcess(proc: Proc, graceMs = 20_000) {
  if (!proc.alive()) return proc.exited;
  proc.expectExit();
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), graceMs);
  const result = await proc.exited;
  clearTimeout(timer);
  return result;
}

/** Ends every process this file started (SIGKILL: the cluster goes away right after). */
export async function killAll() {
  const live = [...processes].filter((p) => p.alive());
  for (const p of live) {
    p.expectExit();
    p.child.kill('SIGKILL');
  }
  await Promise.all(live.map((p) => p.exited));
}

// ---------------------------------------------------------------------------------------------
// The test database

const INSTRUMENTATION = `
create table chaos_effects (
  execution_id uuid primary key,
  run_id uuid not null,
  step text not null,
  pid int not null,
  webhook_id text,
  at timestamptz not null
);
create index chaos_effects_run_step on chaos_effects (run_id, step);

create table chaos_step_commits (run_id uuid not null, name text not null, result jsonb, at timestamptz not null default clock_timestamp());
create index chaos_step_commits_run_name on chaos_step_commits (run_id, name);
create function chaos_record_step_commit() returns trigger language plpgsql as $$
begin
  if new.status = 'completed' then
    insert into chaos_step_commits (run_id, name, result) values (new.run_id, new.name, new.result);
  end if;
  return null;
end $$;
create trigger chaos_step_commit after insert or update on steps for each row execute function chaos_record_step_commit();

create table chaos_claims (run_id uuid not null, lease_owner text not null, at timestamptz not null default clock_timestamp());
create index chaos_claims_run_at on chaos_claims (run_id, at);
create table chaos_recoveries (run_id uuid not null, at timestamptz not null default clock_timestamp());
create index chaos_recoveries_run_at on chaos_recoveries (run_id, at);
create table chaos_releases (run_id uuid not null, lease_owner text not null, at timestamptz not null default clock_timestamp());
create index chaos_releases_run_at on chaos_releases (run_id, at);
create function chaos_record_claim() returns trigger language plpgsql as $$
begin
  if new.lease_owner is not null and new.lease_owner is distinct from old.lease_owner then
    insert into chaos_claims (run_id, lease_owner) values (new.id, new.lease_owner);
  end if;
  if new.lost_leases > old.lost_leases then
    insert into chaos_recoveries (run_id) values (new.id);
  elsif new.lease_owner is null and old.lease_owner is not null then
    insert into chaos_releases (run_id, lease_owner) values (new.id, old.lease_owner);
  end if;
  return null;
end $$;
create trigger chaos_claim after update of lease_owner on runs for each row execute function chaos_record_claim();
`;

export interface TestSide {
  db: Database;
  runtime: Runtime;
  /** Dispatches through the one dispatch door, retrying while PostgreSQL is unreachable; the run id. */
  dispatch(flowName: string, n: number): Promise<string>;
  /** The database clock, in epoch ms (retried while PostgreSQL restarts). */
  now(): Promise<number>;
  close(): Promise<void>;
}

/** Migrates the database, adds the instrumentation, and opens the test process's runtime (dispatch only, no worker). */
export async function openTestSide(databaseUrl: string): Promise<TestSide> {
  const db = await openDatabase({ url: databaseUrl, poolSize: 8, applicationName: 'chaos-test' });
  const runtime = await createRuntime({
    instance,
    projectDir: join(ROOT, 'packages/mercato/test/fixtures/chaos-app'),
    mode: 'test',
    db,
    logger: silentLogger(),
    env: {
      NODE_ENV: 'test',
      DATABASE_URL: databaseUrl,
      PLATFORM_API_KEY: TEST_API_KEY,
      PLATFORM_API_SECRET: TEST_API_SECRET,
      ENCRYPTION_KEY,
    },
  });
  await db.exec(INSTRUMENTATION);
  const retrying = async <T>(fn: () => Promise<T>): Promise<T> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        if (attempt >= 100) throw error;
        await sleep(100);
      }
    }
  };
  return {
    db,
    runtime,
    dispatch: (flowName, n) =>
      retrying(() => runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input: { n }, trigger: 'api' }).then((r) => r.runId)),
    now: () =>
      retrying(async () => {
        const [row] = await db.query<{ ms: number }>(sql`select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms`);
        return row!.ms;
      }),
    async close() {
      await runtime.close();
      await db.close();
    },
  };
}

/** Runs not in a final state. */
export async function openRuns(db: Database): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    sql`select count(*)::int as n from runs where status not in ('completed','failed','canceled')`,
  );
  return row!.n;
}

/**
 * Dispatch → start latency of `samples` spaced runs of the one-step flow `ping` (database clock: started_at − created_at),
 * each waited for before the next.
 */
export async function measureLatency(side: TestSide, samples: number, label: string): Promise<number[]> {
  const values: number[] = [];
  for (let i = 0; i < samples; i++) {
    await sleep(100 + Math.random() * 150); // the worker finishes its post-run poll and waits
    const runId = await side.dispatch('ping', i);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [row] = await side.db.query<{ status: string; ms: number | null }>(
        sql`select status, (extract(epoch from (started_at - created_at)) * 1000)::float8 as ms from runs where id = ${runId}::uuid`,
      );
      if (row?.status === 'completed') {
        values.push(row.ms!);
        break;
      }
      if (row && ['failed', 'canceled'].includes(row.status)) throw new Error(`latency run ${runId} ended ${row.status}`);
      if (Date.now() > deadline) throw new Error(`latency run ${runId} (${label}) did not complete within 30 s`);
      await sleep(5);
    }
  }
  progress(`latency ${label}: ${samples} samples, p50 ${fmt(percentile(values, 50))}, max ${fmt(Math.max(...values))}`);
  return values;
}

// ---------------------------------------------------------------------------------------------
// Checks of the step results against their side effects

export interface StepAudit {
  /** (run, step) pairs with a committed result. */
  committedSteps: number;
  /** Pairs whose result was committed more than once (must be 0). */
  committedTwice: number;
  /** Pairs whose committed result names no recorded execution of that step (must be 0). */
  resultWithoutExecution: number;
  /** Executions of a step that started after its result was committed (must be 0). */
  executedAfterCommit: number;
  /** Executions whose result was never committed (interrupted before the checkpoint, or failed): allowed. */
  uncommittedExecutions: number;
  /** Every recorded execution. */
  executions: number;
  /** Up to 10 offending (run, step) pairs, for the failure message. */
  examples: unknown[];
}

/** Compares every committed step result (chaos_step_commits) with the recorded executions (chaos_effects). */
export async function auditSteps(db: Database): Promise<StepAudit> {
  const [row] = await db.query<Omit<StepAudit, 'examples'>>(sql`
    with commits as (
      select run_id, name, count(*)::int as n, min(at) as first_at,
        (array_agg(result #>> '{}' order by at))[1] as execution
      from chaos_step_commits where name in ('one','two','three','wait','record') group by run_id, name
    )
    select
      (select count(*)::int from commits) as "committedSteps",
      (select count(*)::int from commits where n > 1) as "committedTwice",
      (select count(*)::int from commits c where not exists (
        select 1 from chaos_effects e where e.run_id = c.run_id and e.step = c.name and e.execution_id::text = c.execution)) as "resultWithoutExecution",
      (select count(*)::int from chaos_effects e join commits c on c.run_id = e.run_id and c.name = e.step where e.at > c.first_at) as "executedAfterCommit",
      (select count(*)::int from chaos_effects e where not exists (
        select 1 from commits c where c.run_id = e.run_id and c.name = e.step and c.execution = e.execution_id::text)) as "uncommittedExecutions",
      (select count(*)::int from chaos_effects) as executions`);
  const examples = await db.query(sql`
    with commits as (
      select run_id, name, count(*)::int as n, min(at) as first_at from chaos_step_commits group by run_id, name
    )
    select c.run_id, c.name, c.n as commits,
      (select count(*)::int from chaos_effects e where e.run_id = c.run_id and e.step = c.name and e.at > c.first_at) as after_commit
    from commits c
    where c.n > 1 or exists (select 1 from chaos_effects e where e.run_id = c.run_id and e.step = c.name and e.at > c.first_at)
    limit 10`);
  return { ...row!, examples };
}
