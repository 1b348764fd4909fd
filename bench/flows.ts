/**
 * `npm run bench:flows` — the run engine on PostgreSQL, judged next to peers measured in the same run.
 *
 * On a private, durable PostgreSQL 15 cluster of its own (fsync and synchronous_commit on, pg_stat_statements), in
 * BENCH_ROUNDS interleaved rounds (the order of the configurations rotates from round to round):
 *   - Mercato with 1 and with 2 real `mercato worker` processes, plain-pg (bench/peers/plain-pg.ts), graphile-worker with
 *     its defaults and with its batching options, pg-boss: BENCH_RUNS one-step runs (jobs) queued and held back, released
 *     at once once the worker processes are up; runs/s, statements, commits, worker and PostgreSQL CPU, NOTIFYs per run;
 *   - the same durable work (one step whose result is checkpointed, then the completion) on peers that do it: Mercato
 *     with 1 process, DBOS Transact and absurd (with ABSURD_SQL), at BENCH_SMALL_RUNS and BENCH_RUNS runs, and the
 *     rows each writes per run (pg_stat_user_tables);
 *   - pgbench TPC-B-like on the same cluster;
 *   - one idle Mercato worker: dispatch → start latency, step checkpoint cost, the admin UI's watch latency.
 * Prints a table per figure (min / median / max over the rounds), the ratios per round, the targets; writes
 * bench/results/flows.json. Method and variables: docs/benchmarks.md.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { sql } from 'drizzle-orm';
import { type Database, openDatabase } from '../packages/mercato/src/db/engine.ts';
import { RUNS_CHANNEL } from '../packages/mercato/src/flows/store/index.ts';
import { createRunWatch } from '../packages/mercato/src/flows/watch.ts';
import { silentLogger } from '../packages/mercato/src/logger.ts';
import { type Runtime, createRuntime } from '../packages/mercato/src/runtime.ts';
import { PG_BIN, startCluster } from '../packages/mercato/test/kit/cluster.ts';
import instance, { STEPS_IN_LONG_FLOW } from './flows-app/service.config.ts';
import { MONITOR_USER, Monitor, type StatementRow, type Target } from './lib/monitor.ts';
import { killAll, runToEnd, spawnReady, stop } from './lib/processes.ts';
import { CLK_TCK, backendDeltaMs, postgresCpu, postmasterPid, treeCpuMs } from './lib/proc.ts';
import { gitState } from './lib/git.ts';
import { type Spread, fmt, percentile, spread, table } from './lib/stats.ts';
import { ABSURD, DBOS_QUEUE } from './peers/same-work.ts';
import { GRAPHILE_BATCHED, PGBOSS, PLAIN_CHANNEL } from './peers/settings.ts';
import { BIN, DURABLE_SETTINGS, ROOT, num } from './lib/common.ts';

const APP = join(ROOT, 'bench/flows-app/service.config.ts');
const PEERS = join(ROOT, 'bench/peers');

const ROUNDS = num('BENCH_ROUNDS', 3);
/**
 * Runs per throughput configuration. 20,000 by default: with 3,000, the batched configurations (graphile-worker batched,
 * Mercato claiming ahead) finish in 0.15–0.4 s, about as long as a fresh process's JIT warm-up, so their rates measured
 * the start-up more than the steady state (docs/benchmarks.md).
 */
const RUNS = num('BENCH_RUNS', 20_000);
/** pg-boss does ~200 jobs/s here: its figures are per run, so a smaller batch keeps the benchmark's time reasonable. */
const PGBOSS_RUNS = num('BENCH_PGBOSS_RUNS', 3000);
/**
 * The smaller size of the "same work" comparison (Mercato 1 process, DBOS, absurd: one step whose result is
 * checkpointed, then the completion), measured beside the BENCH_RUNS one: `mercato-1-small`, `dbos-small`, `absurd-small`.
 */
const SMALL_RUNS = num('BENCH_SMALL_RUNS', 5000);
/**
 * ABSURD_SQL=<path of absurd.sql> adds `absurd` and `absurd-small`: absurd's schema is not in its npm package
 * (bench/peers/absurd.ts), so the benchmark needs that file to install it; without it they are left out.
 */
const ABSURD_SQL = process.env.ABSURD_SQL ? resolve(process.env.ABSURD_SQL) : '';
const CONCURRENCY = num('BENCH_CONCURRENCY', 10);
const LATENCY_SAMPLES = num('BENCH_LATENCY_SAMPLES', 200);
const OVERHEAD_RUNS = num('BENCH_OVERHEAD_RUNS', 20);
const WATCH_SAMPLES = num('BENCH_WATCH_SAMPLES', 20);
const PGBENCH_SECONDS = num('BENCH_PGBENCH_SECONDS', 10);
const DISPATCHERS = 8;
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/flows.json');
/** Extra node flags of the Mercato worker processes, space-separated (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`). */
const WORKER_NODE_ARGS = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** Extra `worker` settings of the Mercato app (JSON), e.g. batching options of the engine; read by flows-app/service.config.ts. */
const MERCATO_WORKER = process.env.BENCH_MERCATO_WORKER || '';

const CONFIGS = [
  'mercato-1',
  'mercato-2',
  'plain-pg',
  'plain-pg-batched',
  'graphile',
  'graphile-batched',
  'pg-boss',
  'mercato-otel',
  'mercato-baseline',
  'mercato-1-small',
  'dbos',
  'dbos-small',
  'absurd',
  'absurd-small',
] as const;
type ConfigName = (typeof CONFIGS)[number];
type Phase = ConfigName | 'pgbench' | 'idle-worker';
const LABELS: Record<ConfigName, string> = {
  'mercato-1': 'Mercato, 1 process',
  'mercato-2': 'Mercato, 2 processes',
  'plain-pg': 'plain-pg',
  'plain-pg-batched': 'plain-pg (batched)',
  graphile: 'graphile-worker (defaults)',
  'graphile-batched': 'graphile-worker (batched)',
  'pg-boss': 'pg-boss',
  'mercato-otel': 'Mercato, 1 process, traces to a local OTLP sink',
  'mercato-baseline': 'Mercato, 1 process, the CLI of BENCH_BASELINE_BIN (on BENCH_BASELINE_NODE)',
  'mercato-1-small': 'Mercato, 1 process (BENCH_SMALL_RUNS)',
  dbos: 'DBOS Transact',
  'dbos-small': 'DBOS Transact (BENCH_SMALL_RUNS)',
  absurd: 'absurd',
  'absurd-small': 'absurd (BENCH_SMALL_RUNS)',
};
/** BENCH_ONLY=mercato-1,plain-pg,… limits a run to some phases (for trying things; the summary then has gaps). */
const ONLY = new Set((process.env.BENCH_ONLY ?? '').split(',').filter(Boolean));
/** BENCH_OTEL=1 adds `mercato-otel` (one worker process exporting its traces to a local OTLP/HTTP sink) to the phases. */
const OTEL = process.env.BENCH_OTEL === '1';
/**
 * BENCH_BASELINE_BIN=<path to another build's bin/mercato.js> adds `mercato-baseline`: one worker process of that build
 * (e.g. the commit before a change, extracted with `git archive` and built with `scripts/build.mjs --js`) on the same
 * database, beside `mercato-1`. The runs are dispatched by this checkout either way.
 */
/**
 * BENCH_BASELINE_NODE=<path to another node binary> runs `mercato-baseline` with that Node.js (the build of
 * BENCH_BASELINE_BIN, or this checkout's when that is unset): the same worker on two Node.js versions, side by side.
 */
