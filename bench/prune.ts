/**
 * `npm run bench:prune` — the cost of a retention pass over many finished runs, next to a peer measured in the same run.
 *
 * On a private, durable PostgreSQL 15 cluster (fsync and synchronous_commit on), in BENCH_ROUNDS interleaved rounds (the
 * order of the two subjects alternates), each on freshly generated data:
 *   - BENCH_RUNS finished runs 31 to ~80 days old (with one step and one log line each, generated server-side with
 *     generate_series), plus 1,000 old active runs (pending, running, sleeping) and BENCH_RUNS/100 recent finished runs
 *     that must all stay; VACUUM ANALYZE and CHECKPOINT before the clock starts;
 *   - subject `mercato`: one pass of the retention pruner (prunePass, batches of BENCH_BATCH, default 1000);
 *   - subject `single-delete`: the peer, one unbatched `DELETE FROM runs WHERE <finished> AND finished_at < cutoff`.
 * For each: total seconds, runs/s, batches, the longest single statement (how long its row locks were held), WAL bytes,
 * the latency of dispatches made meanwhile by a concurrent dispatcher (p50/p99, against a baseline measured just before
 * on the same data), table and index sizes before, after, and after a plain VACUUM (with its time).
 * Prints min / median / max over the rounds and the ratios; writes bench/results/prune.json. Method: docs/benchmarks.md.
 *
 *   npm run bench:prune                     # 100,000 runs, 3 rounds
 *   npm run bench:prune -- --runs 1000000   # the documented full size (BENCH_RUNS=1000000 works too)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import { DEFAULT_RETENTION } from '../packages/mercato/src/app/defaults.ts';
import { type Database, openDatabase } from '../packages/mercato/src/db/engine.ts';
import { migrate } from '../packages/mercato/src/db/migrate.ts';
import { silentLogger } from '../packages/mercato/src/logger.ts';
import { prunePass } from '../packages/mercato/src/retention/index.ts';
import { type Runtime, createRuntime } from '../packages/mercato/src/runtime.ts';
import { type Cluster, startCluster } from '../packages/mercato/test/kit/cluster.ts';
import instance from './flows-app/service.config.ts';
import { gitState } from './lib/git.ts';
import { type Spread, fmt, percentile, spread, table } from './lib/stats.ts';

const ROOT = resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({ options: { runs: { type: 'string' }, rounds: { type: 'string' }, batch: { type: 'string' } } });
const num = (flag: string | undefined, name: string, fallback: number) => {
  const raw = flag ?? process.env[name];
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new Error(`${name} / --${name.slice(6).toLowerCase()} must be a positive integer (got "${raw}")`);
  return Number(raw);
};
const RUNS = num(args.runs, 'BENCH_RUNS', 100_000);
const ROUNDS = num(args.rounds, 'BENCH_ROUNDS', 3);
const BATCH = num(args.batch, 'BENCH_BATCH', DEFAULT_RETENTION.batchSize);
const ACTIVE = 1000;
const RECENT = Math.max(1, Math.floor(RUNS / 100));
/** The dispatcher's baseline window, before each subject. */
const BASELINE_MS = 3000;
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/prune.json');
const TENANT = { appHandle: 'default', shop: 'bench.myshopify.com' };
const SUBJECTS = ['mercato', 'single-delete'] as const;
type Subject = (typeof SUBJECTS)[number];

const progress = (line: string) => process.stdout.write(`  … ${line}\n`);
const q = async <T>(db: Database, text: string) => db.query<T>(sql.raw(text));

interface Figures {
  seconds: number;
  runsPerSecond: number;
  deleted: number;
  batches: number;
  /** The longest single statement (its row locks were held that long). */
  longestStatementMs: number;
  walBytes: number;
  dispatch: { baselineP50: number; baselineP99: number; duringP50: number; duringP99: number; during: number };
  sizes: {
    before: number;
    after: number;
    afterVacuum: number;
    indexesBefore: number;
    indexesAfter: number;
    indexesAfterVacuum: number;
    heapBefore: Record<string, number>;
    heapAfterVacuum: Record<string, number>;
  };
  vacuumSeconds: number;
  /** Autovacuum runs on runs/steps/logs between the start of the subject and the manual VACUUM. */
  autovacuumsDuring: number;
}

