/**
 * npm run bench:observability — run lists, log search and the charts' aggregates through the real HTTP server on
 * PostgreSQL.
 *
 * Loads 1,000,000 runs over 1,000 tenants and one run with 1,000,000 log lines (plus 100,000 lines in other runs) into a
 * fresh database on the server of DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), then times
 * `GET /api/runs`, `GET /api/runs/:id/logs`, `GET /api/stats/runs` and `GET /api/stats/flows` over HTTP and prints
 * p50/p99 per scenario with the row counts. Targets: run list p99 ≤ 20 ms, log search p99 ≤ 100 ms, charts p99 ≤ 25 ms.
 * The database is dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { type SQL, sql } from 'drizzle-orm';
import { type Database, openDatabase } from '../packages/mercato/src/db/engine.ts';
import { migrate } from '../packages/mercato/src/db/migrate.ts';
import type { Exec, Tenant } from '../packages/mercato/src/db/sql.ts';
import { type RunFilter, listRunRows } from '../packages/mercato/src/flows/store/runs.ts';
import { STATS_WINDOWS } from '../packages/mercato/src/flows/stats.ts';
import { flowActivity, runActivity } from '../packages/mercato/src/flows/store/stats.ts';
import { signSessionToken } from '../packages/mercato/src/http/session-token.ts';
import { BENCH_FLOWS as FLOWS } from './observability-server.ts';

const SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const RUNS = Number(process.env.BENCH_RUNS ?? 1_000_000);
const TENANTS = 1_000;
const LOG_LINES = Number(process.env.BENCH_LOG_LINES ?? 1_000_000);
const OTHER_LOG_LINES = Math.round(LOG_LINES / 10);
const BATCH = 100_000;
const LIST_SAMPLES = 400;
const LOG_SAMPLES = 200;
const STATS_SAMPLES = 400;
/** BENCH_HEAVY_RUNS=<n>: also a shop with n runs over the last 7 days, whose charts are measured apart (not in the target). */
const HEAVY_RUNS = Number(process.env.BENCH_HEAVY_RUNS ?? 0);
const HEAVY_SHOP = 'shop-heavy.myshopify.com';
/** BENCH_ONLY=lists,charts,logs: the groups to measure (default all), e.g. to repeat one on a database kept by BENCH_KEEP. */
const ONLY = new Set((process.env.BENCH_ONLY ?? 'lists,charts,logs').split(',').map((g) => g.trim()));
const API_KEY = 'bench-key';
const API_SECRET = 'bench-secret';
const SERVER_SCRIPT = fileURLToPath(new URL('./observability-server.ts', import.meta.url));

const shopOf = (i: number) => `shop-${String(i).padStart(4, '0')}.myshopify.com`;
const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const log = (line: string) => process.stdout.write(`${line}\n`);

function readyUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /READY (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`the bench server exited with code ${code}`)));
  });
}

function withDatabase(url: string, name: string) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function timed(label: string, fn: () => Promise<unknown>) {
  const start = process.hrtime.bigint();
  await fn();
  log(`  ${label} (${(ms(start) / 1000).toFixed(1)} s)`);
}