const BASELINE_NODE = process.env.BENCH_BASELINE_NODE ? resolve(process.env.BENCH_BASELINE_NODE) : '';
const BASELINE_BIN = process.env.BENCH_BASELINE_BIN ? resolve(process.env.BENCH_BASELINE_BIN) : BASELINE_NODE && BIN;
const OPTIONAL: Partial<Record<Phase, boolean>> = {
  'mercato-otel': OTEL,
  'mercato-baseline': BASELINE_BIN !== '',
  absurd: ABSURD_SQL !== '',
  'absurd-small': ABSURD_SQL !== '',
};
const wanted = (phase: Phase) => (ONLY.size === 0 ? (OPTIONAL[phase] ?? true) : ONLY.has(phase));

const TENANT = { appHandle: 'default', shop: 'bench.myshopify.com' };

const progress = (line: string) => process.stdout.write(`  … ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Figures

interface DispatchFigures {
  perSecond: number;
  statementsPerRun: number;
  commitsPerRun: number;
  notifyStatementsPerRun: number;
  top: Array<{ query: string; perRun: number }>;
}

interface ThroughputFigures {
  runs: number;
  /** N / (max finish − min start) from the database's own timestamps (not for graphile-worker, which deletes its jobs) */
  rateDb?: number;
  /** N / (wall time from the commit of the release to the poll that saw every run finished) */
  rateWall: number;
  statementsPerRun: number;
  commitsPerRun: number;
  workerCpuMsPerRun: number;
  pgCpuMsPerRun: number;
  notifyStatementsPerRun: number;
  notifyTriggerCallsPerRun: number;
  /** CPU of the cluster's other processes (WAL writer, checkpointer, autovacuum, …) per run: not in pgCpuMsPerRun */
  pgOtherCpuMsPerRun: number;
  /** backends of the measured database that exited inside the CPU window (their CPU is lost) */
  backendsGone: number;
  /** statements of the workers outside the window (start-up before the release, stop after the last run): the
   * most by which commitsPerRun × runs can exceed the window's own commits */
  statementsOutsideWindow: number;
  top: Array<{ query: string; perRun: number }>;
  dispatch?: DispatchFigures;
  /**
   * Rows inserted, updated and deleted per run in each table (pg_stat_user_tables n_tup_ins/upd/del): `enqueue` while
   * the runs are queued (with the benchmark's holding back, an update per run for Mercato and absurd), `execute` from
   * after that to the workers' exit (with the benchmark's release, an update per run of the queue table).
   */
  writesPerRun?: { enqueue: TableWrites; execute: TableWrites };
}

type TableWrites = Record<string, { ins: number; upd: number; del: number }>;

interface IdleWorkerFigures {
  latencyP50: number;
  latencyP99: number;
  latencyMax: number;
  checkpointMsPerStep: number;
  noStepsMs: number;
  hundredStepsMs: number;
  /**
   * The cluster's commit latency right after the checkpoints: one connection's one-row insert with its own commit (a
   * WAL flush), STEPS_IN_LONG_FLOW in a row, ms each (median of OVERHEAD_RUNS series). The floor a checkpoint stands on.
   */
  commitFloorMs: number;
  watchP50: number;
  watchMax: number;
  watchTimeouts: number;
}

interface Round {
  order: Phase[];
  throughput: Partial<Record<ConfigName, ThroughputFigures>>;
  pgbenchTps?: number;
  idleWorker?: IdleWorkerFigures;
}

const sum = (rows: readonly StatementRow[]) => rows.reduce((a, r) => a + r.calls, 0);
const isNotify = (query: string) => /pg_notify\s*\(|^\s*notify\s/i.test(query);
const oneLine = (query: string, max = 110) => {
  const flat = query.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};
const topOf = (rows: readonly StatementRow[], runs: number, count = 8) =>
  rows.slice(0, count).map((r) => ({ query: oneLine(r.query, 300), perRun: r.calls / runs }));

// ---------------------------------------------------------------------------------------------
// The cluster and its databases

type Cluster = Awaited<ReturnType<typeof startCluster>>;
let cluster: Cluster;
let monitor: Monitor;
const DB = {
  mercato: 'bench_mercato',
  plain: 'bench_plain',
  plainBatched: 'bench_plain_batched',
  graphile: 'bench_graphile',
  graphileBatched: 'bench_graphile_batched',
  pgboss: 'bench_pgboss',
  pgbench: 'bench_pgbench',
  dbos: 'bench_dbos',
  absurd: 'bench_absurd',
};
const urlOf = (database: string, user = 'postgres') => `postgres://${user}@127.0.0.1:${cluster.port}/${database}`;

/** The environment without OTEL_* variables: tracing is off unless a configuration turns it on. */
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('OTEL_')));

function workerEnv(database: string, runs = RUNS): NodeJS.ProcessEnv {
  return {
    ...baseEnv,
    DATABASE_URL: urlOf(database),
    PLATFORM_API_KEY: 'bench-key',
    PLATFORM_API_SECRET: 'bench-secret',
    LOG_LEVEL: 'warn',
    BENCH_CONCURRENCY: String(CONCURRENCY),
    BENCH_RUNS: String(runs),
    BENCH_MERCATO_WORKER: MERCATO_WORKER,
    ABSURD_SQL,
  };
}

/** A node process running a peer script (TypeScript through tsx's loader). */
const peerArgs = (script: string, mode: string) => ['--import', 'tsx', join(PEERS, script), mode];

function startMercatoWorker(extraEnv: NodeJS.ProcessEnv = {}, bin = BIN, node = process.execPath): Promise<ChildProcess> {
  return spawnReady(node, [...WORKER_NODE_ARGS, bin, 'worker', '--config', APP, `--concurrency=${CONCURRENCY}`], {
    cwd: ROOT,
    env: { ...workerEnv(DB.mercato), ...extraEnv },
    ready: /mercato worker .*concurrency/,
    label: 'mercato worker',
  });
}

async function openRuntime(applicationName: string): Promise<{ db: Database; runtime: Runtime }> {
  const db = await openDatabase({ url: urlOf(DB.mercato), poolSize: DISPATCHERS + 2, applicationName });
  try {
    const runtime = await createRuntime({
      instance,
      projectDir: join(ROOT, 'bench/flows-app'),
      mode: 'test',
      db,
      logger: silentLogger(),
      env: { NODE_ENV: 'test', DATABASE_URL: urlOf(DB.mercato), PLATFORM_API_KEY: 'bench-key', PLATFORM_API_SECRET: 'bench-secret' },
    });
    return { db, runtime };
  } catch (error) {
    await db.close();
    throw error;
  }
}

const dispatcher =
  (runtime: Runtime) =>
  (flowName: string, input: Record<string, unknown> = {}) =>
    runtime.dispatch({ ...TENANT, flowName, input, trigger: 'api' }).then((r) => r.runId);

async function truncateMercato(t: Target) {
  const tables = await t.query<{ tablename: string }>(
    `select tablename from pg_tables where schemaname = 'public' and tablename <> 'mercato_migrations'`,
  );
  if (tables.length > 0) await t.query(`truncate ${tables.map((r) => `"${r.tablename}"`).join(', ')} cascade`);
}

// ---------------------------------------------------------------------------------------------
// The throughput configurations

interface Subject {
  name: ConfigName;
  /** Runs (jobs) of one measurement. */
  runs: number;
  database: string;
  processes: number;
  /** Empties the tables and queues RUNS runs held back (outside every measurement window but the dispatch one). */
  prepare(t: Target): Promise<DispatchFigures | undefined>;
  spawn(): Promise<ChildProcess>;
  /** Makes every queued run due at once and wakes the workers (one transaction of the monitor). */
  release(t: Target): Promise<void>;
  progress(t: Target): Promise<{ done: number; failed: number }>;
  /** Seconds between the first start and the last finish, from the database's timestamps. */
  dbSeconds?(t: Target): Promise<number>;
  /** How long the runs may take once released (300 s unless set): absurd's claim slows with the backlog. */
  timeoutSeconds?: number;
}

