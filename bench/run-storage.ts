/**
 * `npm run bench:run-storage` — what the `runs` table's shape costs PostgreSQL per one-step run, statement for statement.
 *
 * On a private, durable PostgreSQL 15 cluster (fsync and synchronous_commit on), one database per variant of the schema
 * (Mercato's migrations, then the variant's changes). In BENCH_ROUNDS interleaved rounds (the order rotates), for each
 * variant: BENCH_RUNS due runs of one tenant and one flow are inserted server-side, VACUUM ANALYZE, then one connection
 * drives them through the worker's own statements, the production functions `claimRuns` (claims of BENCH_BATCH) and
 * `completeRuns` (each claimed run completed with its one step's checkpoint, one statement per claim), until none is
 * left. The figure is the CPU of that connection's backend (/proc) ÷ runs, and the wall time ÷ runs: no worker, no
 * event loop, no other client, so it is the database's share of a run alone.
 *
 * Then the other side of the trade, the admin's run lists: BENCH_LIST_RUNS runs of one shop (~95 % completed, ~2 % failed,
 * ~1 % canceled, 0.8 % running and 0.8 % pending; 10 flows, one of them rare at 0.1 %) and the production `listRunRows` (a page of 50 and the
 * total) timed BENCH_LIST_REPEATS times per filter, median and max ms, per variant. Writes bench/results/run-storage.json.
 *
 *   npm run bench:run-storage                          # 20,000 runs, batches of 100, 3 rounds
 *   BENCH_RUNS=100000 BENCH_ROUNDS=5 npm run bench:run-storage
 *
 * The variants are experiments on the schema, not options of Mercato: see docs/benchmarks.md "Run storage".
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { sql } from 'drizzle-orm';
import { type Database, openDatabase } from '../packages/mercato/src/db/engine.ts';
import { migrate } from '../packages/mercato/src/db/migrate.ts';
import { type Completion, completeRuns } from '../packages/mercato/src/flows/store/leases.ts';
import { START_CURSOR, claimFair } from '../packages/mercato/src/flows/store/claim.ts';
import { type RunFilter, listRunRows } from '../packages/mercato/src/flows/store/runs.ts';
import { type Cluster, startCluster } from '../packages/mercato/test/kit/cluster.ts';
import { gitState } from './lib/git.ts';
import { processCpuMs } from './lib/proc.ts';
import { type Spread, fmt, spread, table } from './lib/stats.ts';

const ROOT = resolve(import.meta.dirname, '..');
const num = (name: string, fallback: number) => {
  const raw = process.env[name];
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer (got "${raw}")`);
  return Number(raw);
};
const RUNS = num('BENCH_RUNS', 20_000);
const ROUNDS = num('BENCH_ROUNDS', 3);
const BATCH = num('BENCH_BATCH', 100);
const LIST_RUNS = num('BENCH_LIST_RUNS', 200_000);
const LIST_REPEATS = num('BENCH_LIST_REPEATS', 15);
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/run-storage.json');
const TENANT = { appHandle: 'default', shop: 'bench.myshopify.com' };
/** The lists of the admin's runs page: a page of 50 (newest first) and the total, per filter. */
const LISTS: Array<{ name: string; filter: RunFilter }> = [
  { name: 'all runs', filter: {} },
  { name: 'status failed (~2 %)', filter: { status: 'failed' } },
  { name: 'status completed (~95 %)', filter: { status: 'completed' } },
  { name: 'status running (0.8 %)', filter: { status: 'running' } },
  { name: 'status pending (0.8 %)', filter: { status: 'pending' } },
  { name: 'flow common (~11 %)', filter: { flowName: 'flow-1' } },
  { name: 'flow rare (0.1 %)', filter: { flowName: 'rare' } },
];

const DROP_LIST_INDEXES = 'drop index runs_tenant_status_created_idx; drop index runs_tenant_flow_created_idx;';
const DROP_FK = 'alter table steps drop constraint steps_run_id_runs_id_fk;';
const VARIANTS = {
  shipped: { label: 'as shipped (8 indexes on runs, the 3 list indexes without running runs; steps → runs foreign key)', sql: '' },
  'no-list-indexes': {
    label: 'without runs_tenant_status_created_idx and runs_tenant_flow_created_idx',
    sql: DROP_LIST_INDEXES,
  },
  'before-0014': {
    label: 'the list indexes on every status, the active-runs index without status (before migration 0014)',
    sql: [
      'drop index runs_tenant_created_idx; drop index runs_tenant_flow_created_idx; drop index runs_tenant_status_created_idx;',
      'create index runs_tenant_created_idx on runs (app_handle, shop, created_at desc, id desc);',
      'create index runs_tenant_flow_created_idx on runs (app_handle, shop, flow_name, created_at desc, id desc);',
      'create index runs_tenant_status_created_idx on runs (app_handle, shop, status, created_at desc, id desc);',
      'drop index runs_active_flow_idx;',
      "create index runs_active_flow_idx on runs (app_handle, shop, flow_name) where status in ('pending','running','sleeping');",
    ].join(' '),
  },
  'no-fk': { label: 'without the steps → runs foreign key', sql: DROP_FK },
  'no-both': { label: 'without both', sql: `${DROP_LIST_INDEXES} ${DROP_FK}` },
} as const;
type Variant = keyof typeof VARIANTS;
const NAMES = Object.keys(VARIANTS) as Variant[];