async function seed(db: Database): Promise<void> {
  const t = Date.now();
  await q(db, 'truncate runs, steps, logs cascade');
  await q(
    db,
    `insert into runs (id, app_handle, shop, flow_name, status, trigger, input, output, retry_policy, attempt, created_at, started_at, finished_at, updated_at)
     select gen_random_uuid(), 'default', 'shop-' || (i % 200) || '.myshopify.com', 'sync',
            case when i % 20 = 0 then 'failed' when i % 50 = 1 then 'canceled' else 'completed' end,
            'cron', jsonb_build_object('n', i), jsonb_build_object('synced', i % 37),
            '{"maxAttempts":3,"initialIntervalMs":1000,"backoffCoefficient":2,"maxIntervalMs":60000}'::jsonb, 1,
            f - interval '2 seconds', f - interval '1 second', f, f
     from generate_series(1, ${RUNS}) as i, lateral (select now() - interval '31 days' - i * interval '4 seconds' as f) as x`,
  );
  await q(
    db,
    `insert into runs (id, app_handle, shop, flow_name, status, trigger, input, retry_policy, attempt, created_at, finished_at)
     select gen_random_uuid(), 'default', 'shop-' || (i % 200) || '.myshopify.com', 'sync',
            (array['pending','running','sleeping'])[1 + i % 3], 'api', '{}'::jsonb, '{}'::jsonb, 1, now() - interval '60 days', null
     from generate_series(1, ${ACTIVE}) as i`,
  );
  await q(
    db,
    `insert into runs (id, app_handle, shop, flow_name, status, trigger, input, retry_policy, attempt, created_at, finished_at)
     select gen_random_uuid(), 'default', 'shop-' || (i % 200) || '.myshopify.com', 'sync', 'completed', 'api', '{}'::jsonb, '{}'::jsonb, 1,
            now() - interval '1 day', now() - interval '1 day' + i * interval '1 ms'
     from generate_series(1, ${RECENT}) as i`,
  );
  await q(
    db,
    `insert into steps (run_id, name, app_handle, shop, status, attempt, result, started_at, finished_at)
     select id, 'fetch', app_handle, shop, 'completed', 1, '{"orders":12}'::jsonb, created_at, finished_at from runs`,
  );
  await q(
    db,
    `insert into logs (run_id, app_handle, shop, level, message, data, step, attempt, created_at)
     select id, app_handle, shop, 'info', 'fetched 12 orders', '{"count":12}'::jsonb, 'fetch', 1, coalesce(finished_at, created_at) from runs`,
  );
  await db.exec('vacuum analyze runs, steps, logs');
  await db.exec('checkpoint');
  progress(
    `seeded ${RUNS.toLocaleString('en-US')} old finished runs (+ ${ACTIVE} active, ${RECENT} recent) in ${((Date.now() - t) / 1000).toFixed(1)} s`,
  );
}

async function sizes(db: Database): Promise<{ total: number; indexes: number; heap: Record<string, number> }> {
  const rows = await q<{ name: string; total: string; indexes: string; heap: string }>(
    db,
    `select c::text as name, pg_total_relation_size(c)::text as total, pg_indexes_size(c)::text as indexes,
            pg_relation_size(c)::text as heap
     from unnest(array['runs','steps','logs']::regclass[]) as c`,
  );
  return {
    total: rows.reduce((sum, r) => sum + Number(r.total), 0),
    indexes: rows.reduce((sum, r) => sum + Number(r.indexes), 0),
    heap: Object.fromEntries(rows.map((r) => [r.name, Number(r.heap)])),
  };
}