async function prepareMercato(t: Target, RUNS: number): Promise<DispatchFigures> {
  const { db, runtime } = await openRuntime('bench-dispatch'); // applies the migrations on first use
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await runtime.close();
    await db.close();
  };
  try {
    await truncateMercato(t);
    // the dispatch window: statements and commits of RUNS dispatches by DISPATCHERS concurrent callers
    await t.flush();
    const x0 = await monitor.xactCommit(DB.mercato);
    const tx0 = t.transactions;
    await monitor.resetStatements();
    const dispatch = dispatcher(runtime);
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: DISPATCHERS }, async () => {
        while (next < RUNS) await dispatch('oneStep', { n: next++ });
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const statements = await monitor.statements(DB.mercato);
    await close(); // its backends exit, which flushes their statistics
    await monitor.waitForNoBackends(DB.mercato);
    await t.flush();
    const commits = (await monitor.xactCommit(DB.mercato)) - x0 - (t.transactions - tx0);
    // held back until the worker processes are up
    await t.query(`update runs set available_at = now() + interval '1 hour'`);
    return {
      perSecond: RUNS / seconds,
      statementsPerRun: sum(statements) / RUNS,
      commitsPerRun: commits / RUNS,
      notifyStatementsPerRun: sum(statements.filter((s) => isNotify(s.query))) / RUNS,
      top: topOf(statements, RUNS),
    };
  } finally {
    await close();
  }
}

const mercatoSubject = (
  name: ConfigName,
  processes: number,
  extraEnv?: () => NodeJS.ProcessEnv,
  bin?: string,
  node?: string,
  runs = RUNS,
): Subject => ({
  name,
  runs,
  database: DB.mercato,
  processes,
  prepare: (t) => prepareMercato(t, runs),
  spawn: () => startMercatoWorker(extraEnv?.(), bin, node),
  release: (t) => t.query(`update runs set available_at = now(); select pg_notify('${RUNS_CHANNEL}', '')`).then(() => {}),
  progress: async (t) => {
    const [row] = await t.query<{ done: number; failed: number }>(
      `select count(*) filter (where status = 'completed')::int as done,
              count(*) filter (where status in ('failed', 'canceled'))::int as failed from runs`,
    );
    return row;
  },
  dbSeconds: async (t) => {
    const [row] = await t.query<{ s: number }>(`select extract(epoch from max(finished_at) - min(started_at))::float8 as s from runs`);
    return row.s;
  },
});

const peerPrepare =
  (script: string, database: string, runs = RUNS) =>
  async () => {
    await runToEnd(process.execPath, peerArgs(script, 'prepare'), {
      cwd: ROOT,
      env: workerEnv(database, runs),
      label: `${script} prepare`,
    });
    return undefined;
  };
const peerSpawn =
  (script: string, mode: string, database: string, runs = RUNS) =>
  () =>
    spawnReady(process.execPath, peerArgs(script, mode), {
      cwd: ROOT,
      env: workerEnv(database, runs),
      ready: /^ready$/m,
      label: `${script} ${mode}`,
    });

const plainSubject = (name: ConfigName, database: string, mode: string): Subject => ({
  name,
  runs: RUNS,
  database,
  processes: 1,
  prepare: peerPrepare('plain-pg.ts', database),
  spawn: peerSpawn('plain-pg.ts', mode, database),
  release: (t) => t.query(`update plain_jobs set available_at = now(); select pg_notify('${PLAIN_CHANNEL}', '')`).then(() => {}),
  progress: async (t) => {
    const [row] = await t.query<{ done: number; failed: number }>(
      `select count(*) filter (where status = 'completed')::int as done, 0 as failed from plain_jobs`,
    );
    return row;
  },
  dbSeconds: async (t) => {
    const [row] = await t.query<{ s: number }>(
      `select extract(epoch from max(finished_at) - min(started_at))::float8 as s from plain_jobs`,
    );
    return row.s;
  },
});

const graphileSubject = (name: ConfigName, database: string, mode: string): Subject => ({
  name,
  runs: RUNS,
  database,
  processes: 1,
  prepare: peerPrepare('graphile.ts', database),
  spawn: peerSpawn('graphile.ts', mode, database),
  // `count` in the payload: how many idle workers of the pool a notification wakes
  release: (t) =>
    t.query(`update graphile_worker._private_jobs set run_at = now(); select pg_notify('jobs:insert', '{"count":${RUNS}}')`).then(() => {}),
  progress: async (t) => {
    // completed jobs are deleted; a failed one stays with its error, to be retried
    const [row] = await t.query<{ left: number; failed: number }>(
      `select count(*)::int as left, count(*) filter (where last_error is not null)::int as failed from graphile_worker._private_jobs`,
    );
    return { done: RUNS - row.left, failed: row.failed };
  },
});

const pgBossSubject: Subject = {
  name: 'pg-boss',
  runs: PGBOSS_RUNS,
  database: DB.pgboss,
  processes: 1,
  prepare: peerPrepare('pg-boss.ts', DB.pgboss, PGBOSS_RUNS),
  spawn: peerSpawn('pg-boss.ts', 'work', DB.pgboss, PGBOSS_RUNS),
  release: (t) => t.query(`update pgboss.job set start_after = now() where name = '${PGBOSS.queue}'`).then(() => {}),
  progress: async (t) => {
    const [row] = await t.query<{ done: number; failed: number }>(
      `select count(*) filter (where state = 'completed')::int as done, count(*) filter (where state = 'failed')::int as failed
         from pgboss.job where name = $1`,
      [PGBOSS.queue],
    );
    return row;
  },
  dbSeconds: async (t) => {
    const [row] = await t.query<{ s: number }>(
      `select extract(epoch from max(completed_on) - min(started_on))::float8 as s from pgboss.job where name = $1`,
      [PGBOSS.queue],
    );
    return row.s;
  },
};

/**
 * DBOS Transact (bench/peers/dbos.ts): workflows enqueued DELAYED (delaySeconds), released by setting them ENQUEUED,
 * as DBOS's own once-a-second transition of delayed workflows does. Its workflow_status keeps every workflow.
 */
const dbosSubject = (name: ConfigName, runs: number): Subject => ({
  name,
  runs,
  database: DB.dbos,
  processes: 1,
  timeoutSeconds: 900,
  prepare: peerPrepare('dbos.ts', DB.dbos, runs),
  spawn: peerSpawn('dbos.ts', 'work', DB.dbos, runs),
  release: (t) =>
    t
      .query(
        `update dbos.workflow_status set status = 'ENQUEUED', updated_at = (extract(epoch from now()) * 1000)::bigint
          where status = 'DELAYED'`,
      )
      .then(() => {}),
  progress: async (t) => {
    const [row] = await t.query<{ done: number; failed: number }>(
      `select count(*) filter (where status = 'SUCCESS')::int as done,
              count(*) filter (where status in ('ERROR', 'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED'))::int as failed
         from dbos.workflow_status`,
    );
    return row;
  },
  dbSeconds: async (t) => {
    const [row] = await t.query<{ s: number }>(
      `select ((max(updated_at) - min(started_at_epoch_ms)) / 1000.0)::float8 as s from dbos.workflow_status where status = 'SUCCESS'`,
    );
    return row.s;
  },
});

/**
 * absurd (bench/peers/absurd.ts): tasks spawned, their runs held back an hour (available_at), released by moving them
 * back to their spawn time. Its claim sorts the whole due backlog (and scans every task for its cancellation rules), so
 * 20,000 runs take it minutes: a longer timeout.
 */