async function load(db: Database) {
  log(`Loading ${RUNS.toLocaleString('en')} runs over ${TENANTS} tenants…`);
  for (let from = 1; from <= RUNS; from += BATCH) {
    const to = Math.min(RUNS, from + BATCH - 1);
    await timed(`runs ${from.toLocaleString('en')}–${to.toLocaleString('en')}`, () =>
      db.query(sql`
        insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, attempt, error, created_at, started_at, finished_at)
        select 'default', 'shop-' || lpad((n % ${TENANTS})::text, 4, '0') || '.myshopify.com',
               (${sql.raw(`array['${FLOWS.join("','")}']`)})[1 + (n / ${TENANTS}) % ${FLOWS.length}],
               'api', jsonb_build_object('n', n), '{}'::jsonb,
               case when (n / ${TENANTS}) % 50 = 9 then 'failed' when (n / ${TENANTS}) % 97 = 3 then 'canceled'
                    when (n / ${TENANTS}) % 211 = 5 then 'running' else 'completed' end,
               1,
               case when (n / ${TENANTS}) % 50 = 9 then jsonb_build_object('name', 'Error', 'message', 'upstream answered 503') end,
               t, t, t + interval '2 seconds'
        from (select n, now() - (n::float8 / ${RUNS}::int) * interval '30 days' as t from generate_series(${from}::int, ${to}::int) n) s`),
    );
  }
  const [big] = await db.query<{ id: string }>(sql`
    insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, attempt)
    values ('default', ${shopOf(1)}, 'syncOrders', 'api', '{}'::jsonb, '{}'::jsonb, 'completed', 2) returning id`);
  log(
    `Loading ${LOG_LINES.toLocaleString('en')} log lines into run ${big.id} and ${OTHER_LOG_LINES.toLocaleString('en')} into 100 other runs…`,
  );
  const lines = (runId: SQLRunId, from: number, to: number) => sql`
    insert into logs (run_id, app_handle, shop, level, message, data, step, attempt, created_at)
    select ${runId}, 'default', ${shopOf(1)},
           case when n % 1000 = 7 then 'error' when n % 100 = 3 then 'warn' else 'info' end,
           case when n % 1000 = 7 then 'Payment failed for order ' || n || ': card_declined'
                when n % 100 = 3 then 'Slow response from upstream: ' || (n % 3000) || 'ms'
                when n % 50000 = 11 then 'Request timeout after ' || (n % 9000) || 'ms, retrying'
                else 'Processed order ' || n || ' for customer ' || (n % 5000) end,
           jsonb_build_object('orderId', n, 'customer', jsonb_build_object('id', n % 5000), 'ms', n % 3000),
           case when n % 1000 = 7 then 'charge' when n % 10 = 0 then 'fetch' else 'push:' || (n % 1000) end,
           1 + (n % 2), now() - ((${to}::int - n)::float8 / 1000) * interval '1 second'
    from generate_series(${from}::int, ${to}::int) n`;
  for (let from = 1; from <= LOG_LINES; from += BATCH) {
    const to = Math.min(LOG_LINES, from + BATCH - 1);
    await timed(`lines ${from.toLocaleString('en')}–${to.toLocaleString('en')}`, () => db.query(lines(sql`${big.id}::uuid`, from, to)));
  }
  const others = await db.query<{ id: string }>(sql`select id from runs where shop = ${shopOf(1)} limit 100`);
  await timed(`lines of 100 other runs`, async () => {
    const per = Math.round(OTHER_LOG_LINES / others.length);
    for (const r of others) await db.query(lines(sql`${r.id}::uuid`, 1, per));
  });
  await timed('vacuum analyze', async () => {
    await db.exec('vacuum analyze runs');
    await db.exec('vacuum analyze logs');
  });
  return big.id;
}
type SQLRunId = ReturnType<typeof sql>;

/** The heavy shop's runs (BENCH_HEAVY_RUNS), evenly over the last 7 days, 2 % failed; loaded once per database. */
async function loadHeavyShop(db: Database) {
  const [{ n }] = await db.query<{ n: number }>(
    sql`select count(*)::int as n from runs where app_handle = 'default' and shop = ${HEAVY_SHOP}`,
  );
  if (n > 0) return;
  await timed(`${HEAVY_RUNS.toLocaleString('en')} runs of ${HEAVY_SHOP} over 7 days`, async () => {
    await db.query(sql`
      insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, attempt, created_at, started_at, finished_at)
      select 'default', ${HEAVY_SHOP}, (${sql.raw(`array['${FLOWS.join("','")}']`)})[1 + n % ${FLOWS.length}], 'api', '{}'::jsonb, '{}'::jsonb,
             case when n % 50 = 9 then 'failed' else 'completed' end, 1, t, t, t + (n % 3000) * interval '1 millisecond'
      from (select n, now() - (n::float8 / ${HEAVY_RUNS}) * interval '7 days' as t from generate_series(1, ${HEAVY_RUNS}::int) n) s`);
    await db.exec('analyze runs');
  });
}