/** Autovacuum runs on the three tables so far (it may start during a batched pass, whose batches commit one by one). */
const autovacuums = async (db: Database) =>
  Number(
    (
      await q<{ n: string }>(
        db,
        `select sum(autovacuum_count)::text as n from pg_stat_user_tables where relname in ('runs','steps','logs')`,
      )
    )[0]!.n,
  );

const lsn = async (db: Database) => (await q<{ lsn: string }>(db, 'select pg_current_wal_lsn()::text as lsn'))[0]!.lsn;
const walBetween = async (db: Database, a: string, b: string) =>
  Number((await q<{ d: string }>(db, `select pg_wal_lsn_diff('${b}', '${a}')::bigint::text as d`))[0]!.d);

/** A dispatcher making one run at a time through the real dispatch function until stopped; each call's latency in ms. */
function dispatcher(runtime: Runtime): { stop(): Promise<number[]> } {
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      await runtime.dispatch({ ...TENANT, flowName: 'noSteps', input: {}, trigger: 'api' });
      latencies.push(performance.now() - t);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return latencies.sort((a, b) => a - b);
    },
  };
}

async function measure(subject: Subject, db: Database, runtime: Runtime, tag: string): Promise<Figures> {
  await seed(db);
  const before = await sizes(db);
  const av0 = await autovacuums(db);
  const base = dispatcher(runtime);
  await new Promise((r) => setTimeout(r, BASELINE_MS));
  const baseline = await base.stop();

  const [{ now }] = await q<{ now: string }>(db, `select (now() - interval '30 days')::text as now`);
  const cutoff = now;
  const during = dispatcher(runtime);
  const w0 = await lsn(db);
  const t0 = performance.now();
  let deleted = 0;
  let batches = 0;
  let longest = 0;
  let shown = 0;
  if (subject === 'mercato') {
    const report = await prunePass(
      { db, retention: { ...DEFAULT_RETENTION, batchSize: BATCH } },
      {
        tables: ['runs'],
        onBatch: (_table, rows) => {
          if (rows - shown < RUNS / 10 && rows !== RUNS) return;
          shown = rows;
          progress(`${tag}: ${rows.toLocaleString('en-US')} deleted`);
        },
      },
    );
    deleted = report.tables[0]!.rows;
    batches = report.tables[0]!.batches;
    longest = report.tables[0]!.longestBatchMs;
  } else {
    const s = performance.now();
    const [row] = await q<{ n: number }>(
      db,
      `with gone as (delete from runs where status in ('completed','failed','canceled') and finished_at < '${cutoff}'::timestamptz returning 1)
       select count(*)::int as n from gone`,
    );
    deleted = Number(row!.n);
    batches = 1;
    longest = performance.now() - s;
  }
  const seconds = (performance.now() - t0) / 1000;
  const w1 = await lsn(db);
  const duringLatencies = await during.stop();
  const walBytes = await walBetween(db, w0, w1);

  // what must stay stayed; what must go went
  const [check] = await q<{ old: number; active: number; recent: number; orphanSteps: number; orphanLogs: number }>(
    db,
    `select (select count(*)::int from runs where status in ('completed','failed','canceled') and finished_at < '${cutoff}'::timestamptz) as old,
            (select count(*)::int from runs where status in ('pending','running','sleeping') and created_at < now() - interval '1 hour') as active,
            (select count(*)::int from runs where status = 'completed' and finished_at >= '${cutoff}'::timestamptz) as recent,
            (select count(*)::int from steps s where not exists (select 1 from runs r where r.id = s.run_id)) as "orphanSteps",
            (select count(*)::int from logs l where not exists (select 1 from runs r where r.id = l.run_id)) as "orphanLogs"`,
  );
  if (
    deleted !== RUNS ||
    check!.old !== 0 ||
    check!.active !== ACTIVE ||
    check!.recent !== RECENT ||
    check!.orphanSteps ||
    check!.orphanLogs
  ) {
    throw new Error(`${tag}: wrong outcome: deleted ${deleted} of ${RUNS}; left ${JSON.stringify(check)}`);
  }
  const after = await sizes(db);
  const autovacuumsDuring = (await autovacuums(db)) - av0;
  const v0 = performance.now();
  await db.exec('vacuum runs, steps, logs');
  const vacuumSeconds = (performance.now() - v0) / 1000;
  const afterVacuum = await sizes(db);
  const figures: Figures = {
    seconds,
    runsPerSecond: deleted / seconds,
    deleted,
    batches,
    longestStatementMs: longest,
    walBytes,
    dispatch: {
      baselineP50: percentile(baseline, 50),
      baselineP99: percentile(baseline, 99),
      duringP50: percentile(duringLatencies, 50),
      duringP99: percentile(duringLatencies, 99),
      during: duringLatencies.length,
    },
    sizes: {
      before: before.total,
      after: after.total,
      afterVacuum: afterVacuum.total,
      indexesBefore: before.indexes,
      indexesAfter: after.indexes,
      indexesAfterVacuum: afterVacuum.indexes,
      heapBefore: before.heap,
      heapAfterVacuum: afterVacuum.heap,
    },
    vacuumSeconds,
    autovacuumsDuring,
  };
  progress(
    `${tag}: ${seconds.toFixed(1)} s, ${Math.round(figures.runsPerSecond).toLocaleString('en-US')} runs/s, ${batches} statement(s), ` +
      `longest ${longest.toFixed(0)} ms, WAL ${(walBytes / 2 ** 20).toFixed(0)} MiB, dispatch p99 ${figures.dispatch.baselineP99.toFixed(1)} → ` +
      `${figures.dispatch.duringP99.toFixed(1)} ms; autovacuums ${autovacuumsDuring}; VACUUM ${vacuumSeconds.toFixed(1)} s, ` +
      `heap MiB after it ${Object.entries(afterVacuum.heap)
        .map(([t, b]) => `${t} ${(b / 2 ** 20).toFixed(0)}`)
        .join(', ')}`,
  );
  return figures;
}

