/**
 * npm run bench:observability — run lists and log search through the real HTTP server on PostgreSQL.
 *
 * Loads 1,000,000 runs over 1,000 tenants and one run with 1,000,000 log lines (plus 100,000 lines in other runs) into a
 * fresh database on the server of DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), then times
 * `GET /api/runs` and `GET /api/runs/:id/logs` over HTTP and prints p50/p99 per scenario with the row counts.
 * Targets: run list p99 ≤ 20 ms, log search p99 ≤ 100 ms. The database is dropped at the end.
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
    if (i === 0) {
      const n = body.runs?.length ?? body.logs?.length;
      rows = `${n} rows, total ${body.total.toLocaleString('en')}${body.totalExact === false ? '+' : ''}`;
    }
  }
  times.sort((a, b) => a - b);
  log(`  ${scenario}: p50 ${percentile(times, 50).toFixed(1)} ms, p99 ${percentile(times, 99).toFixed(1)} ms`);
  return { scenario, p50: percentile(times, 50), p99: percentile(times, 99), rows };
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

    const results: Row[] = [];
    const list = async (scenario: string, query: string, shopFor: (i: number) => string = shop) =>
      results.push({
        group: 'GET /api/runs',
        ...(await measure(server.url, scenario, LIST_SAMPLES, (i) => ({ path: `/api/runs?${query}`, shop: shopFor(i) }))),
      });
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

    log('');
    log('| Endpoint | Scenario | p50 ms | p99 ms | Rows |');
    log('|---|---|---|---|---|');
    for (const r of results) log(`| ${r.group} | ${r.scenario} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.rows} |`);
    const worst = (g: string) => Math.max(...results.filter((r) => r.group === g).map((r) => r.p99));
    log(`\nRun list worst p99: ${worst('GET /api/runs').toFixed(1)} ms (target ≤ 20 ms)`);
    log(`Log search worst p99: ${worst('GET /api/runs/:id/logs').toFixed(1)} ms (target ≤ 100 ms)`);
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