function percentile(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

interface Row {
  group: string;
  scenario: string;
  p50: number;
  p99: number;
  rows: string;
}

async function measure(
  base: string,
  scenario: string,
  samples: number,
  path: (i: number) => { path: string; shop: string },
): Promise<Omit<Row, 'group'>> {
  const times: number[] = [];
  let rows = '';
  for (let i = -20; i < samples; i++) {
    const req = path(i);
    const authorization = `Bearer ${signSessionToken({ apiKey: API_KEY, apiSecret: API_SECRET, shop: req.shop })}`;
    const start = process.hrtime.bigint();
    const res = await fetch(base + req.path, { headers: { authorization } });
    const body = (await res.json()) as any;
    const elapsed = ms(start);
    if (res.status !== 200) throw new Error(`${scenario}: ${res.status} ${JSON.stringify(body)}`);
    if (i >= 0) times.push(elapsed);
    if (i === 0) rows = describeRows(body);
  }
  times.sort((a, b) => a - b);
  log(`  ${scenario}: p50 ${percentile(times, 50).toFixed(1)} ms, p99 ${percentile(times, 99).toFixed(1)} ms`);
  return { scenario, p50: percentile(times, 50), p99: percentile(times, 99), rows };
}

/** What an answer held, for the table: rows of a list, buckets of a chart, flows of the flow figures. */
function describeRows(body: any): string {
  if (Array.isArray(body.buckets)) return `${body.buckets.length} buckets, ${body.total.toLocaleString('en')} runs`;
  if (Array.isArray(body.flows)) {
    const runs = body.flows.reduce((sum: number, f: { runs: number }) => sum + f.runs, 0);
    return `${body.flows.length} flows, ${runs.toLocaleString('en')} runs`;
  }
  const n = body.runs?.length ?? body.logs?.length;
  return `${n} rows, total ${body.total.toLocaleString('en')}${body.totalExact === false ? '+' : ''}`;
}

/** EXPLAIN ANALYZE of each statement the function runs (it gets an Exec that explains instead of answering). */
async function explainStatements(db: Database, label: string, run: (exec: Exec) => Promise<unknown>, answer: unknown[]) {
  const plans: string[][] = [];
  const explaining = (async (statement: SQL) => {
    const plan = await db.query<{ 'QUERY PLAN': string }>(sql`explain (analyze, buffers off, costs off) ${statement}`);
    plans.push(plan.map((r) => r['QUERY PLAN']));
    return answer;
  }) as Exec;
  await run(explaining).catch(() => {});
  for (const plan of plans) {
    log(`  EXPLAIN ${label}:`);
    for (const line of plan.filter((l) => /Scan|Append|Aggregate|Sort|Execution Time/.test(l))) log(`    ${line.trim()}`);
  }
}

/**
 * The plans of the production run list (`listRunRows`, as the API runs it) for one filter: its page query, then its
 * count, each run under EXPLAIN ANALYZE instead of for its rows.
 */
async function explainList(db: Database, label: string, tenant: Tenant, filter: RunFilter) {
  const plans: string[][] = [];
  const explaining = (async (statement: SQL) => {
    const slot = plans.push([]) - 1;
    const plan = await db.query<{ 'QUERY PLAN': string }>(sql`explain (analyze, buffers off, costs off) ${statement}`);
    plans[slot] = plan.map((r) => r['QUERY PLAN']);
    return [{ total: 0 }];
  }) as Exec;
  await listRunRows(explaining, tenant, filter, { limit: 50, offset: 0 });
  plans.forEach((plan, i) => {
    log(`  EXPLAIN ${label}${i === 0 ? '' : ' count'}:`);
    for (const line of plan.filter((l) => /Scan|Limit|Sort|Append|Aggregate|Execution Time/.test(l))) log(`    ${line.trim()}`);
  });
}

async function main() {
  // BENCH_REUSE=<database> reuses a database loaded by an earlier run with BENCH_KEEP=1 (for tuning; not dropped).
  const reuse = process.env.BENCH_REUSE;
  const keep = process.env.BENCH_KEEP === '1' || reuse !== undefined;
  const name = reuse ?? `mercato_bench_${randomBytes(4).toString('hex')}`;
  const admin = await openDatabase({ url: SERVER_URL, poolSize: 1 });
  if (!reuse) await admin.exec(`create database ${name}`);
  log(`${reuse ? 'Reusing' : 'Created'} database ${name} on ${new URL(SERVER_URL).host}`);
  process.once('SIGINT', () => {
    log(`\nInterrupted${keep ? '' : `: dropping ${name}`}`);
    (keep ? Promise.resolve() : admin.exec(`drop database if exists ${name} with (force)`)).finally(() => process.exit(130));
  });
  const url = withDatabase(SERVER_URL, name);
  const db = await openDatabase({ url, poolSize: 10, applicationName: 'mercato-bench' });
  let closeRuntime: (() => Promise<void>) | undefined;
  try {
    await migrate(db);
    const bigRun = reuse
      ? (await db.query<{ run_id: string }>(sql`select run_id from logs group by run_id order by count(*) desc limit 1`))[0].run_id
      : await load(db);
    if (HEAVY_RUNS > 0) await loadHeavyShop(db);
    const [{ runs, logs }] = await db.query<{ runs: number; logs: number }>(
      sql`select (select count(*) from runs)::int as runs, (select count(*) from logs)::int as logs`,
    );
    log(`Rows: ${runs.toLocaleString('en')} runs, ${logs.toLocaleString('en')} log lines`);

    // A stub of the platform's token exchange, so each shop's installation on first contact succeeds at once.
    const platformStub = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ access_token: 'bench-access-token', scope: 'read_orders' }));
    });
    await new Promise<void>((resolve) => platformStub.listen(0, '127.0.0.1', resolve));
    const platformOrigin = `http://127.0.0.1:${(platformStub.address() as AddressInfo).port}`;

    // The server runs in a process of its own, as in production; this process only sends requests and times them.
    const child = spawn(process.execPath, ['--import', 'tsx', SERVER_SCRIPT], {
      env: {
        ...process.env,
        DATABASE_URL: url,
        PLATFORM_API_KEY: API_KEY,
        PLATFORM_API_SECRET: API_SECRET,
        PLATFORM_ORIGIN: platformOrigin,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const server = { url: await readyUrl(child) };
    closeRuntime = async () => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      platformStub.close();
    };
    // Steady state: every tenant has made its first contact (installation) before timing starts.
    await timed(`first contact of ${TENANTS} tenants`, async () => {
      for (let i = 0; i < TENANTS; i++) {
        const res = await fetch(`${server.url}/api/runs?limit=1`, {
          headers: { authorization: `Bearer ${signSessionToken({ apiKey: API_KEY, apiSecret: API_SECRET, shop: shopOf(i) })}` },
        });
        if (res.status !== 200) throw new Error(`first contact of ${shopOf(i)}: ${res.status}`);
        await res.arrayBuffer();
      }
    });

    const shop = (i: number) => shopOf((i * 7919 + 13) % TENANTS);
    const [{ id: someId }] = await db.query<{ id: string }>(
      sql`select id from runs where shop = ${shopOf(5)} order by created_at desc offset 10 limit 1`,
    );
    log('\nRun list plans (tenant shop-0005):');
    const tenant: Tenant = { appHandle: 'default', shop: shopOf(5) };
    await explainList(db, 'list', tenant, {});
    await explainList(db, 'status=failed', tenant, { status: 'failed' });
    // no status contains "sync" and it cannot be part of a UUID, so only the flow name is compared
    await explainList(db, 'search=sync', tenant, { search: 'sync' });
    log('\nChart aggregate plans (tenant shop-0005):');
    const emptyAnswer = [{ since: '', until: '', groups: '[]', flows: '[]' }];
    await explainStatements(db, 'stats/runs 24h', (exec) => runActivity(exec, tenant, STATS_WINDOWS['24h']), emptyAnswer);
    await explainStatements(db, 'stats/runs 7d', (exec) => runActivity(exec, tenant, STATS_WINDOWS['7d']), emptyAnswer);
    await explainStatements(db, 'stats/flows', (exec) => flowActivity(exec, tenant, STATS_WINDOWS['24h']), emptyAnswer);

    const results: Row[] = [];
    const heavyResults: Row[] = [];
    const list = async (scenario: string, query: string, shopFor: (i: number) => string = shop) =>
      results.push({
        group: 'GET /api/runs',
        ...(await measure(server.url, scenario, LIST_SAMPLES, (i) => ({ path: `/api/runs?${query}`, shop: shopFor(i) }))),
      });
    if (ONLY.has('lists')) {
      log('\nMeasuring run lists…');
      await list('limit=50', 'limit=50');
      await list('limit=50&offset=500', 'limit=50&offset=500');
      await list('search=sync', 'limit=50&search=sync');
      await list('search=<partial run id>', `limit=50&search=${someId.slice(0, 13)}`, () => shopOf(5));
      await list('status=failed', 'limit=50&status=failed');
      await list('search=reconcile&status=failed', 'limit=50&search=reconcile&status=failed');
      await list(
        'from/to (7 days)',
        `limit=50&from=${new Date(Date.now() - 14 * 86_400_000).toISOString()}&to=${new Date(Date.now() - 7 * 86_400_000).toISOString()}`,
      );
    }

    if (ONLY.has('charts')) {
      log("\nMeasuring the charts' aggregates…");
      const stats = async (group: string, scenario: string, path: string) =>
        results.push({ group, ...(await measure(server.url, scenario, STATS_SAMPLES, (i) => ({ path, shop: shop(i) }))) });
      await stats('GET /api/stats/runs', 'range=24h (24 hourly buckets)', '/api/stats/runs?range=24h');
      await stats('GET /api/stats/runs', 'range=7d (28 buckets of 6 h)', '/api/stats/runs?range=7d');
      await stats('GET /api/stats/flows', '24 h per flow (p50/p95, hourly)', '/api/stats/flows');
      if (HEAVY_RUNS > 0) {
        const heavy = async (scenario: string, path: string) =>
          heavyResults.push({ group: 'heavy shop', ...(await measure(server.url, scenario, 50, () => ({ path, shop: HEAVY_SHOP }))) });
        await heavy('stats/runs?range=24h', '/api/stats/runs?range=24h');
        await heavy('stats/runs?range=7d', '/api/stats/runs?range=7d');
        await heavy('stats/flows', '/api/stats/flows');
      }
    }

    if (ONLY.has('logs')) {
      log(`Measuring log search over ${LOG_LINES.toLocaleString('en')} lines…`);
      const logsQ = async (scenario: string, query: string) =>
        results.push({
          group: 'GET /api/runs/:id/logs',
          ...(await measure(server.url, scenario, LOG_SAMPLES, () => ({ path: `/api/runs/${bigRun}/logs?${query}`, shop: shopOf(1) }))),
        });
      const q = (s: string) => `q=${encodeURIComponent(s)}`;
      await logsQ('no query (newest 50)', 'limit=50');
      await logsQ('text, rare: timeout', q('timeout'));
      await logsQ('text, common: processed order', q('processed order'));
      await logsQ('phrase + exclusion', q('"payment failed" -card_declined'));
      await logsQ('field: level:error', q('level:error'));
      await logsQ('levels=warn', 'levels=warn');
      await logsQ('field: step:charge attempt:2', q('step:charge attempt:2'));
      await logsQ('data key: orderId=123457', q('orderId=123457'));
      await logsQ('data key: customer.id=42', q('customer.id=42'));
      await logsQ('data compare: ms>2990 level:warn', q('ms>2990 level:warn'));
      await logsQ('regex: /timeout after \\d+ms/', q('/timeout after \\d+ms/'));
      await logsQ('regex: /^Payment failed for order 9\\d+7:/', q('/^Payment failed for order 9\\d+7:/'));
      await logsQ('time: last:15m level:warn', q('last:15m level:warn'));
      await logsQ('context: payment C:3', q('payment C:3'));
      await logsQ('context: timeout B:5 A:5', q('timeout B:5 A:5'));
      await logsQ('deep page: before=<id 500k down>', `limit=50&before=${LOG_LINES / 2}`);
    }

    log('');
    log('| Endpoint | Scenario | p50 ms | p99 ms | Rows |');
    log('|---|---|---|---|---|');
    for (const r of results) log(`| ${r.group} | ${r.scenario} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.rows} |`);
    for (const r of heavyResults)
      log(`| ${HEAVY_SHOP} (not in the target) | ${r.scenario} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.rows} |`);
    const worst = (...groups: string[]) => Math.max(...results.filter((r) => groups.includes(r.group)).map((r) => r.p99));
    log('');
    if (ONLY.has('lists')) log(`Run list worst p99: ${worst('GET /api/runs').toFixed(1)} ms (target ≤ 20 ms)`);
    if (ONLY.has('logs')) log(`Log search worst p99: ${worst('GET /api/runs/:id/logs').toFixed(1)} ms (target ≤ 100 ms)`);
    if (ONLY.has('charts')) log(`Charts worst p99: ${worst('GET /api/stats/runs', 'GET /api/stats/flows').toFixed(1)} ms (target ≤ 25 ms)`);
  } finally {
    await closeRuntime?.().catch(() => {});
    await db.close().catch(() => {});
    if (!keep) await admin.exec(`drop database if exists ${name} with (force)`);
    await admin.close();
    log(keep ? `Kept database ${name}` : `Dropped database ${name}`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