async function main() {
  const started = Date.now();
  console.log(`bench:prune — ${RUNS.toLocaleString('en-US')} finished runs, ${ROUNDS} round(s), batches of ${BATCH}`);
  progress('starting a private PostgreSQL 15 cluster (durable: fsync and synchronous_commit on)');
  let cluster: Cluster | undefined;
  let db: Database | undefined;
  let runtime: Runtime | undefined;
  try {
    cluster = await startCluster({ settings: { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on', max_wal_size: "'4GB'" } });
    const url = await cluster.createDatabase('prune');
    db = await openDatabase({ url, poolSize: 4, applicationName: 'bench-prune' });
    await migrate(db);
    runtime = await createRuntime({
      instance,
      projectDir: join(ROOT, 'bench/flows-app'),
      mode: 'test',
      db,
      logger: silentLogger(),
      env: { NODE_ENV: 'test', DATABASE_URL: url, PLATFORM_API_KEY: 'bench-key', PLATFORM_API_SECRET: 'bench-secret' },
    });
    const rounds: Array<Record<Subject, Figures>> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? SUBJECTS : ([...SUBJECTS].reverse() as unknown as typeof SUBJECTS);
      console.log(`Round ${r + 1}/${ROUNDS}: ${order.join(', ')}`);
      const round = {} as Record<Subject, Figures>;
      for (const subject of order) round[subject] = await measure(subject, db, runtime, `round ${r + 1} ${subject}`);
      rounds.push(round);
    }
    const [{ v: postgres }] = await q<{ v: string }>(db, 'select version() as v');
    const summary = summarize(rounds);
    print(summary, rounds);
    const result = {
      measuredAt: new Date().toISOString(),
      durationSeconds: Math.round((Date.now() - started) / 1000),
      ...gitState(['packages/mercato/src', 'packages/mercato/migrations', 'bench/prune.ts']),
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version, postgres },
      settings: { runs: RUNS, rounds: ROUNDS, batchSize: BATCH, activeRuns: ACTIVE, recentRuns: RECENT, baselineMs: BASELINE_MS },
      summary,
      rounds,
    };
    mkdirSync(dirname(OUT), { recursive: true });
    writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\nWrote ${OUT}`);
  } finally {
    await runtime?.close().catch(() => {});
    await db?.close().catch(() => {});
    await cluster?.destroy();
  }
}

type Key =
  | 'seconds'
  | 'runsPerSecond'
  | 'batches'
  | 'longestStatementMs'
  | 'walMiB'
  | 'p50'
  | 'p99'
  | 'baseP99'
  | 'sizeMiB'
  | 'afterVacuumMiB'
  | 'vacuumSeconds';
const FIGURES: Array<{ key: Key; name: string; of: (f: Figures) => number; decimals: number }> = [
  { key: 'seconds', name: 'total s', of: (f) => f.seconds, decimals: 1 },
  { key: 'runsPerSecond', name: 'runs/s', of: (f) => f.runsPerSecond, decimals: 0 },
  { key: 'batches', name: 'statements', of: (f) => f.batches, decimals: 0 },
  { key: 'longestStatementMs', name: 'longest statement ms', of: (f) => f.longestStatementMs, decimals: 0 },
  { key: 'walMiB', name: 'WAL MiB', of: (f) => f.walBytes / 2 ** 20, decimals: 0 },
  { key: 'baseP99', name: 'dispatch p99 ms, before', of: (f) => f.dispatch.baselineP99, decimals: 1 },
  { key: 'p50', name: 'dispatch p50 ms, during', of: (f) => f.dispatch.duringP50, decimals: 1 },
  { key: 'p99', name: 'dispatch p99 ms, during', of: (f) => f.dispatch.duringP99, decimals: 1 },
  { key: 'sizeMiB', name: 'runs+steps+logs MiB after', of: (f) => f.sizes.after / 2 ** 20, decimals: 0 },
  { key: 'afterVacuumMiB', name: 'MiB after VACUUM', of: (f) => f.sizes.afterVacuum / 2 ** 20, decimals: 0 },
  { key: 'vacuumSeconds', name: 'VACUUM s', of: (f) => f.vacuumSeconds, decimals: 1 },
];

function summarize(rounds: Array<Record<Subject, Figures>>) {
  const out: Record<string, Record<Subject, Spread> & { ratio: Spread }> = {};
  for (const f of FIGURES) {
    const per = Object.fromEntries(SUBJECTS.map((s) => [s, spread(rounds.map((r) => f.of(r[s])))])) as Record<Subject, Spread>;
    // single-delete ÷ mercato, per round
    const ratio = spread(rounds.map((r) => f.of(r['single-delete']) / f.of(r.mercato)));
    out[f.key] = { ...per, ratio };
  }
  out.sizeBeforeMiB = {
    ...(Object.fromEntries(SUBJECTS.map((s) => [s, spread(rounds.map((r) => r[s].sizes.before / 2 ** 20))])) as Record<Subject, Spread>),
    ratio: spread([1]),
  };
  return out;
}

function print(summary: ReturnType<typeof summarize>, rounds: Array<Record<Subject, Figures>>) {
  const cell = (s: Spread, d: number) => `${fmt(s.min, d)} / ${fmt(s.median, d)} / ${fmt(s.max, d)}`;
  console.log(
    `\nResults: ${rounds.length} round(s) of ${RUNS.toLocaleString('en-US')} finished runs (+ a step and a log line each); min / median / max`,
  );
  console.log(
    table([
      ['figure', 'Mercato pruner (batches)', 'single DELETE (peer)', 'peer ÷ Mercato'],
      ...FIGURES.map((f) => [
        f.name,
        cell(summary[f.key].mercato, f.decimals),
        cell(summary[f.key]['single-delete'], f.decimals),
        cell(summary[f.key].ratio, 2),
      ]),
      ['runs+steps+logs MiB before', cell(summary.sizeBeforeMiB.mercato, 0), cell(summary.sizeBeforeMiB['single-delete'], 0), ''],
    ]),
  );
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