interface Figures {
  runs: number;
  pgCpuMsPerRun: number;
  wallMsPerRun: number;
  claimCpuMsPerRun: number;
}

const progress = (line: string) => process.stdout.write(`  … ${line}\n`);
const q = <T>(db: Database, text: string) => db.query<T>(sql.raw(text));

async function measure(db: Database, tag: string): Promise<Figures> {
  await q(db, 'truncate runs cascade');
  await q(
    db,
    `insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, available_at)
     select '${TENANT.appHandle}', '${TENANT.shop}', 'oneStep', 'api', jsonb_build_object('n', i),
       '{"maxAttempts":3,"backoff":"exponential","initialDelayMs":1000,"maxDelayMs":60000}'::jsonb,
       now() - interval '1 minute' + i * interval '1 microsecond'
     from generate_series(1, ${RUNS}) i`,
  );
  await q(db, 'vacuum analyze runs');
  await q(db, 'vacuum analyze steps');
  const [{ pid }] = await q<{ pid: number }>(db, 'select pg_backend_pid() as pid');
  const cpu0 = processCpuMs(pid);
  const t0 = performance.now();
  let done = 0;
  let claimCpu = 0;
  for (let n = 0; ; n++) {
    const token = `bench-${n}`;
    const c0 = processCpuMs(pid);
    const { runs: claimed } = await claimFair(db.query, token, BATCH, 60_000, START_CURSOR);
    claimCpu += processCpuMs(pid) - c0;
    if (claimed.length === 0) break;
    const startedAt = new Date();
    const completions: Completion[] = claimed.map((run) => {
      const result = JSON.stringify((run.input as { n: number }).n);
      return {
        runId: run.id,
        leaseToken: token,
        outputJson: result,
        lastStep: {
          write: {
            runId: run.id,
            leaseToken: token,
            appHandle: run.appHandle,
            shop: run.shop,
            name: 'only',
            attempt: run.attempt,
            startedAt,
          },
          resultJson: result,
        },
      };
    });
    done += (await completeRuns(db.query, completions)).size;
  }
  const wall = performance.now() - t0;
  const cpu = processCpuMs(pid) - cpu0;
  if (done !== RUNS) throw new Error(`${tag}: ${done} of ${RUNS} runs completed`);
  const figures = { runs: done, pgCpuMsPerRun: cpu / done, wallMsPerRun: wall / done, claimCpuMsPerRun: claimCpu / done };
  progress(
    `${tag}: PostgreSQL CPU ${fmt(figures.pgCpuMsPerRun, 4)} ms/run (claims ${fmt(figures.claimCpuMsPerRun, 4)}), wall ${fmt(figures.wallMsPerRun, 4)} ms/run`,
  );
  return figures;
}

/** Milliseconds of each admin list on BENCH_LIST_RUNS finished runs of one shop: median and max of the repeats. */
async function measureLists(db: Database, tag: string): Promise<Record<string, { medianMs: number; maxMs: number }>> {
  await q(db, 'truncate runs cascade');
  await q(
    db,
    `insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, attempt, output, created_at,
       started_at, finished_at, updated_at)
     select '${TENANT.appHandle}', '${TENANT.shop}',
       case when i % 1000 = 0 then 'rare' else 'flow-' || (i % 9) end, 'api', jsonb_build_object('n', i), '{}'::jsonb,
       case when i % 100 < 97 then 'completed' when i % 100 < 99 then 'failed' else 'canceled' end, 1, 'null'::jsonb,
       t, t, t + interval '1 second', t + interval '1 second'
     from generate_series(1, ${LIST_RUNS}) i, lateral (select now() - (${LIST_RUNS} - i) * interval '1 second' as t) ts`,
  );
  // a backlog and the runs in flight, spread over the history: 1/128 of the runs each (ids are random)
  await q(
    db,
    `update runs set status = case when id::text < '02' then 'running' else 'pending' end, finished_at = null,
       lease_expires_at = case when id::text < '02' then now() + interval '1 hour' end
     where id::text < '04'`,
  );
  await q(db, 'vacuum analyze runs');
  const out: Record<string, { medianMs: number; maxMs: number }> = {};
  for (const list of LISTS) {
    const times: number[] = [];
    for (let i = 0; i < LIST_REPEATS; i++) {
      const t0 = performance.now();
      await listRunRows(db.query, TENANT, list.filter, { limit: 50, offset: 0 });
      times.push(performance.now() - t0);
    }
    const s = spread(times);
    out[list.name] = { medianMs: s.median, maxMs: s.max };
  }
  progress(`${tag}: ${LISTS.map((l) => `${l.name} ${fmt(out[l.name].medianMs, 1)} ms`).join(', ')}`);
  return out;
}