const absurdSubject = (name: ConfigName, runs: number): Subject => ({
  name,
  runs,
  database: DB.absurd,
  processes: 1,
  timeoutSeconds: 1500,
  prepare: peerPrepare('absurd.ts', DB.absurd, runs),
  spawn: peerSpawn('absurd.ts', 'work', DB.absurd, runs),
  release: (t) =>
    t.query(`update absurd.r_${ABSURD.queue} set available_at = available_at - interval '1 hour' where state = 'pending'`).then(() => {}),
  progress: async (t) => {
    const [row] = await t.query<{ done: number; failed: number }>(
      `select count(*) filter (where state = 'completed')::int as done,
              count(*) filter (where state in ('failed', 'cancelled'))::int as failed from absurd.t_${ABSURD.queue}`,
    );
    return row;
  },
  dbSeconds: async (t) => {
    const [row] = await t.query<{ s: number }>(
      `select extract(epoch from max(completed_at) - min(started_at))::float8 as s from absurd.r_${ABSURD.queue}`,
    );
    return row.s;
  },
});

const SUBJECTS: Record<ConfigName, Subject> = {
  'mercato-1': mercatoSubject('mercato-1', 1),
  'mercato-2': mercatoSubject('mercato-2', 2),
  'plain-pg': plainSubject('plain-pg', DB.plain, 'work'),
  'plain-pg-batched': plainSubject('plain-pg-batched', DB.plainBatched, 'work-batched'),
  graphile: graphileSubject('graphile', DB.graphile, 'work'),
  'graphile-batched': graphileSubject('graphile-batched', DB.graphileBatched, 'work-batched'),
  'pg-boss': pgBossSubject,
  'mercato-otel': mercatoSubject('mercato-otel', 1, () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: otlpSink.url })),
  'mercato-baseline': mercatoSubject('mercato-baseline', 1, undefined, BASELINE_BIN, BASELINE_NODE || undefined),
  'mercato-1-small': mercatoSubject('mercato-1-small', 1, undefined, undefined, undefined, SMALL_RUNS),
  dbos: dbosSubject('dbos', RUNS),
  'dbos-small': dbosSubject('dbos-small', SMALL_RUNS),
  absurd: absurdSubject('absurd', RUNS),
  'absurd-small': absurdSubject('absurd-small', SMALL_RUNS),
};

/**
 * A local OTLP/HTTP sink for `mercato-otel`: answers every POST with 200 after reading the body, and counts the
 * requests and bytes (it does not decode them: its CPU is the benchmark's, not the worker's).
 */
