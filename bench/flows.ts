/**
 * `npm run bench:flows` — the run engine on PostgreSQL, measured with real `mercato worker` processes:
 *   (i)   1-step runs completed per second with 1 and with 2 worker processes,
 *   (ii)  dispatch → start latency p50/p99 with an idle worker,
 *   (iii) step checkpoint overhead (a flow of 100 no-op steps against a flow without steps),
 *   (iv)  pgbench TPS of the same server, side by side.
 * Every duration of (i)–(iii) is taken from the database clock (created_at, started_at, finished_at), never from two clocks.
 * DATABASE_URL names the server (default postgres://postgres@127.0.0.1:5432/test); the benchmark creates a random database
 * there and drops it at the end. See docs/benchmarks.md.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { type Database, openDatabase } from '../packages/mercato/src/db/engine.ts';
import { RUNS_CHANNEL } from '../packages/mercato/src/flows/store/index.ts';
import { silentLogger } from '../packages/mercato/src/logger.ts';
import { type Runtime, createRuntime } from '../packages/mercato/src/runtime.ts';
import instance, { STEPS_IN_LONG_FLOW } from './flows-app/service.config.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const BIN = join(ROOT, 'packages/mercato/bin/mercato.js');
const APP = join(ROOT, 'bench/flows-app/service.config.ts');

const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);
const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const RUNS = num('BENCH_RUNS', 3000);
const CONCURRENCY = num('BENCH_CONCURRENCY', 10);
const LATENCY_SAMPLES = num('BENCH_LATENCY_SAMPLES', 200);
const OVERHEAD_RUNS = num('BENCH_OVERHEAD_RUNS', 20);
const PGBENCH_SECONDS = num('BENCH_PGBENCH_SECONDS', 10);
const TARGET_P50_MS = 5;

const progress = (line: string) => process.stdout.write(`  … ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const withDatabase = (url: string, name: string) => Object.assign(new URL(url), { pathname: `/${name}` }).toString();
const redact = (url: string) => Object.assign(new URL(url), { password: '' }).toString();

async function adminExec(statement: string) {
  const admin = await openDatabase({ url: SERVER_URL, poolSize: 1 });
  try {
    await admin.exec(statement);
  } finally {
    await admin.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Worker processes

const children = new Set<ChildProcess>();

async function startWorkers(url: string, count: number): Promise<ChildProcess[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const child = spawn(process.execPath, [BIN, 'worker', '--config', APP, `--concurrency=${CONCURRENCY}`], {
        cwd: ROOT,
        env: {
          ...process.env,
          DATABASE_URL: url,
          PLATFORM_API_KEY: 'bench-key',
          PLATFORM_API_SECRET: 'bench-secret',
          LOG_LEVEL: 'warn',
          BENCH_CONCURRENCY: String(CONCURRENCY),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child);
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (out += d));
      child.once('exit', () => children.delete(child));
      await new Promise<void>((ready, fail) => {
        const check = () => /mercato worker .*concurrency/.test(out) && ready();
        child.stdout!.on('data', check);
        child.once('exit', (code) => fail(new Error(`worker exited (${code}) before it was ready:\n${out}`)));
      });
      return child;
    }),
  );
}

async function stopWorkers() {
  await Promise.all(
    [...children].map(
      (child) =>
        new Promise<void>((done) => {
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
          child.once('exit', () => {
            clearTimeout(timer);
            done();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Helpers on the bench database

async function resetTables(db: Database) {
  const tables = await db.query<{ tablename: string }>(
    sql`select tablename from pg_tables where schemaname = 'public' and tablename <> 'mercato_migrations'`,
  );
  if (tables.length > 0) await db.exec(`truncate ${tables.map((t) => `"${t.tablename}"`).join(', ')} cascade`);
}

function dispatcher(runtime: Runtime) {
  return (flowName: string, input: Record<string, unknown> = {}) =>
    runtime.dispatch({ appHandle: 'default', shop: 'bench.myshopify.com', flowName, input, trigger: 'api' }).then((r) => r.runId);
}

async function countFinished(db: Database) {
  const [row] = await db.query<{ done: number; failed: number }>(
    sql`select count(*) filter (where status = 'completed')::int as done, count(*) filter (where status in ('failed','canceled'))::int as failed from runs`,
  );
  return row;
}

async function waitForRun(db: Database, runId: string) {
  for (;;) {
    const [row] = await db.query<{ status: string }>(sql`select status from runs where id = ${runId}::uuid`);
    if (row?.status === 'completed') return;
    if (row && ['failed', 'canceled'].includes(row.status)) throw new Error(`run ${runId} ended ${row.status}`);
    await sleep(2);
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

// ---------------------------------------------------------------------------------------------
// (i) throughput

async function throughput(db: Database, runtime: Runtime, url: string, workers: number) {
  await resetTables(db);
  const dispatch = dispatcher(runtime);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < RUNS) await dispatch('oneStep', { n: next++ });
    }),
  );
  // hold the queue back until every worker process is up, so that all of them start together
  await db.query(sql`update runs set available_at = now() + interval '1 hour'`);
  progress(`${workers} worker(s): ${RUNS} runs queued; starting ${workers} worker process(es) with concurrency ${CONCURRENCY}`);
  await startWorkers(url, workers);
  await db.query(sql`update runs set available_at = now()`);
  await db.notify(RUNS_CHANNEL, '');
  let lastPrint = Date.now();
  for (;;) {
    const { done, failed } = await countFinished(db);
    if (failed > 0) throw new Error(`${failed} runs failed during the throughput phase`);
    if (done === RUNS) break;
    if (Date.now() - lastPrint >= 1000) {
      progress(`${workers} worker(s): ${done}/${RUNS} completed`);
      lastPrint = Date.now();
    }
    await sleep(50);
  }
  const [span] = await db.query<{ seconds: number }>(
    sql`select extract(epoch from (max(finished_at) - min(started_at)))::float8 as seconds from runs`,
  );
  await stopWorkers();
  const perSecond = RUNS / span.seconds;
  progress(`${workers} worker(s): ${RUNS} runs in ${span.seconds.toFixed(2)} s → ${perSecond.toFixed(0)} runs/s`);
  return perSecond;
}

// ---------------------------------------------------------------------------------------------
// (ii) latency and (iii) checkpoint overhead, on one idle worker

async function latency(db: Database, runtime: Runtime) {
  await resetTables(db);
  const dispatch = dispatcher(runtime);
  const samples: number[] = [];
  const warmup = 5;
  for (let i = 0; i < LATENCY_SAMPLES + warmup; i++) {
    await sleep(20 + Math.random() * 40); // the worker finishes its post-run poll and goes idle
    const runId = await dispatch('oneStep', { n: i });
    await waitForRun(db, runId);
    const [row] = await db.query<{ ms: number }>(
      sql`select extract(epoch from (started_at - created_at))::float8 * 1000 as ms from runs where id = ${runId}::uuid`,
    );
    if (i >= warmup) samples.push(row.ms);
    if ((i + 1 - warmup) % 50 === 0 && i >= warmup) progress(`latency: ${i + 1 - warmup}/${LATENCY_SAMPLES} samples`);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p99: percentile(samples, 99), max: samples[samples.length - 1] };
}

async function checkpointOverhead(db: Database, runtime: Runtime) {
  const dispatch = dispatcher(runtime);
  const durations = async (flowName: string) => {
    const values: number[] = [];
    for (let i = 0; i < OVERHEAD_RUNS; i++) {
      const runId = await dispatch(flowName);
      await waitForRun(db, runId);
      const [row] = await db.query<{ ms: number }>(
        sql`select extract(epoch from (finished_at - started_at))::float8 * 1000 as ms from runs where id = ${runId}::uuid`,
      );
      values.push(row.ms);
    }
    progress(`checkpoints: ${OVERHEAD_RUNS} runs of ${flowName}, median ${median(values).toFixed(2)} ms`);
    return median(values);
  };
  const none = await durations('noSteps');
  const hundred = await durations('hundredSteps');
  return { none, hundred, perStep: (hundred - none) / STEPS_IN_LONG_FLOW };
}

// ---------------------------------------------------------------------------------------------
// (iv) pgbench

async function pgbench(): Promise<{ tpcb: number; select: number }> {
  const name = `mercato_pgbench_${randomBytes(4).toString('hex')}`;
  const url = withDatabase(SERVER_URL, name);
  await adminExec(`create database ${name}`);
  try {
    progress('pgbench: initialising scale 1');
    await run('pgbench', ['-i', '-s', '1', '-q', url]);
    const tps = async (extra: string[], label: string) => {
      progress(`pgbench: ${label} for ${PGBENCH_SECONDS} s`);
      const { stdout } = await run('pgbench', ['-c', '2', '-j', '2', '-T', String(PGBENCH_SECONDS), ...extra, url]);
      const match = /tps = ([\d.]+)/.exec(stdout);
      if (!match) throw new Error(`could not read pgbench's tps line:\n${stdout}`);
      return Number(match[1]);
    };
    return { tpcb: await tps([], 'TPC-B-like'), select: await tps(['-S'], 'select-only') };
  } finally {
    await adminExec(`drop database if exists ${name} with (force)`);
  }
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const name = `mercato_bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const url = withDatabase(SERVER_URL, name);
  console.log(`Mercato flows benchmark on ${redact(SERVER_URL)} (database ${name}); ${cpus().length} CPU(s), Node ${process.version}`);
  await adminExec(`create database ${name}`);
  const db = await openDatabase({ url, poolSize: 10, applicationName: 'mercato-bench' });
  let runtime: Runtime | undefined;
  const cleanup = async () => {
    await stopWorkers();
    await runtime?.close();
    await db.close();
    await adminExec(`drop database if exists ${name} with (force)`);
  };
  process.once('SIGINT', () => {
    for (const child of children) child.kill('SIGKILL');
    void cleanup().finally(() => process.exit(130));
  });
  try {
    runtime = await createRuntime({
      instance,
      projectDir: join(ROOT, 'bench/flows-app'),
      mode: 'test',
      db,
      logger: silentLogger(),
      env: { NODE_ENV: 'test', DATABASE_URL: url, PLATFORM_API_KEY: 'bench-key', PLATFORM_API_SECRET: 'bench-secret' },
    });
    const [version] = await db.query<{ v: string }>(sql`select current_setting('server_version') as v`);

    console.log(`(i) throughput: ${RUNS} one-step runs`);
    const one = await throughput(db, runtime, url, 1);
    const two = await throughput(db, runtime, url, 2);

    console.log(`(ii) dispatch → start latency, idle worker, ${LATENCY_SAMPLES} samples`);
    await resetTables(db);
    await startWorkers(url, 1);
    await sleep(1500); // idle: the worker's empty polls have backed off
    const lat = await latency(db, runtime);
    console.log(`(iii) checkpoint overhead: ${OVERHEAD_RUNS} runs of a ${STEPS_IN_LONG_FLOW}-step flow vs. a flow without steps`);
    const ckpt = await checkpointOverhead(db, runtime);
    await stopWorkers();

    console.log(`(iv) pgbench on the same server (-c 2 -j 2 -T ${PGBENCH_SECONDS})`);
    const pg = await pgbench();

    const rows: Array<[string, string, string]> = [
      [
        `1-step runs/s, 1 worker process (concurrency ${CONCURRENCY})`,
        `${one.toFixed(0)} runs/s`,
        `${((one / pg.tpcb) * 100).toFixed(0)} % of pgbench TPC-B tps`,
      ],
      [
        `1-step runs/s, 2 worker processes (concurrency ${CONCURRENCY} each)`,
        `${two.toFixed(0)} runs/s`,
        `${((two / pg.tpcb) * 100).toFixed(0)} % of pgbench TPC-B tps`,
      ],
      [
        'dispatch → start latency p50 (idle worker)',
        `${lat.p50.toFixed(2)} ms`,
        `target ≤ ${TARGET_P50_MS} ms: ${lat.p50 <= TARGET_P50_MS ? 'met' : 'NOT MET'}`,
      ],
      ['dispatch → start latency p99 (idle worker)', `${lat.p99.toFixed(2)} ms`, `max ${lat.max.toFixed(2)} ms`],
      [
        'step checkpoint overhead',
        `${ckpt.perStep.toFixed(3)} ms/step`,
        `run of 100 steps ${ckpt.hundred.toFixed(1)} ms vs. no steps ${ckpt.none.toFixed(1)} ms`,
      ],
      ['pgbench TPC-B-like (-c 2 -j 2)', `${pg.tpcb.toFixed(0)} tps`, 'same server, same machine'],
      ['pgbench select-only (-S -c 2 -j 2)', `${pg.select.toFixed(0)} tps`, 'same server, same machine'],
    ];
    const w0 = Math.max(...rows.map((r) => r[0].length));
    const w1 = Math.max(...rows.map((r) => r[1].length));
    console.log(`\nResults (PostgreSQL ${version.v}, ${cpus().length} CPU(s) shared by PostgreSQL, the workers and the benchmark)`);
    console.log(`${'figure'.padEnd(w0)}  ${'value'.padStart(w1)}  target / comparison`);
    console.log(`${'-'.repeat(w0)}  ${'-'.repeat(w1)}  ${'-'.repeat(40)}`);
    for (const [a, b, c] of rows) console.log(`${a.padEnd(w0)}  ${b.padStart(w1)}  ${c}`);
  } finally {
    await cleanup();
  }
}

await main();