async function main() {
  const started = Date.now();
  console.log(`bench:run-storage: ${RUNS} runs, batches of ${BATCH}, ${ROUNDS} round(s), ${NAMES.length} variants of the schema`);
  progress('starting a private PostgreSQL 15 cluster (durable: fsync and synchronous_commit on)');
  let cluster: Cluster | undefined;
  const dbs = new Map<Variant, Database>();
  try {
    cluster = await startCluster({ settings: { fsync: 'on', synchronous_commit: 'on', full_page_writes: 'on' } });
    for (const name of NAMES) {
      const url = await cluster.createDatabase(`storage_${name.replaceAll('-', '_')}`);
      // one connection: every statement of a measurement runs on the backend whose CPU is read
      const db = await openDatabase({ url, poolSize: 1, applicationName: `bench-run-storage-${name}` });
      dbs.set(name, db);
      await migrate(db);
      if (VARIANTS[name].sql) await q(db, VARIANTS[name].sql);
    }
    const rounds: Array<Partial<Record<Variant, Figures>>> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const order = [...NAMES.slice(r % NAMES.length), ...NAMES.slice(0, r % NAMES.length)];
      console.log(`Round ${r + 1}/${ROUNDS}: ${order.join(', ')}`);
      const round: Partial<Record<Variant, Figures>> = {};
      for (const name of order) round[name] = await measure(dbs.get(name)!, `round ${r + 1} ${name}`);
      rounds.push(round);
    }
    const summary = Object.fromEntries(
      NAMES.map((name) => [
        name,
        {
          label: VARIANTS[name].label,
          pgCpuMsPerRun: spread(rounds.map((r) => r[name]?.pgCpuMsPerRun)),
          claimCpuMsPerRun: spread(rounds.map((r) => r[name]?.claimCpuMsPerRun)),
          wallMsPerRun: spread(rounds.map((r) => r[name]?.wallMsPerRun)),
        },
      ]),
    ) as Record<Variant, { label: string; pgCpuMsPerRun: Spread; claimCpuMsPerRun: Spread; wallMsPerRun: Spread }>;
    const shipped = summary.shipped.pgCpuMsPerRun.median;
    const cell = (s: Spread) => `${fmt(s.min, 4)} / ${fmt(s.median, 4)} / ${fmt(s.max, 4)}`;
    console.log(`\nPostgreSQL per one-step run (min / median / max over ${ROUNDS} round(s); one backend, batches of ${BATCH})`);
    console.log(
      table([
        ['variant', 'CPU ms/run', 'of which claims', 'wall ms/run', 'median CPU vs shipped'],
        ...NAMES.map((name) => [
          VARIANTS[name].label,
          cell(summary[name].pgCpuMsPerRun),
          cell(summary[name].claimCpuMsPerRun),
          cell(summary[name].wallMsPerRun),
          `${fmt((summary[name].pgCpuMsPerRun.median / shipped - 1) * 100, 0)} %`,
        ]),
      ]),
    );
    console.log(
      `\nThe admin's run lists on ${LIST_RUNS} finished runs of one shop (page of 50 + total; median / max of ${LIST_REPEATS} ms)`,
    );
    const listVariants: Variant[] = ['shipped', 'no-list-indexes'];
    const lists = {} as Record<Variant, Record<string, { medianMs: number; maxMs: number }>>;
    for (const name of listVariants) lists[name] = await measureLists(dbs.get(name)!, `lists ${name}`);
    console.log(
      table([
        ['list', ...listVariants.map((v) => `${v} ms`)],
        ...LISTS.map((l) => [
          l.name,
          ...listVariants.map((v) => `${fmt(lists[v][l.name].medianMs, 1)} / ${fmt(lists[v][l.name].maxMs, 1)}`),
        ]),
      ]),
    );
    const [{ v: postgres }] = await q<{ v: string }>(dbs.get('shipped')!, 'select version() as v');
    const result = {
      measuredAt: new Date().toISOString(),
      durationSeconds: Math.round((Date.now() - started) / 1000),
      ...gitState(['packages/mercato/src', 'packages/mercato/migrations', 'bench/run-storage.ts']),
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version, postgres },
      settings: { runs: RUNS, rounds: ROUNDS, batch: BATCH, listRuns: LIST_RUNS, listRepeats: LIST_REPEATS },
      rounds,
      summary,
      lists,
    };
    mkdirSync(dirname(OUT), { recursive: true });
    writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\nWritten: ${OUT} (${result.durationSeconds} s in all)`);
  } finally {
    for (const db of dbs.values()) await db.close().catch(() => {});
    await cluster?.destroy();
  }
}

await main();