const otlpSink = { url: '', requests: 0, bytes: 0, close: async () => {} };
async function startOtlpSink() {
  const server = createServer((req, res) => {
    otlpSink.requests++;
    req.on('data', (chunk: Buffer) => (otlpSink.bytes += chunk.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  otlpSink.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  otlpSink.close = () =>
    new Promise<void>((done) => {
      server.closeAllConnections();
      server.close(() => done());
    });
}

/** Calls of the database's functions that send NOTIFY (trigger functions; counted with track_functions = 'pl'). */
async function notifyFunctionCalls(t: Target): Promise<number> {
  const [row] = await t.query<{ calls: number }>(
    `select coalesce(sum(f.calls), 0)::float8 as calls
       from pg_stat_user_functions f join pg_proc p on p.oid = f.funcid
      where p.prosrc ilike '%pg_notify%' or p.prosrc ~* '\\mnotify\\s'`,
  );
  return row.calls;
}

/** Cumulative rows inserted, updated, deleted per table of the database (as flushed so far). */
async function tableWrites(t: Target): Promise<TableWrites> {
  const rows = await t.query<{ name: string; ins: number; upd: number; del: number }>(
    `select schemaname || '.' || relname as name, n_tup_ins::float8 as ins, n_tup_upd::float8 as upd, n_tup_del::float8 as del
       from pg_stat_user_tables`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, { ins: r.ins, upd: r.upd, del: r.del }]));
}

function writesPerRun(before: TableWrites, after: TableWrites, runs: number): TableWrites {
  const out: TableWrites = {};
  const per = (a: number, b: number) => Math.round(((b - a) / runs) * 1000) / 1000;
  for (const [name, w] of Object.entries(after)) {
    const b = before[name] ?? { ins: 0, upd: 0, del: 0 };
    const d = { ins: per(b.ins, w.ins), upd: per(b.upd, w.upd), del: per(b.del, w.del) };
    if (d.ins !== 0 || d.upd !== 0 || d.del !== 0) out[name] = d;
  }
  return out;
}

async function measureThroughput(subject: Subject, tag: string): Promise<ThroughputFigures> {
  const db = subject.database;
  const RUNS = subject.runs;
  const t = await monitor.target(db);
  progress(`${tag}: queueing ${RUNS} runs, held back`);
  await t.flush();
  const w0 = await tableWrites(t);
  const dispatch = await subject.prepare(t);

  // commits are counted from before the worker processes start to after they exited (a backend flushes its statistics
  // at exit; an idle one may hold them back up to 10 s): everything the monitor committed there in between is subtracted
  await t.flush();
  const w1 = await tableWrites(t);
  const x0 = await monitor.xactCommit(db);
  const tx0 = t.transactions;
  const f0 = await notifyFunctionCalls(t);
  await monitor.resetStatements();
  progress(`${tag}: starting ${subject.processes} worker process(es), concurrency ${CONCURRENCY}`);
  const processes = await Promise.all(Array.from({ length: subject.processes }, () => subject.spawn()));
  const pids = processes.map((p) => p.pid!);
  try {
    const startup = sum(await monitor.statements(db));
    await monitor.resetStatements();
    const postmaster = postmasterPid(join(cluster.dir, 'data'));
    const worker0 = treeCpuMs(pids);
    const pg0 = postgresCpu(postmaster, db, MONITOR_USER);
    // the clock starts when the release has committed: the benchmark's own bulk update that makes every run due (slower
    // on a table with more indexes) is not the workers' work
    await subject.release(t);
    const released = performance.now();
    progress(`${tag}: released`);
    let finished = 0;
    let lastPrint = released;
    for (;;) {
      const polled = performance.now();
      const { done, failed } = await subject.progress(t);
      if (failed > 0) throw new Error(`${tag}: ${failed} run(s) failed`);
      if (done >= RUNS) {
        finished = polled;
        break;
      }
      const timeout = subject.timeoutSeconds ?? 300;
      if (polled - released > timeout * 1000) throw new Error(`${tag}: only ${done}/${RUNS} runs finished after ${timeout} s`);
      if (polled - lastPrint >= 2000) {
        progress(`${tag}: ${done}/${RUNS} finished`);
        lastPrint = polled;
      }
      // poll often only near the end: the end time is known to the poll interval, the polls cost the database little
      const rate = done / Math.max(0.001, (polled - released) / 1000);
      const eta = rate > 0 ? ((RUNS - done) / rate) * 1000 : 50;
      await sleep(Math.min(100, Math.max(5, eta / 4)));
    }
    const workerMs = treeCpuMs(pids) - worker0;
    const pgCpu = backendDeltaMs(pg0, postgresCpu(postmaster, db, MONITOR_USER));
    const statements = await monitor.statements(db);
    const seconds = subject.dbSeconds ? await subject.dbSeconds(t) : undefined;

    await stop(processes);
    await monitor.waitForNoBackends(db);
    const afterStop = sum(await monitor.statements(db));
    const f1 = await notifyFunctionCalls(t);
    await t.flush();
    const commits = (await monitor.xactCommit(db)) - x0 - (t.transactions - tx0);
    const w2 = await tableWrites(t);

    const figures: ThroughputFigures = {
      runs: RUNS,
      rateDb: seconds ? RUNS / seconds : undefined,
      rateWall: RUNS / ((finished - released) / 1000),
      statementsPerRun: sum(statements) / RUNS,
      commitsPerRun: commits / RUNS,
      workerCpuMsPerRun: workerMs / RUNS,
      pgCpuMsPerRun: pgCpu.backendsMs / RUNS,
      notifyStatementsPerRun: sum(statements.filter((s) => isNotify(s.query))) / RUNS,
      notifyTriggerCallsPerRun: (f1 - f0) / RUNS,
      pgOtherCpuMsPerRun: pgCpu.otherMs / RUNS,
      backendsGone: pgCpu.gone,
      statementsOutsideWindow: startup + (afterStop - sum(statements)),
      top: topOf(statements, RUNS),
      dispatch,
      writesPerRun: { enqueue: writesPerRun(w0, w1, RUNS), execute: writesPerRun(w1, w2, RUNS) },
    };
    if (figures.backendsGone > 0)
      progress(`${tag}: warning: ${figures.backendsGone} backend(s) exited during the window (their CPU is lost)`);
    progress(
      `${tag}: ${fmt(figures.rateDb, 0)} runs/s (database), ${fmt(figures.rateWall, 0)} runs/s (wall); ` +
        `${fmt(figures.statementsPerRun)} statements, ${fmt(figures.commitsPerRun)} commits, ` +
        `CPU ${fmt(figures.workerCpuMsPerRun, 3)} ms worker + ${fmt(figures.pgCpuMsPerRun, 3)} ms PostgreSQL per run`,
    );
    return figures;
  } finally {
    await stop(processes);
  }
}

// ---------------------------------------------------------------------------------------------
// pgbench

async function pgbench(tag: string): Promise<number> {
  progress(`${tag}: pgbench TPC-B-like -c 2 -j 2 -T ${PGBENCH_SECONDS}`);
  const out = await runToEnd(join(PG_BIN, 'pgbench'), ['-c', '2', '-j', '2', '-T', String(PGBENCH_SECONDS), urlOf(DB.pgbench)], {
    cwd: ROOT,
    env: process.env,
    label: 'pgbench',
  });
  const match = /tps = ([\d.]+)/.exec(out);
  if (!match) throw new Error(`could not read pgbench's tps line:\n${out}`);
  progress(`${tag}: pgbench ${Number(match[1]).toFixed(0)} tps`);
  return Number(match[1]);
}

// ---------------------------------------------------------------------------------------------
// One idle Mercato worker: dispatch → start latency, checkpoint cost, watch latency

async function waitForRun(t: Target, runId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  await sleep(3);
  for (;;) {
    const [row] = await t.query<{ status: string }>(`select status from runs where id = $1`, [runId]);
    if (row?.status === 'completed') return;
    if (row && ['failed', 'canceled'].includes(row.status)) throw new Error(`run ${runId} ended ${row.status}`);
    if (Date.now() > deadline) throw new Error(`run ${runId} not finished after 30 s (${row?.status})`);
    await sleep(3);
  }
}

async function idleWorker(tag: string): Promise<IdleWorkerFigures> {
  const t = await monitor.target(DB.mercato);
  await truncateMercato(t);
  const { db, runtime } = await openRuntime('bench-idle-worker');
  const worker = await startMercatoWorker();
  try {
    const dispatch = dispatcher(runtime);
    await sleep(1500); // idle: its empty polls have backed off, a start is a LISTEN/NOTIFY wake-up

    progress(`${tag}: dispatch → start latency, ${LATENCY_SAMPLES} samples`);
    const latencies: number[] = [];
    const warmup = 5;
    for (let i = 0; i < LATENCY_SAMPLES + warmup; i++) {
      await sleep(20 + Math.random() * 40);
      const runId = await dispatch('oneStep', { n: i });
      await waitForRun(t, runId);
      const [row] = await t.query<{ ms: number }>(
        `select extract(epoch from (started_at - created_at))::float8 * 1000 as ms from runs where id = $1`,
        [runId],
      );
      if (i >= warmup) latencies.push(row.ms);
    }
    latencies.sort((a, b) => a - b);

    progress(`${tag}: checkpoints, ${OVERHEAD_RUNS} runs of noSteps and of hundredSteps`);
    const duration = async (flowName: string) => {
      const values: number[] = [];
      for (let i = 0; i < OVERHEAD_RUNS; i++) {
        const runId = await dispatch(flowName);
        await waitForRun(t, runId);
        const [row] = await t.query<{ ms: number }>(
          `select extract(epoch from (finished_at - started_at))::float8 * 1000 as ms from runs where id = $1`,
          [runId],
        );
        values.push(row.ms);
      }
      return percentile(
        values.sort((a, b) => a - b),
        50,
      );
    };
    const noSteps = await duration('noSteps');
    const hundredSteps = await duration('hundredSteps');

    progress(`${tag}: commit floor, ${OVERHEAD_RUNS} × ${STEPS_IN_LONG_FLOW} one-row inserts, each its own commit`);
    await t.query('create table if not exists bench_commit_floor (id bigserial primary key, n int not null)');
    const floors: number[] = [];
    for (let r = 0; r < OVERHEAD_RUNS; r++) {
      const t0 = performance.now();
      for (let i = 0; i < STEPS_IN_LONG_FLOW; i++) await t.query('insert into bench_commit_floor (n) values ($1)', [i]);
      floors.push((performance.now() - t0) / STEPS_IN_LONG_FLOW);
    }
    const commitFloorMs = percentile(
      floors.sort((a, b) => a - b),
      50,
    );

    progress(`${tag}: watch latency, ${WATCH_SAMPLES} samples`);
    const watcher = createRunWatch({ db });
    const watches: number[] = [];
    let timeouts = 0;
    for (let i = 0; i < WATCH_SAMPLES + 1; i++) {
      await sleep(20 + Math.random() * 40);
      // dispatched held back (in the dispatch transaction), so that the worker leaves it alone until the release
      const { runId } = await runtime.dispatch({
        ...TENANT,
        flowName: 'oneStep',
        input: { n: i },
        trigger: 'api',
        within: async (exec, id) => {
          await exec(sql`update runs set available_at = now() + interval '1 hour' where id = ${id}::uuid`);
        },
      });
      const abort = new AbortController();
      const first = await watcher.watch(TENANT, runId, undefined, 0, abort.signal);
      const answer = watcher.watch(TENANT, runId, first.version, 10_000, abort.signal);
      await sleep(50); // the second watch is waiting
      const released = performance.now();
      await t.query(`update runs set available_at = now() where id = '${runId}'; select pg_notify('${RUNS_CHANNEL}', '')`);
      const result = await answer;
      const ms = performance.now() - released;
      abort.abort();
      if (i === 0) {
        await waitForRun(t, runId);
        continue; // warm-up (the watch hub's LISTEN starts with the first watch)
      }
      if (result.changed) watches.push(ms);
      else timeouts++;
      await waitForRun(t, runId);
    }
    watches.sort((a, b) => a - b);
    const figures: IdleWorkerFigures = {
      latencyP50: percentile(latencies, 50),
      latencyP99: percentile(latencies, 99),
      latencyMax: latencies[latencies.length - 1],
      checkpointMsPerStep: (hundredSteps - noSteps) / STEPS_IN_LONG_FLOW,
      noStepsMs: noSteps,
      hundredStepsMs: hundredSteps,
      commitFloorMs,
      watchP50: percentile(watches, 50),
      watchMax: watches[watches.length - 1],
      watchTimeouts: timeouts,
    };
    progress(
      `${tag}: latency p50 ${fmt(figures.latencyP50)} ms, p99 ${fmt(figures.latencyP99)} ms; ` +
        `checkpoint ${fmt(figures.checkpointMsPerStep, 3)} ms/step (commit floor ${fmt(figures.commitFloorMs, 3)} ms); watch p50 ${fmt(figures.watchP50, 0)} ms, max ${fmt(figures.watchMax, 0)} ms`,
    );
    return figures;
  } finally {
    await stop([worker]);
    await runtime.close();
    await db.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Summary

const FIGURES: Array<{ key: keyof ThroughputFigures; name: string; title: string; decimals: number; target?: number }> = [
  { key: 'rateDb', name: 'runs/s (database)', title: 'runs/s from the database timestamps: N / (last finish − first start)', decimals: 0 },
  {
    key: 'rateWall',
    name: 'runs/s (wall)',
    title: 'runs/s by wall clock: N / (release committed → poll that saw all finished)',
    decimals: 0,
  },
  {
    key: 'statementsPerRun',
    name: 'statements/run',
    title: 'statements per run (pg_stat_statements, top-level, release → done)',
    decimals: 2,
    target: 3.5,
  },
  {
    key: 'commitsPerRun',
    name: 'commits/run',
    title: 'commits per run (pg_stat_database.xact_commit, read-only ones included)',
    decimals: 2,
    target: 2.5,
  },
  {
    key: 'workerCpuMsPerRun',
    name: 'worker CPU ms/run',
    title: 'worker CPU ms per run (/proc utime+stime of the worker processes)',
    decimals: 3,
    target: 0.2,
  },
  {
    key: 'pgCpuMsPerRun',
    name: 'PostgreSQL CPU ms/run',
    title: 'PostgreSQL CPU ms per run (/proc, the backends of the database)',
    decimals: 3,
    target: 0.4,
  },
  {
    key: 'notifyStatementsPerRun',
    name: 'NOTIFY statements/run',
    title: 'NOTIFY statements per run (pg_notify / NOTIFY sent by the client)',
    decimals: 2,
  },
  {
    key: 'notifyTriggerCallsPerRun',
    name: 'NOTIFY function calls/run',
    title: 'calls of NOTIFY-sending functions per run (triggers; pg_stat_user_functions)',
    decimals: 2,
  },
];

const isMercato = (c: ConfigName) => c.startsWith('mercato');
const verdict = (ok: boolean) => (ok ? 'met' : 'NOT MET');

interface RatioDef {
  name: string;
  num: [ConfigName, 'rateDb' | 'rateWall'];
  den: [ConfigName, 'rateDb' | 'rateWall'];
  target?: number;
}
const mercatoBatchedLabel = MERCATO_WORKER ? `Mercato 1 process (worker ${MERCATO_WORKER})` : 'Mercato 1 process (default settings)';
const RATIOS: RatioDef[] = [
  { name: 'Mercato 1 process / plain-pg (database timestamps)', num: ['mercato-1', 'rateDb'], den: ['plain-pg', 'rateDb'], target: 1.0 },
  { name: 'Mercato 1 process / graphile-worker defaults (wall clock)', num: ['mercato-1', 'rateWall'], den: ['graphile', 'rateWall'] },
  {
    // a reference only: its 0.8 target is retired (graphile-worker's batched jobs store no step result); the target
    // is against peers doing the same durable work (SAME_WORK)
    name: `${mercatoBatchedLabel} / graphile-worker batched (wall clock)`,
    num: ['mercato-1', 'rateWall'],
    den: ['graphile-batched', 'rateWall'],
  },
  {
    name: `${mercatoBatchedLabel} / plain-pg batched (wall clock)`,
    num: ['mercato-1', 'rateWall'],
    den: ['plain-pg-batched', 'rateWall'],
  },
  {
    name: 'plain-pg batched / graphile-worker batched (wall clock): the durable shape without Mercato',
    num: ['plain-pg-batched', 'rateWall'],
    den: ['graphile-batched', 'rateWall'],
  },
  {
    name: 'Mercato 2 processes / 1 process (database timestamps)',
    num: ['mercato-2', 'rateDb'],
    den: ['mercato-1', 'rateDb'],
    target: 1.0,
  },
  {
    name: 'Mercato 1 process, traces exported / tracing unset (database timestamps)',
    num: ['mercato-otel', 'rateDb'],
    den: ['mercato-1', 'rateDb'],
  },
  {
    name: 'Mercato 1 process / the BENCH_BASELINE_BIN build on BENCH_BASELINE_NODE (database timestamps)',
    num: ['mercato-1', 'rateDb'],
    den: ['mercato-baseline', 'rateDb'],
  },
];

/**
 * The same durable work: Mercato with 1 process against DBOS Transact and absurd, each running one step whose result
 * it checkpoints and then the run's completion, at BENCH_SMALL_RUNS and at BENCH_RUNS runs. Per round: Mercato's
 * runs/s / the faster peer's, by wall clock (release committed → poll that saw all finished: the same definition for
 * every engine) and from each engine's own database timestamps.
 */
const SAME_WORK: Array<{ runs: number; mercato: ConfigName; peers: ConfigName[] }> = [
  { runs: SMALL_RUNS, mercato: 'mercato-1-small', peers: ['dbos-small', 'absurd-small'] },
  { runs: RUNS, mercato: 'mercato-1', peers: ['dbos', 'absurd'] },
];
const SAME_WORK_TARGET = 5;

function sameWork(rounds: Round[]) {
  return SAME_WORK.map((g) => {
    const ratio = (rate: 'rateWall' | 'rateDb') =>
      rounds.map((r) => {
        const m = r.throughput[g.mercato]?.[rate];
        const peers = g.peers.map((p) => r.throughput[p]?.[rate]).filter((v): v is number => v !== undefined);
        return m !== undefined && peers.length > 0 ? m / Math.max(...peers) : undefined;
      });
    const wall = ratio('rateWall');
    const db = ratio('rateDb');
    const wallSpread = spread(wall);
    return {
      runs: g.runs,
      mercato: g.mercato,
      peers: g.peers.filter((p) => rounds.some((r) => r.throughput[p])),
      ratioWall: { perRound: wall, ...wallSpread },
      ratioDb: { perRound: db, ...spread(db) },
      target: SAME_WORK_TARGET,
      met: wallSpread.median >= SAME_WORK_TARGET,
    };
  });
}

function summarize(rounds: Round[]) {
  const figures: Record<string, Partial<Record<ConfigName, Spread>>> = {};
  for (const f of FIGURES) {
    figures[f.key] = {};
    for (const c of CONFIGS) {
      const values = rounds.map((r) => r.throughput[c]?.[f.key] as number | undefined);
      if (values.some((v) => v !== undefined)) figures[f.key][c] = spread(values);
    }
  }
  const dispatchOf = (k: keyof DispatchFigures) =>
    spread(rounds.flatMap((r) => [r.throughput['mercato-1']?.dispatch?.[k], r.throughput['mercato-2']?.dispatch?.[k]]) as number[]);
  const dispatch = {
    perSecond: dispatchOf('perSecond'),
    statementsPerRun: dispatchOf('statementsPerRun'),
    commitsPerRun: dispatchOf('commitsPerRun'),
    notifyStatementsPerRun: dispatchOf('notifyStatementsPerRun'),
  };
  const ratios = RATIOS.map((def) => {
    const perRound = rounds.map((r) => {
      const a = r.throughput[def.num[0]]?.[def.num[1]];
      const b = r.throughput[def.den[0]]?.[def.den[1]];
      return a !== undefined && b !== undefined ? a / b : undefined;
    });
    const s = spread(perRound);
    return { name: def.name, perRound, ...s, target: def.target, met: def.target === undefined ? undefined : s.median >= def.target };
  });
  const idleOf = (k: keyof IdleWorkerFigures) => spread(rounds.map((r) => r.idleWorker?.[k]));
  const idle = {
    latencyP50: idleOf('latencyP50'),
    latencyP99: idleOf('latencyP99'),
    latencyMax: idleOf('latencyMax'),
    checkpointMsPerStep: idleOf('checkpointMsPerStep'),
    commitFloorMs: idleOf('commitFloorMs'),
    watchP50: idleOf('watchP50'),
    watchMax: idleOf('watchMax'),
  };
  const pgbenchTps = spread(rounds.map((r) => r.pgbenchTps));

  const targets: Array<{ figure: string; median: number; target: string; met: boolean }> = [];
  const upTo = (figure: string, value: number, limit: number) =>
    targets.push({ figure, median: value, target: `≤ ${limit}`, met: Number.isFinite(value) && value <= limit });
  for (const c of ['mercato-1', 'mercato-2'] as const) {
    for (const f of FIGURES) {
      const s = figures[f.key][c];
      if (f.target !== undefined && s) upTo(`${LABELS[c]}: ${f.name}`, s.median, f.target);
    }
  }
  for (const r of ratios) {
    if (r.target !== undefined) targets.push({ figure: r.name, median: r.median, target: `≥ ${r.target}`, met: Boolean(r.met) });
  }
  const same = sameWork(rounds);
  for (const g of same) {
    if (!Number.isFinite(g.ratioWall.median)) continue;
    targets.push({
      figure: `Mercato 1 process / max(${g.peers.map((p) => LABELS[p].replace(/ \(BENCH_SMALL_RUNS\)$/, '')).join(', ')}), ${g.runs} runs (wall clock)`,
      median: g.ratioWall.median,
      target: `≥ ${g.target}`,
      met: g.met,
    });
  }
  upTo('step checkpoint ms/step', idle.checkpointMsPerStep.median, 0.5);
  upTo('dispatch → start latency p50 (ms)', idle.latencyP50.median, 2);
  upTo('dispatch → start latency p99 (ms)', idle.latencyP99.median, 4);
  upTo('watch latency p50 (ms)', idle.watchP50.median, 1000);
  upTo('watch latency max (ms)', idle.watchMax.median, 1000);
  return { figures, dispatch, ratios, sameWork: same, idle, pgbenchTps, targets };
}

function printSummary(rounds: Round[], summary: ReturnType<typeof summarize>, pgVersion: string) {
  const out: string[] = [];
  const say = (line = '') => out.push(line);
  say();
  say(
    `Results: ${rounds.length} round(s) of ${RUNS} runs (pg-boss ${PGBOSS_RUNS}; the *-small configurations ${SMALL_RUNS}), concurrency ${CONCURRENCY}; PostgreSQL ${pgVersion} (fsync on, synchronous_commit on), ` +
      `${cpus().length} CPU(s) shared by PostgreSQL, the workers and the benchmark. min / median / max over the rounds.`,
  );
  for (const f of FIGURES) {
    const rows = [
      ['configuration', ...rounds.map((_, r) => `r${r + 1}`), 'min', 'median', 'max', f.target === undefined ? '' : `target ≤ ${f.target}`],
    ];
    for (const c of CONFIGS) {
      const s = summary.figures[f.key][c];
      if (!s) continue;
      const target = f.target !== undefined && isMercato(c) ? verdict(s.median <= f.target) : '';
      const perRound = rounds.map((r) => fmt(r.throughput[c]?.[f.key] as number | undefined, f.decimals));
      rows.push([LABELS[c], ...perRound, fmt(s.min, f.decimals), fmt(s.median, f.decimals), fmt(s.max, f.decimals), target]);
    }
    if (rows.length === 1) continue;
    say();
    say(f.title);
    say(table(rows));
    if (f.key === 'commitsPerRun') {
      const outside = Math.max(...rounds.flatMap((r) => Object.values(r.throughput).map((x) => x.statementsOutsideWindow / x.runs)));
      say(`(counted from worker start to worker exit: their start-up and stop add at most ${fmt(outside, 3)} per run)`);
    }
  }
  const d = summary.dispatch;
  if (Number.isFinite(d.perSecond.median)) {
    say();
    say(
      `Mercato dispatch side (${DISPATCHERS} concurrent callers of the runtime's dispatch, no worker running; both Mercato configurations)`,
    );
    say(
      table([
        ['figure', 'min', 'median', 'max'],
        ['dispatches/s', fmt(d.perSecond.min, 0), fmt(d.perSecond.median, 0), fmt(d.perSecond.max, 0)],
        ['statements per run', fmt(d.statementsPerRun.min), fmt(d.statementsPerRun.median), fmt(d.statementsPerRun.max)],
        ['commits per run', fmt(d.commitsPerRun.min), fmt(d.commitsPerRun.median), fmt(d.commitsPerRun.max)],
        [
          'NOTIFY statements per run',
          fmt(d.notifyStatementsPerRun.min),
          fmt(d.notifyStatementsPerRun.median),
          fmt(d.notifyStatementsPerRun.max),
        ],
      ]),
    );
  }
  say();
  say('Ratios of runs/s, per round');
  say(
    table([
      ['ratio', ...rounds.map((_, i) => `r${i + 1}`), 'min', 'median', 'max', 'target'],
      ...summary.ratios.map((r) => [
        r.name,
        ...r.perRound.map((v) => fmt(v)),
        fmt(r.min),
        fmt(r.median),
        fmt(r.max),
        r.target === undefined ? '' : `≥ ${r.target.toFixed(1)} ${verdict(Boolean(r.met))}`,
      ]),
    ]),
  );
  if (summary.sameWork.some((g) => Number.isFinite(g.ratioWall.median))) {
    say();
    say(`The same durable work (one checkpointed step, then the completion): runs/s by wall clock, per round`);
    const rows = [['configuration', ...rounds.map((_, r) => `r${r + 1}`), 'min', 'median', 'max', 'target']];
    for (const g of summary.sameWork) {
      for (const c of [g.mercato, ...g.peers]) {
        const s = summary.figures.rateWall[c];
        if (!s) continue;
        rows.push([
          `${LABELS[c]}, ${g.runs} runs`,
          ...rounds.map((r) => fmt(r.throughput[c]?.rateWall, 0)),
          fmt(s.min, 0),
          fmt(s.median, 0),
          fmt(s.max, 0),
          '',
        ]);
      }
      for (const [what, r] of [
        ['wall clock', g.ratioWall],
        ['database timestamps', g.ratioDb],
      ] as const) {
        rows.push([
          `  Mercato / max(peers), ${g.runs} runs (${what})`,
          ...r.perRound.map((v) => fmt(v)),
          fmt(r.min),
          fmt(r.median),
          fmt(r.max),
          what === 'wall clock' ? `≥ ${g.target} ${verdict(g.met)}` : '',
        ]);
      }
    }
    say(table(rows));
    say(
      "Rows written per run, last round (inserted/updated/deleted; enqueue + execute windows, the benchmark's hold-back and release included)",
    );
    const last = rounds[rounds.length - 1];
    for (const c of CONFIGS) {
      const w = last.throughput[c]?.writesPerRun;
      if (!w) continue;
      const cell = (x: { ins: number; upd: number; del: number }) => `+${x.ins} ~${x.upd} -${x.del}`;
      const tables = [...new Set([...Object.keys(w.enqueue), ...Object.keys(w.execute)])];
      say(
        `  ${LABELS[c]}: ${tables.map((n) => `${n} [${w.enqueue[n] ? cell(w.enqueue[n]) : '0'} | ${w.execute[n] ? cell(w.execute[n]) : '0'}]`).join(', ')}`,
      );
    }
  }
  const i = summary.idle;
  say();
  say(
    `One idle Mercato worker (${LATENCY_SAMPLES} latency samples, ${OVERHEAD_RUNS} runs per checkpoint flow, ${WATCH_SAMPLES} watches per round)`,
  );
  const idleRow = (name: string, s: Spread, decimals: number, limit?: number) => [
    name,
    fmt(s.min, decimals),
    fmt(s.median, decimals),
    fmt(s.max, decimals),
    limit === undefined ? '' : `≤ ${limit} ${verdict(s.median <= limit)}`,
  ];
  say(
    table([
      ['figure', 'min', 'median', 'max', 'target'],
      idleRow('dispatch → start latency p50 (ms)', i.latencyP50, 2, 2),
      idleRow('dispatch → start latency p99 (ms)', i.latencyP99, 2, 4),
      idleRow('dispatch → start latency max (ms)', i.latencyMax, 2),
      idleRow('step checkpoint (ms/step)', i.checkpointMsPerStep, 3, 0.5),
      idleRow('commit floor: a one-row insert and its commit (ms)', i.commitFloorMs, 3),
      idleRow('watch latency p50 (ms)', i.watchP50, 0, 1000),
      idleRow('watch latency max (ms)', i.watchMax, 0, 1000),
    ]),
  );
  say();
  say(
    `pgbench TPC-B-like (-c 2 -j 2 -T ${PGBENCH_SECONDS}) on the same cluster: ${fmt(summary.pgbenchTps.min, 0)} / ${fmt(summary.pgbenchTps.median, 0)} / ${fmt(summary.pgbenchTps.max, 0)} tps`,
  );
  say();
  say('Top statements per configuration (last round, calls per run)');
  const last = rounds[rounds.length - 1];
  for (const c of CONFIGS) {
    const f = last.throughput[c];
    if (!f) continue;
    say(`  ${LABELS[c]}`);
    for (const s of f.top.slice(0, 6)) say(`    ${s.perRun.toFixed(3).padStart(7)}  ${oneLine(s.query)}`);
  }
  const dispatchTop = last.throughput['mercato-1']?.dispatch?.top ?? last.throughput['mercato-2']?.dispatch?.top;
  if (dispatchTop) {
    say('  Mercato dispatch side');
    for (const s of dispatchTop.slice(0, 6)) say(`    ${s.perRun.toFixed(3).padStart(7)}  ${oneLine(s.query)}`);
  }
  say();
  say('Targets (medians over the rounds)');
  say(table([['figure', 'median', 'target', ''], ...summary.targets.map((t) => [t.figure, fmt(t.median, 3), t.target, verdict(t.met)])]));
  console.log(out.join('\n'));
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  // Ctrl-C: kill the worker processes; cluster.ts then stops and removes the cluster
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAll();
      if (process.listenerCount(signal) === 0) process.exit(130);
    });
  }
  console.log(`Mercato flows benchmark: ${ROUNDS} round(s), ${RUNS} runs per configuration, concurrency ${CONCURRENCY}`);
  progress('building the mercato CLI if its dist/ is older than the sources');
  await runToEnd(process.execPath, [join(ROOT, 'packages/mercato/scripts/build.mjs'), '--js', '--if-stale', '--quiet'], {
    cwd: ROOT,
    env: process.env,
    label: 'mercato build (the engine may be in the middle of an edit: retry in a minute)',
  });

  progress('starting a private PostgreSQL 15 cluster (durable: fsync and synchronous_commit on; pg_stat_statements)');
  cluster = await startCluster({
    settings: {
      ...DURABLE_SETTINGS,
      'pg_stat_statements.max': 10000,
      track_functions: "'pl'",
    },
  });
  const rounds: Round[] = [];
  try {
    monitor = await Monitor.open(urlOf);
    const [{ version }] = await monitor.sql<{ version: string }>(`select current_setting('server_version') as version`);
    for (const name of Object.values(DB)) await monitor.createDatabase(name);
    if (wanted('pgbench')) {
      progress('pgbench: initialising scale 1');
      await runToEnd(join(PG_BIN, 'pgbench'), ['-i', '-s', '1', '-q', urlOf(DB.pgbench)], {
        cwd: ROOT,
        env: process.env,
        label: 'pgbench -i',
      });
    }
    if (wanted('mercato-otel')) await startOtlpSink();
    const phases: Phase[] = [...CONFIGS, 'pgbench', 'idle-worker'].filter((p) => wanted(p as Phase)) as Phase[];
    for (let r = 0; r < ROUNDS; r++) {
      const order = [...phases.slice(r % phases.length), ...phases.slice(0, r % phases.length)];
      console.log(`Round ${r + 1}/${ROUNDS}: ${order.join(', ')}`);
      const round: Round = { order, throughput: {} };
      for (const phase of order) {
        const tag = `round ${r + 1} ${phase}`;
        if (phase === 'pgbench') round.pgbenchTps = await pgbench(tag);
        else if (phase === 'idle-worker') round.idleWorker = await idleWorker(tag);
        else round.throughput[phase] = await measureThroughput(SUBJECTS[phase], tag);
      }
      rounds.push(round);
    }

    const summary = summarize(rounds);
    printSummary(rounds, summary, version);
    if (wanted('mercato-otel')) console.log(`\nOTLP sink: ${otlpSink.requests} export requests, ${otlpSink.bytes} bytes received`);
    const [{ v: fullVersion }] = await monitor.sql<{ v: string }>('select version() as v');
    const { commit, uncommittedChanges } = gitState(['packages/mercato/src', 'packages/mercato/migrations']);
    const result = {
      measuredAt: new Date().toISOString(),
      durationSeconds: Math.round((Date.now() - started) / 1000),
      commit,
      engineUncommittedChanges: uncommittedChanges,
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model,
        node: process.version,
        baselineNode: BASELINE_NODE ? execFileSync(BASELINE_NODE, ['--version'], { encoding: 'utf8' }).trim() : null,
        postgres: fullVersion,
        clockTicksPerSecond: CLK_TCK,
      },
      settings: {
        rounds: ROUNDS,
        runs: RUNS,
        pgBossRuns: PGBOSS_RUNS,
        smallRuns: SMALL_RUNS,
        dbosQueue: { ...DBOS_QUEUE, workerConcurrency: CONCURRENCY },
        absurd: { ...ABSURD, concurrency: CONCURRENCY, sql: ABSURD_SQL || null },
        concurrency: CONCURRENCY,
        latencySamples: LATENCY_SAMPLES,
        overheadRuns: OVERHEAD_RUNS,
        watchSamples: WATCH_SAMPLES,
        pgbenchSeconds: PGBENCH_SECONDS,
        dispatchers: DISPATCHERS,
        mercatoWorker: MERCATO_WORKER || null,
        baselineBin: BASELINE_BIN || null,
        baselineNode: BASELINE_NODE || null,
        graphileBatched: GRAPHILE_BATCHED,
        pgBoss: PGBOSS,
        only: [...ONLY],
        otlpSink: wanted('mercato-otel') ? { requests: otlpSink.requests, bytes: otlpSink.bytes } : null,
        cluster:
          'initdb defaults (fsync, synchronous_commit, full_page_writes on) + pg_stat_statements (track = top), track_functions = pl',
      },
      rounds,
      summary,
    };
    mkdirSync(dirname(OUT), { recursive: true });
    writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\nWritten: ${OUT} (${Math.round((Date.now() - started) / 1000)} s in all)`);
  } finally {
    killAll();
    await otlpSink.close();
    await monitor?.close();
    await cluster.destroy();
  }
}

await main();
