/**
 * `npm run bench:frontdoor` — how fast work enters Mercato: the intake doors of one real `mercato start` process, over
 * loopback HTTP with keep-alive clients, next to a bare reference measured in the same rounds on the same cluster.
 *
 * On a private, durable PostgreSQL 15 cluster (fsync and synchronous_commit on, pg_stat_statements; the machinery of
 * `npm run bench:flows`), with a temporary app (one flow without a concurrency limit and a small input, an
 * `orders/create` webhook handler, a public route) installed on one shop of the platform simulator, and no worker (the
 * runs stay pending: only intake is measured), the doors are:
 *   api      POST /api/flows/intake/run with a session token (the embedded admin's door)
 *   webhook  POST /webhooks, orders/create, HMAC-signed, a new webhook id and event id per request
 *   route    POST /routes/enqueue, a public route file (bearer token, forShop, the instance's dispatchFlow: the scaffold's
 *            routes/sync.ts shape)
 *   mcp      POST /mcp, JSON-RPC tools/call of service.flows.run with an MCP token
 *   bare     the reference: bench/peers/bare-insert.ts, Hono + pg (pool of 10), one INSERT … RETURNING id per request
 * Each door at BENCH_INFLIGHT requests in flight (1, 8, 32, 128), BENCH_REQUESTS requests per cell (BENCH_REQUESTS_AT_1 at
 * 1 in flight), BENCH_ROUNDS rounds;
 * in a round the levels come one after the other and, within a level, the doors in an order rotated from round to round.
 * Per cell: accepted/s, p50/p99 latency, server CPU and PostgreSQL backend CPU per request (/proc), statements
 * (pg_stat_statements), commits (pg_stat_database.xact_commit, read once the backends' statistics have settled) and
 * transaction ids (write transactions) per request; each door's rate over the reference's at the same level, per round.
 * Then the durability check: the four Mercato doors at 32 in flight, `mercato start` SIGKILLed mid-load and started
 * again; every request answered 2xx must have its run (and a webhook its delivery record) in the database.
 * Prints a table; writes bench/results/frontdoor.json. Method and variables: docs/benchmarks.md, "Front door".
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type PlatformSim, start as startSim } from 'platform-sim';
import { Pool } from 'undici';
import { signSessionToken } from '../packages/mercato/src/http/session-token.ts';
import { freePort, startCluster } from '../packages/mercato/test/kit/cluster.ts';
import { gitState } from './lib/git.ts';
import { MONITOR_USER, Monitor, type StatementRow, type Target } from './lib/monitor.ts';
import { runToEnd } from './lib/processes.ts';
import { CLK_TCK, backendDeltaMs, postgresCpu, postmasterPid, treeCpuMs } from './lib/proc.ts';
import { type Spread, fmt, percentile, spread, table } from './lib/stats.ts';
import { BIN, DURABLE_SETTINGS, ROOT, num } from './lib/common.ts';

const BARE = join(ROOT, 'bench/peers/bare-insert.ts');

const ROUNDS = num('BENCH_ROUNDS', 3);
const REQUESTS = num('BENCH_REQUESTS', 2000);
/** Requests per cell at 1 in flight (each one waits for a durable commit: 2,000 of them take minutes per door). */
const REQUESTS_AT_1 = num('BENCH_REQUESTS_AT_1', 500);
const requestsAt = (inflight: number) => (inflight === 1 ? REQUESTS_AT_1 : REQUESTS);
const LEVELS = (process.env.BENCH_INFLIGHT ?? '1,8,32,128')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n > 0);
/** Requests per door before the first round (JIT, caches, connection pools), at 32 in flight; not measured. */
const WARMUP = num('BENCH_WARMUP', 1000);
/**
 * How long a database is left alone before its commit counter is read: a backend that flushed its statistics less than
 * 1 s ago holds the next ones back until it has been idle for 10 s (PostgreSQL 15's PGSTAT_IDLE_INTERVAL).
 */
const SETTLE_MS = num('BENCH_SETTLE_MS', 10_500);
/**
 * Rounds (from the first) whose cells count commits, each after SETTLE_MS of quiet on its database; the later rounds
 * leave commitsPerRequest out and do not wait (the count hardly moves from round to round; the wait would be most of
 * the benchmark's time). BENCH_SETTLE_ROUNDS=3 counts them in every round of the default three.
 */
const SETTLE_ROUNDS =
  Number.isInteger(Number(process.env.BENCH_SETTLE_ROUNDS)) && process.env.BENCH_SETTLE_ROUNDS
    ? Number(process.env.BENCH_SETTLE_ROUNDS)
    : 1;
/** Durability check: requests in flight, and how long after the start of the load the server is killed. */
const KILL_INFLIGHT = num('BENCH_KILL_INFLIGHT', 32);
const KILL_AFTER_MS = num('BENCH_KILL_AFTER_MS', 2000);
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/frontdoor.json');
/** LOG_LEVEL of `mercato start` (warn by default: no access line per request, as the reference writes none). */
const SERVER_LOG_LEVEL = process.env.BENCH_SERVER_LOG_LEVEL || 'warn';
/** BENCH_SERVER_NODE_ARGS: Node options for `mercato start` (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it). */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);

const DOORS = ['api', 'webhook', 'route', 'mcp', 'bare'] as const;
type Door = (typeof DOORS)[number];
const MERCATO_DOORS = DOORS.filter((d) => d !== 'bare') as Exclude<Door, 'bare'>[];
const ONLY = new Set((process.env.BENCH_DOORS ?? '').split(',').filter(Boolean));
const doors: Door[] = DOORS.filter((d) => ONLY.size === 0 || ONLY.has(d) || d === 'bare');
const LABELS: Record<Door, string> = {
  api: 'POST /api/flows/:name/run (session token)',
  webhook: 'POST /webhooks (orders/create, HMAC)',
  route: 'POST /routes/enqueue (public route → dispatchFlow)',
  mcp: 'POST /mcp tools/call service.flows.run',
  bare: 'reference: Hono + pg, one INSERT … RETURNING',
};

const API_KEY = 'bench-frontdoor-key';
const API_SECRET = 'bench-frontdoor-secret';
const SHOP = 'frontdoor.myshopify.com';
const ROUTE_TOKEN = `route-${randomBytes(12).toString('hex')}`;
const ENCRYPTION_KEY = randomBytes(32).toString('hex');
const FLOW = 'intake';
const DB = { mercato: 'bench_frontdoor', bare: 'bench_bare' };

const progress = (line: string) => process.stdout.write(`  … ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sum = (rows: readonly StatementRow[]) => rows.reduce((a, r) => a + r.calls, 0);
const oneLine = (query: string, max = 110) => {
  const flat = query.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

// ---------------------------------------------------------------------------------------------
// The temporary app (inside the workspace, under the git-ignored test-artifacts/, so that it resolves `mercato` and
// `zod` from the workspace's node_modules)

const APP_DIR = join(ROOT, 'test-artifacts', `frontdoor-${randomBytes(4).toString('hex')}`);

function writeApp() {
  mkdirSync(join(APP_DIR, 'routes'), { recursive: true });
  writeFileSync(
    join(APP_DIR, 'service.config.ts'),
    `import { defineApp, defineWebhook } from 'mercato';
import { z } from 'zod';

const app = defineApp();

export default app.defineConfig({
  flows: {
    ${FLOW}: app.defineFlow({
      name: '${FLOW}',
      input: z.object({ n: z.number().int() }),
      concurrency: null,
      run: (_ctx, input) => input.n,
    }),
  },
  webhooks: {
    'orders/create': defineWebhook({
      topic: 'orders/create',
      handler: async (ctx, payload: { id: number }) => {
        await ctx.log.info('order created', { id: payload.id });
      },
    }),
  },
});
`,
  );
  // the scaffold's routes/sync.ts, reduced: bearer token (constant time), JSON body, forShop, the instance's dispatchFlow
  writeFileSync(
    join(APP_DIR, 'routes', 'enqueue.ts'),
    `import { createHash, timingSafeEqual } from 'node:crypto';
import service from '../service.config.ts';

const digest = (value: string) => createHash('sha256').update(value).digest();
const expected = digest(process.env.BENCH_ROUTE_TOKEN ?? '');

export default service.defineRoute<{ shop: string; n: number }>({
  async auth(request, { forShop }) {
    const given = /^Bearer (.+)$/i.exec(request.headers.get('authorization') ?? '')?.[1] ?? '';
    if (!process.env.BENCH_ROUTE_TOKEN || !timingSafeEqual(digest(given), expected)) return null;
    let body: { shop?: unknown; n?: unknown };
    try {
      body = await request.json();
    } catch {
      return Response.json({ error: 'the body must be JSON { shop, n }' }, { status: 400 });
    }
    if (typeof body?.shop !== 'string' || typeof body.n !== 'number') {
      return Response.json({ error: 'the body must be JSON { shop, n }' }, { status: 400 });
    }
    const tenant = await forShop({ shop: body.shop });
    return { shop: tenant.shop, n: body.n };
  },
  async POST(_request, ctx) {
    const result = await service.dispatchFlow({ flowName: '${FLOW}', input: { n: ctx.auth.n }, shop: ctx.auth.shop });
    return Response.json(result, { status: 202 });
  },
});
`,
  );
}

// ---------------------------------------------------------------------------------------------
// Processes

const children = new Set<ChildProcess>();

interface Started {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<void>;
}

/** Spawns a process; resolves once its output matches `ready` (group 1: its URL). */
function spawnServer(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; ready: RegExp; label: string }) {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  void exited.then(() => children.delete(child));
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-50_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return new Promise<Started>((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${options.label}: not ready after 90 s:\n${out}`));
    }, 90_000);
    const check = () => {
      const m = options.ready.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      child.stderr!.off('data', check);
      resolvePromise({ child, url: m[1].replace(/\/$/, ''), output: () => out, exited });
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${options.label} exited (${code ?? signal}) before it was ready:\n${out}`));
    });
  });
}

async function stopChild(s: Started | undefined, graceMs = 15_000) {
  if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return;
  const timer = setTimeout(() => s.child.kill('SIGKILL'), graceMs);
  s.child.kill('SIGTERM');
  await s.exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// The cluster, the simulator, the servers

type Cluster = Awaited<ReturnType<typeof startCluster>>;
let cluster: Cluster;
let monitor: Monitor;
let sim: PlatformSim;
let server: Started | undefined;
let serverPort = 0;
let bare: Started | undefined;
let mcpSecret = '';
const urlOf = (database: string, user = 'postgres') => `postgres://${user}@127.0.0.1:${cluster.port}/${database}`;
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('OTEL_')));

function startMercato(): Promise<Started> {
  return spawnServer(
    process.execPath,
    [...SERVER_NODE_ARGS, BIN, 'start', '--port', String(serverPort), '--config', join(APP_DIR, 'service.config.ts')],
    {
      cwd: APP_DIR,
      env: {
        ...baseEnv,
        NODE_ENV: 'production',
        LOG_LEVEL: SERVER_LOG_LEVEL,
        DATABASE_URL: urlOf(DB.mercato),
        PLATFORM_API_KEY: API_KEY,
        PLATFORM_API_SECRET: API_SECRET,
        PLATFORM_ORIGIN: sim.url,
        HOST: `http://127.0.0.1:${serverPort}`,
        ENCRYPTION_KEY,
        MERCATO_BIND_ADDRESS: '127.0.0.1',
        BENCH_ROUTE_TOKEN: ROUTE_TOKEN,
      },
      ready: /listening on (http:\/\/\S+)/,
      label: 'mercato start',
    },
  );
}

function startBare(): Promise<Started> {
  return spawnServer(process.execPath, ['--import', 'tsx', BARE], {
    cwd: ROOT,
    env: { ...baseEnv, DATABASE_URL: urlOf(DB.bare), PORT: '0' },
    ready: /^ready (http:\/\/\S+)/m,
    label: 'bare-insert',
  });
}

/** Installs the shop (the first session-token request exchanges the token) and creates an MCP token that may run flows. */
async function installShop(): Promise<void> {
  const token = signSessionToken({ apiKey: API_KEY, apiSecret: API_SECRET, shop: SHOP });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const flows = await fetch(`${server!.url}/api/flows`, { headers });
  if (flows.status !== 200) throw new Error(`GET /api/flows: ${flows.status} ${await flows.text()}`);
  const created = await fetch(`${server!.url}/api/mcp/tokens`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'frontdoor bench', permissions: ['run_flows'], expiresInDays: 1 }),
  });
  const body = (await created.json()) as { secret?: string };
  if (created.status !== 201 || !body.secret) throw new Error(`POST /api/mcp/tokens: ${created.status} ${JSON.stringify(body)}`);
  mcpSecret = body.secret;
  const t = await monitor.target(DB.mercato);
  const [row] = await t.query<{ status: string }>(`select status from installations where shop = $1`, [SHOP]);
  if (row?.status !== 'active') throw new Error(`the shop is not installed (${row?.status ?? 'no row'})`);
}

// ---------------------------------------------------------------------------------------------
// The doors: one request each

interface Req {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** Session tokens live 60 s: a client keeps one for 20 s, as an embedded app caching its token would. */
let sessionToken = { value: '', until: 0 };
function currentSessionToken(): string {
  const now = Date.now();
  if (now >= sessionToken.until)
    sessionToken = { value: signSessionToken({ apiKey: API_KEY, apiSecret: API_SECRET, shop: SHOP }), until: now + 20_000 };
  return sessionToken.value;
}

const runTag = randomBytes(3).toString('hex');
const webhookIdOf = (n: number) => `fd-${runTag}-${n}`;

function buildRequest(door: Door, n: number): Req {
  const json = { 'content-type': 'application/json' };
  switch (door) {
    case 'api':
      return {
        path: `/api/flows/${FLOW}/run`,
        headers: { ...json, authorization: `Bearer ${currentSessionToken()}` },
        body: JSON.stringify({ input: { n } }),
      };
    case 'webhook': {
      const body = JSON.stringify({ id: n, name: `#${n}`, total_price: '10.00', currency: 'EUR' });
      return {
        path: '/webhooks',
        headers: {
          ...json,
          'x-shopify-topic': 'orders/create',
          'x-shopify-hmac-sha256': createHmac('sha256', API_SECRET).update(body).digest('base64'),
          'x-shopify-shop-domain': SHOP,
          'x-shopify-webhook-id': webhookIdOf(n),
          'x-shopify-event-id': `ev-${runTag}-${n}`,
          'x-shopify-triggered-at': new Date().toISOString(),
          'x-shopify-api-version': '2026-10',
        },
        body,
      };
    }
    case 'route':
      return {
        path: '/routes/enqueue',
        headers: { ...json, authorization: `Bearer ${ROUTE_TOKEN}` },
        body: JSON.stringify({ shop: SHOP, n }),
      };
    case 'mcp':
      return {
        path: '/mcp',
        headers: {
          ...json,
          authorization: `Bearer ${mcpSecret}`,
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: n,
          method: 'tools/call',
          params: { name: 'service.flows.run', arguments: { flow: FLOW, input: { n } } },
        }),
      };
    case 'bare':
      return { path: '/enqueue', headers: json, body: JSON.stringify({ shop: SHOP, flow: FLOW, input: { n } }) };
  }
}

/** The run id of an accepted request, or undefined (refused, or not the expected answer). */
function acceptedRunId(door: Door, status: number, text: string): string | undefined {
  if (status < 200 || status > 299) return undefined;
  try {
    const body = JSON.parse(text);
    if (door === 'mcp') {
      if (body.error || body.result?.isError) return undefined;
      return body.result?.structuredContent?.runId;
    }
    return body.runId;
  } catch {
    return undefined;
  }
}

const originOf = (door: Door) => (door === 'bare' ? bare!.url : server!.url);

// ---------------------------------------------------------------------------------------------
// Load

let seq = 0;

interface LoadResult {
  sent: number;
  accepted: number;
  refused: number;
  /** first few refusals (status and body), for the report */
  samples: string[];
  latencies: number[];
  seconds: number;
  clientCpuMs: number;
  acks: Array<{ door: Door; n: number; runId: string }>;
  unanswered: Array<{ door: Door; n: number }>;
}

/** A keep-alive pool of `connections` connections to a door's origin, all opened (GET /healthz) before it is used. */
async function openPool(origin: string, connections: number): Promise<Pool> {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 120_000 });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const res = await pool.request({ path: '/healthz', method: 'GET' });
      await res.body.text();
    }),
  );
  return pool;
}

/**
 * `inflight` loops, each sending its next request as soon as the previous one is answered, until `count` requests were
 * sent (or `stop()` says so). Loops are given doors in turn (`doorsOf` one door, or several for the kill check).
 */
async function load(
  doorList: readonly Door[],
  inflight: number,
  count: number,
  pools: Map<Door, Pool>,
  options: { keepAcks?: boolean; stop?: () => boolean } = {},
): Promise<LoadResult> {
  const result: LoadResult = {
    sent: 0,
    accepted: 0,
    refused: 0,
    samples: [],
    latencies: [],
    seconds: 0,
    clientCpuMs: 0,
    acks: [],
    unanswered: [],
  };
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inflight }, async (_, loop) => {
      const door = doorList[loop % doorList.length];
      const pool = pools.get(door)!;
      while (result.sent < count && !options.stop?.()) {
        result.sent++;
        const n = ++seq;
        const r = buildRequest(door, n);
        const t0 = performance.now();
        let status = 0;
        let text = '';
        try {
          const res = await pool.request({ path: r.path, method: 'POST', headers: r.headers, body: r.body });
          status = res.statusCode;
          text = await res.body.text();
        } catch (error) {
          text = (error as Error).message;
          if (options.keepAcks) result.unanswered.push({ door, n });
        }
        const ms = performance.now() - t0;
        const runId = acceptedRunId(door, status, text);
        if (runId) {
          result.accepted++;
          result.latencies.push(ms);
          if (options.keepAcks) result.acks.push({ door, n, runId });
        } else {
          result.refused++;
          if (result.samples.length < 5) result.samples.push(`${door} ${status}: ${text.slice(0, 300)}`);
          if (status !== 0 && options.keepAcks) result.unanswered.push({ door, n }); // answered, but not a 2xx with a run
        }
      }
    }),
  );
  result.seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  result.clientCpuMs = (cpu.user + cpu.system) / 1000;
  result.latencies.sort((a, b) => a - b);
  return result;
}

// ---------------------------------------------------------------------------------------------
// One measurement (a cell: one door at one level in one round)

interface CellFigures {
  door: Door;
  inflight: number;
  round: number;
  requests: number;
  accepted: number;
  refused: number;
  refusedSamples: string[];
  seconds: number;
  acceptedPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  serverCpuMsPerRequest: number;
  pgCpuMsPerRequest: number;
  /** cluster processes other than the database's client backends (WAL writer, checkpointer, autovacuum, …), per request */
  pgOtherCpuMsPerRequest: number;
  clientCpuMsPerRequest: number;
  statementsPerRequest: number;
  /** pg_stat_database.xact_commit (read-only transactions included), read after SETTLE_MS of quiet; filled in later */
  commitsPerRequest?: number;
  /** transaction ids assigned (write transactions: each one a WAL flush at commit) */
  xidsPerRequest: number;
  /** WAL written in the window (pg_current_wal_insert_lsn; the whole cluster, only this door was running) */
  walBytesPerRequest: number;
  backendsGone: number;
  top: Array<{ query: string; perRequest: number }>;
}

/**
 * Per database: when its last load ended (its backends may still hold statistics back), and the cell whose commit count
 * waits for them.
 */
const quietSince = new Map<string, number>();
/** Commits per second of each database with no request (measured once, before the first round). */
const idleCommitsPerSecond: Record<string, number> = {};
const pendingCommits = new Map<string, { cell: CellFigures; x0: number; tx0: number }>();

/** Waits until `database` has been quiet for SETTLE_MS (if it was used), then fills in the commits of its pending cell. */
async function settle(database: string): Promise<void> {
  const since = quietSince.get(database);
  if (since !== undefined) {
    const wait = since + SETTLE_MS - performance.now();
    if (wait > 0) await sleep(wait);
    quietSince.delete(database);
  }
  const pending = pendingCommits.get(database);
  if (!pending) return;
  const t = await monitor.target(database);
  await t.flush();
  const x1 = await monitor.xactCommit(database);
  pending.cell.commitsPerRequest = (x1 - pending.x0 - (t.transactions - pending.tx0)) / Math.max(1, pending.cell.accepted);
  pendingCommits.delete(database);
}

async function walLsn(): Promise<string> {
  const [row] = await monitor.sql<{ lsn: string }>(`select pg_current_wal_insert_lsn()::text as lsn`);
  return row.lsn;
}

async function walBytesBetween(a: string, b: string): Promise<number> {
  const [row] = await monitor.sql<{ n: number }>(`select pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::float8 as n`, [a, b]);
  return row.n;
}

async function nextXid(): Promise<number> {
  const [row] = await monitor.sql<{ x: number }>(`select pg_snapshot_xmax(pg_current_snapshot())::text::float8 as x`);
  return row.x;
}

const MERCATO_INTAKE_TABLES = ['runs', 'steps', 'logs', 'webhook_deliveries', 'mcp_audits', 'rate_starts'];

async function emptyTables(door: Door, t: Target) {
  if (door === 'bare') await t.query('truncate bare_runs');
  else await t.query(`truncate ${MERCATO_INTAKE_TABLES.map((name) => `"${name}"`).join(', ')}`);
}

async function measureCell(door: Door, inflight: number, round: number): Promise<CellFigures> {
  const database = door === 'bare' ? DB.bare : DB.mercato;
  const pid = door === 'bare' ? bare!.child.pid! : server!.child.pid!;
  const t = await monitor.target(database);
  const countCommits = round <= SETTLE_ROUNDS;
  // (a cell of the last counting round still waiting for its commits is settled before this database is used again)
  if (countCommits || pendingCommits.has(database)) await settle(database);
  await emptyTables(door, t);
  const pools = new Map([[door, await openPool(originOf(door), inflight)]]);
  try {
    await t.flush();
    const x0 = await monitor.xactCommit(database);
    const tx0 = t.transactions;
    await monitor.resetStatements();
    const postmaster = postmasterPid(join(cluster.dir, 'data'));
    const xid0 = await nextXid();
    const wal0 = await walLsn();
    const cpu0 = treeCpuMs([pid]);
    const pg0 = postgresCpu(postmaster, database, MONITOR_USER);
    const r = await load([door], inflight, requestsAt(inflight), pools);
    const serverMs = treeCpuMs([pid]) - cpu0;
    const pgCpu = backendDeltaMs(pg0, postgresCpu(postmaster, database, MONITOR_USER));
    const xid1 = await nextXid();
    const wal1 = await walLsn();
    quietSince.set(database, performance.now());
    const statements = await monitor.statements(database);
    const per = (x: number) => x / Math.max(1, r.accepted);
    const cell: CellFigures = {
      door,
      inflight,
      round,
      requests: r.sent,
      accepted: r.accepted,
      refused: r.refused,
      refusedSamples: r.samples,
      seconds: r.seconds,
      acceptedPerSecond: r.accepted / r.seconds,
      p50Ms: percentile(r.latencies, 50),
      p99Ms: percentile(r.latencies, 99),
      maxMs: r.latencies[r.latencies.length - 1] ?? Number.NaN,
      serverCpuMsPerRequest: per(serverMs),
      pgCpuMsPerRequest: per(pgCpu.backendsMs),
      pgOtherCpuMsPerRequest: per(pgCpu.otherMs),
      clientCpuMsPerRequest: per(r.clientCpuMs),
      statementsPerRequest: per(sum(statements)),
      xidsPerRequest: per(xid1 - xid0),
      walBytesPerRequest: per(await walBytesBetween(wal0, wal1)),
      backendsGone: pgCpu.gone,
      top: statements.slice(0, 8).map((s) => ({ query: oneLine(s.query, 300), perRequest: per(s.calls) })),
    };
    if (countCommits) pendingCommits.set(database, { cell, x0, tx0 });
    progress(
      `r${round} ${door.padEnd(7)} ×${String(inflight).padEnd(3)}: ${fmt(cell.acceptedPerSecond, 0)}/s, p50 ${fmt(cell.p50Ms)} ms, p99 ${fmt(cell.p99Ms)} ms; ` +
        `CPU ${fmt(cell.serverCpuMsPerRequest, 3)} server + ${fmt(cell.pgCpuMsPerRequest, 3)} PostgreSQL ms/req; ` +
        `${fmt(cell.statementsPerRequest)} statements, ${fmt(cell.xidsPerRequest)} xids/req` +
        (r.refused > 0 ? `; ${r.refused} REFUSED, e.g. ${r.samples[0]}` : ''),
    );
    return cell;
  } finally {
    for (const pool of pools.values()) await pool.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The durability check

interface KillCheck {
  inflight: number;
  killAfterMs: number;
  /** per door: 2xx answers before the kill, how many of them have their run (webhooks: and their delivery), lost */
  doors: Record<string, { acknowledged: number; found: number; lost: number; unansweredStored: number; unanswered: number }>;
  acknowledged: number;
  found: number;
  lost: number;
  lostSamples: string[];
  /** requests without a 2xx (cut by the kill) whose run is in the database all the same (committed, answer lost) */
  unansweredStored: number;
  unanswered: number;
  restartMs: number;
  /** after the restart, one request per door answered 2xx */
  servesAfterRestart: boolean;
}

async function killCheck(): Promise<KillCheck> {
  const t = await monitor.target(DB.mercato);
  await emptyTables('api', t);
  const pools = new Map<Door, Pool>();
  const perDoor = Math.max(1, Math.ceil(KILL_INFLIGHT / MERCATO_DOORS.length));
  for (const door of MERCATO_DOORS) pools.set(door, await openPool(server!.url, perDoor));
  let killed = false;
  progress(`kill check: the four Mercato doors, ${KILL_INFLIGHT} in flight; SIGKILL of mercato start after ${KILL_AFTER_MS} ms`);
  const victim = server!;
  const loadPromise = load(MERCATO_DOORS, KILL_INFLIGHT, Number.MAX_SAFE_INTEGER, pools, {
    keepAcks: true,
    stop: () => killed,
  });
  await sleep(KILL_AFTER_MS);
  killed = true; // no loop sends another request: the ones in flight now are cut by the kill
  victim.child.kill('SIGKILL');
  await victim.exited;
  const r = await loadPromise;
  for (const pool of pools.values()) await pool.destroy();
  progress(`kill check: ${r.accepted} acknowledged before the kill, ${r.unanswered.length} cut or refused; restarting`);
  const restartStarted = performance.now();
  server = await startMercato();
  const restartMs = performance.now() - restartStarted;

  // every acknowledged request: its run, and for a webhook its delivery record pointing at that run
  const acked = r.acks;
  const runIds = acked.map((a) => a.runId);
  const foundRuns = new Set(
    (await t.query<{ id: string }>(`select id::text as id from runs where id = any($1::uuid[])`, [runIds])).map((row) => row.id),
  );
  const webhookAcks = acked.filter((a) => a.door === 'webhook');
  const deliveries = new Map(
    (
      await t.query<{ webhook_id: string; run_id: string | null }>(
        `select webhook_id, run_id::text as run_id from webhook_deliveries where webhook_id = any($1::text[])`,
        [webhookAcks.map((a) => webhookIdOf(a.n))],
      )
    ).map((row) => [row.webhook_id, row.run_id]),
  );
  const stored = new Set((await t.query<{ n: number }>(`select (input->>'n')::int as n from runs where input ? 'n'`)).map((row) => row.n));
  const webhookStored = new Set(
    (await t.query<{ n: number }>(`select (input->'payload'->>'id')::int as n from runs where flow_name = 'webhook:orders/create'`)).map(
      (row) => row.n,
    ),
  );
  const doorsOut: KillCheck['doors'] = {};
  const lostSamples: string[] = [];
  for (const door of MERCATO_DOORS) {
    const mine = acked.filter((a) => a.door === door);
    let found = 0;
    for (const a of mine) {
      const ok = foundRuns.has(a.runId) && (door !== 'webhook' || deliveries.get(webhookIdOf(a.n)) === a.runId);
      if (ok) found++;
      else if (lostSamples.length < 10) lostSamples.push(`${door} n=${a.n} run ${a.runId}`);
    }
    const unanswered = r.unanswered.filter((u) => u.door === door);
    const unansweredStored = unanswered.filter((u) => (door === 'webhook' ? webhookStored : stored).has(u.n)).length;
    doorsOut[door] = { acknowledged: mine.length, found, lost: mine.length - found, unansweredStored, unanswered: unanswered.length };
  }

  // the restarted server serves every door
  let servesAfterRestart = true;
  const after = new Map<Door, Pool>();
  for (const door of MERCATO_DOORS) after.set(door, await openPool(server.url, 1));
  for (const door of MERCATO_DOORS) {
    const check = await load([door], 1, 3, after);
    if (check.accepted !== 3) {
      servesAfterRestart = false;
      progress(`kill check: after the restart, ${door} answered ${check.samples.join(' | ')}`);
    }
  }
  for (const pool of after.values()) await pool.close();

  const totals = Object.values(doorsOut).reduce(
    (a, d) => ({
      acknowledged: a.acknowledged + d.acknowledged,
      found: a.found + d.found,
      lost: a.lost + d.lost,
      unansweredStored: a.unansweredStored + d.unansweredStored,
      unanswered: a.unanswered + d.unanswered,
    }),
    { acknowledged: 0, found: 0, lost: 0, unansweredStored: 0, unanswered: 0 },
  );
  const check: KillCheck = {
    inflight: KILL_INFLIGHT,
    killAfterMs: KILL_AFTER_MS,
    doors: doorsOut,
    ...totals,
    lostSamples,
    restartMs,
    servesAfterRestart,
  };
  progress(
    `kill check: ${check.acknowledged} acknowledged, ${check.found} found, ${check.lost} lost; ` +
      `${check.unanswered} cut by the kill (${check.unansweredStored} of them stored all the same); restart ${fmt(restartMs, 0)} ms`,
  );
  return check;
}

// ---------------------------------------------------------------------------------------------
// Summary

type FigureKey =
  | 'acceptedPerSecond'
  | 'p50Ms'
  | 'p99Ms'
  | 'serverCpuMsPerRequest'
  | 'pgCpuMsPerRequest'
  | 'statementsPerRequest'
  | 'commitsPerRequest'
  | 'xidsPerRequest'
  | 'walBytesPerRequest'
  | 'clientCpuMsPerRequest'
  | 'pgOtherCpuMsPerRequest';
const FIGURE_KEYS: FigureKey[] = [
  'acceptedPerSecond',
  'p50Ms',
  'p99Ms',
  'serverCpuMsPerRequest',
  'pgCpuMsPerRequest',
  'statementsPerRequest',
  'commitsPerRequest',
  'xidsPerRequest',
  'walBytesPerRequest',
  'clientCpuMsPerRequest',
  'pgOtherCpuMsPerRequest',
];

interface Summary {
  /** door → in-flight level → figure → spread over the rounds */
  figures: Record<string, Record<string, Record<FigureKey, Spread>>>;
  /** door → in-flight level → door's accepted/s ÷ the reference's, per round and min/median/max */
  ratios: Record<string, Record<string, Spread & { perRound: Array<number | undefined> }>>;
  /**
   * door → in-flight level → what this machine's CPUs allow, from the medians: every core busy with this door's work
   * (server + PostgreSQL + client CPU per request) gives `cpuCeilingPerSecond`; `ratioCeiling` is that ÷ the reference's
   * accepted/s; `ratioCeilingServerFree` the same with the server's CPU at zero (PostgreSQL and the client alone). A
   * target above `ratioCeilingServerFree` cannot be met on this machine, whatever the server does.
   */
  ceilings: Record<string, Record<string, Ceiling>>;
}

interface Ceiling {
  cpuMsPerRequest: number;
  cpuCeilingPerSecond: number;
  ratioCeiling: number;
  ratioCeilingServerFree: number;
  /** The server process's CPU per second at the measured rate (1 = one core: a Node process's main thread is one). */
  serverCores: number;
}

/** The CPU arithmetic of one cell (Summary.ceilings), from its figures' medians and the reference's accepted/s. */
function ceilingOf(f: Record<FigureKey, Spread>, referencePerSecond: number, cores: number): Ceiling | undefined {
  const server = f.serverCpuMsPerRequest.median;
  const pg = f.pgCpuMsPerRequest.median;
  const client = f.clientCpuMsPerRequest.median;
  const rate = f.acceptedPerSecond.median;
  if (server === undefined || pg === undefined || client === undefined || rate === undefined || !referencePerSecond) return undefined;
  const total = server + Math.max(pg, 0) + client;
  const ceiling = (cores * 1000) / total;
  return {
    cpuMsPerRequest: total,
    cpuCeilingPerSecond: ceiling,
    ratioCeiling: ceiling / referencePerSecond,
    ratioCeilingServerFree: (cores * 1000) / (Math.max(pg, 0) + client) / referencePerSecond,
    serverCores: (server * rate) / 1000,
  };
}

function summarize(cells: CellFigures[]): Summary {
  const figures: Summary['figures'] = {};
  const ratios: Summary['ratios'] = {};
  for (const door of doors) {
    figures[door] = {};
    if (door !== 'bare') ratios[door] = {};
    for (const level of LEVELS) {
      const mine = cells.filter((c) => c.door === door && c.inflight === level);
      figures[door][level] = Object.fromEntries(FIGURE_KEYS.map((k) => [k, spread(mine.map((c) => c[k]))])) as Record<FigureKey, Spread>;
      if (door === 'bare') continue;
      const perRound = Array.from({ length: ROUNDS }, (_, r) => {
        const a = cells.find((c) => c.door === door && c.inflight === level && c.round === r + 1);
        const b = cells.find((c) => c.door === 'bare' && c.inflight === level && c.round === r + 1);
        return a && b ? a.acceptedPerSecond / b.acceptedPerSecond : undefined;
      });
      ratios[door][level] = { ...spread(perRound), perRound };
    }
  }
  const ceilings: Summary['ceilings'] = {};
  for (const door of doors) {
    ceilings[door] = {};
    for (const level of LEVELS) {
      const c = ceilingOf(figures[door][level], figures.bare?.[level]?.acceptedPerSecond.median ?? 0, cpus().length);
      if (c) ceilings[door][level] = c;
    }
  }
  return { figures, ratios, ceilings };
}

function printSummary(summary: Summary, kill: KillCheck | undefined, pgVersion: string) {
  const out: string[] = [];
  const say = (line = '') => out.push(line);
  const cellOf = (s: Spread, d: number) => `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;
  say();
  say(
    `Front door: ${ROUNDS} round(s) × ${REQUESTS} requests per cell (${REQUESTS_AT_1} at 1 in flight); one mercato start process (pool 10), no worker; PostgreSQL ${pgVersion} ` +
      `(fsync, synchronous_commit on); ${cpus().length} CPU(s) shared by PostgreSQL, the server, the reference and the clients. ` +
      'Medians over the rounds (min–max).',
  );
  say();
  const rates = [['door', 'in flight', 'accepted/s', '× reference', 'p50 ms', 'p99 ms']];
  const costs = [
    ['door', 'in flight', 'server CPU ms', 'PostgreSQL CPU ms', 'statements', 'commits', 'xids', 'WAL bytes', 'client CPU ms'],
  ];
  for (const door of doors) {
    for (const level of LEVELS) {
      const f = summary.figures[door][level];
      const ratio = door === 'bare' ? undefined : summary.ratios[door][level];
      rates.push([
        door,
        String(level),
        cellOf(f.acceptedPerSecond, 0),
        ratio ? cellOf(ratio, 2) : '1',
        fmt(f.p50Ms.median, 2),
        fmt(f.p99Ms.median, 2),
      ]);
      costs.push([
        door,
        String(level),
        fmt(f.serverCpuMsPerRequest.median, 3),
        fmt(f.pgCpuMsPerRequest.median, 3),
        fmt(f.statementsPerRequest.median, 2),
        fmt(f.commitsPerRequest.median, 2),
        fmt(f.xidsPerRequest.median, 2),
        fmt(f.walBytesPerRequest.median, 0),
        fmt(f.clientCpuMsPerRequest.median, 3),
      ]);
    }
  }
  say('Rates and latency (accepted/s and the ratio: median (min–max) over the rounds; latency: medians)');
  say(table(rates, [0]));
  say();
  say('Costs per accepted request (medians over the rounds)');
  say(table(costs, [0]));
  say(
    `server CPU: the mercato start process (the reference's for bare), /proc; PostgreSQL CPU: the backends of its database; ` +
      `statements: pg_stat_statements, top level; commits: pg_stat_database.xact_commit after ${SETTLE_MS} ms of quiet, ` +
      `${SETTLE_ROUNDS >= ROUNDS ? 'every round' : `round${SETTLE_ROUNDS > 1 ? `s 1–${SETTLE_ROUNDS}` : ' 1'} only`}; ` +
      'xids: transaction ids assigned (write transactions); WAL: bytes of WAL written; client CPU: the benchmark process.',
  );
  say();
  const ceilingRows = [
    ['door', 'in flight', 'CPU ms/request', 'CPU ceiling/s', '× reference at most', 'same, server CPU 0', 'server cores used'],
  ];
  for (const door of doors) {
    for (const level of LEVELS) {
      const c = summary.ceilings[door]?.[level];
      if (!c || level < 8) continue;
      ceilingRows.push([
        door,
        String(level),
        fmt(c.cpuMsPerRequest, 3),
        fmt(c.cpuCeilingPerSecond, 0),
        door === 'bare' ? '' : fmt(c.ratioCeiling, 2),
        door === 'bare' ? '' : fmt(c.ratioCeilingServerFree, 2),
        fmt(c.serverCores, 2),
      ]);
    }
  }
  say();
  say(
    `What ${cpus().length} CPU(s) allow (medians): every core busy with a door's server + PostgreSQL + client CPU per request; ` +
      '"× reference at most" is that rate ÷ the reference\'s measured rate, "server CPU 0" the same with PostgreSQL and the ' +
      "client alone: a target above it cannot be met on this machine with the client on it. A Node server's main thread is " +
      'one core: "server cores used" near 1 means the server process is the bound.',
  );
  say(table(ceilingRows, [0]));
  say();
  say('Doors: ' + doors.map((d) => `${d} = ${LABELS[d]}`).join('; '));
  if (kill) {
    say();
    say(
      `Durability: ${kill.inflight} in flight over the four Mercato doors, mercato start SIGKILLed after ${kill.killAfterMs} ms, started again ` +
        `(${fmt(kill.restartMs, 0)} ms to listening).`,
    );
    say(
      table([
        ['door', 'acknowledged (2xx)', 'found', 'lost', 'cut by the kill', 'cut but stored'],
        ...Object.entries(kill.doors).map(([door, d]) => [
          door,
          String(d.acknowledged),
          String(d.found),
          String(d.lost),
          String(d.unanswered),
          String(d.unansweredStored),
        ]),
        ['all', String(kill.acknowledged), String(kill.found), String(kill.lost), String(kill.unanswered), String(kill.unansweredStored)],
      ]),
    );
    say(`Serves every door after the restart: ${kill.servesAfterRestart ? 'yes' : 'NO'}`);
  }
  console.log(out.join('\n'));
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const child of children) child.kill('SIGKILL');
      rmSync(APP_DIR, { recursive: true, force: true });
      if (process.listenerCount(signal) === 0) process.exit(130);
    });
  }
  console.log(
    `Mercato front-door benchmark: ${ROUNDS} round(s), ${REQUESTS} requests per cell (${REQUESTS_AT_1} at 1 in flight), in flight ${LEVELS.join('/')}, doors ${doors.join(', ')}`,
  );
  progress('building the mercato CLI if its dist/ is older than the sources');
  await runToEnd(process.execPath, [join(ROOT, 'packages/mercato/scripts/build.mjs'), '--js', '--if-stale', '--quiet'], {
    cwd: ROOT,
    env: process.env,
    label: 'mercato build (the engine may be in the middle of an edit: retry in a minute)',
  });

  // the engine measured is the one built now: its commit, and whether the working tree had engine changes not committed
  const ENGINE_PATHS = ['packages/mercato/src', 'packages/mercato/migrations'];
  const built = gitState(ENGINE_PATHS);

  progress('starting a private PostgreSQL 15 cluster (durable: fsync and synchronous_commit on; pg_stat_statements)');
  cluster = await startCluster({
    settings: {
      ...DURABLE_SETTINGS,
      'pg_stat_statements.max': 10000,
    },
  });
  const cells: CellFigures[] = [];
  let kill: KillCheck | undefined;
  try {
    monitor = await Monitor.open(urlOf);
    const [{ version }] = await monitor.sql<{ version: string }>(`select current_setting('server_version') as version`);
    for (const name of Object.values(DB)) await monitor.createDatabase(name);

    serverPort = await freePort();
    sim = await startSim({ apps: [{ apiKey: API_KEY, apiSecret: API_SECRET, appUrl: `http://127.0.0.1:${serverPort}` }], shops: [SHOP] });
    writeApp();
    progress(`mercato start on port ${serverPort} (app in ${APP_DIR}); the reference on its own port`);
    server = await startMercato();
    bare = await startBare();
    await installShop();

    progress(`warm-up: ${WARMUP} requests per door at 32 in flight`);
    for (const door of doors) {
      const pools = new Map([[door, await openPool(originOf(door), 32)]]);
      const r = await load([door], 32, WARMUP, pools);
      for (const pool of pools.values()) await pool.close();
      if (r.refused > 0) throw new Error(`warm-up of ${door}: ${r.refused} refused, e.g. ${r.samples.join(' | ')}`);
      quietSince.set(door === 'bare' ? DB.bare : DB.mercato, performance.now());
      progress(`warm-up ${door}: ${fmt(r.accepted / r.seconds, 0)}/s`);
    }

    // what each database commits with no request at all (the server's background work, autovacuum): counted in the
    // windows of the cells whose commits are read (their load plus SETTLE_MS), to be weighed against them
    await Promise.all(Object.values(DB).map((database) => settle(database)));
    const idleX0 = new Map<string, number>();
    for (const database of Object.values(DB)) {
      const t = await monitor.target(database);
      await t.flush();
      idleX0.set(database, (await monitor.xactCommit(database)) - t.transactions);
    }
    const idleStarted = performance.now();
    await sleep(SETTLE_MS);
    for (const database of Object.values(DB)) {
      const t = await monitor.target(database);
      await t.flush();
      const commits = (await monitor.xactCommit(database)) - t.transactions - idleX0.get(database)!;
      idleCommitsPerSecond[database] = commits / ((performance.now() - idleStarted) / 1000);
    }
    progress(
      `idle: ${fmt(idleCommitsPerSecond[DB.mercato], 2)} commits/s on Mercato's database, ${fmt(idleCommitsPerSecond[DB.bare], 2)} on the reference's`,
    );

    for (let round = 1; round <= ROUNDS; round++) {
      const shift = (round - 1) % doors.length;
      const order = [...doors.slice(shift), ...doors.slice(0, shift)];
      console.log(`Round ${round}/${ROUNDS}: in flight ${LEVELS.join(', ')}; doors ${order.join(', ')}`);
      for (const level of LEVELS) for (const door of order) cells.push(await measureCell(door, level, round));
    }
    for (const database of Object.values(DB)) if (pendingCommits.has(database)) await settle(database);

    // BENCH_KILL_CHECK=0 leaves it out (when profiling: a SIGKILLed server writes no profile)
    if (process.env.BENCH_KILL_CHECK !== '0') kill = await killCheck();

    const summary = summarize(cells);
    printSummary(summary, kill, version);
    const [{ v: fullVersion }] = await monitor.sql<{ v: string }>('select version() as v');
    const atEnd = gitState(ENGINE_PATHS);
    const result = {
      measuredAt: new Date().toISOString(),
      durationSeconds: Math.round((Date.now() - started) / 1000),
      commit: built.commit,
      engineUncommittedChanges: built.uncommittedChanges,
      /** HEAD moved while the benchmark ran (the processes kept running the build made at the start) */
      headAtEnd: atEnd.commit === built.commit ? undefined : atEnd.commit,
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model,
        node: process.version,
        postgres: fullVersion,
        clockTicksPerSecond: CLK_TCK,
      },
      settings: {
        rounds: ROUNDS,
        requestsPerCell: REQUESTS,
        requestsPerCellAt1InFlight: REQUESTS_AT_1,
        inflight: LEVELS,
        warmupPerDoor: WARMUP,
        settleMs: SETTLE_MS,
        settleRounds: SETTLE_ROUNDS,
        killInflight: KILL_INFLIGHT,
        killAfterMs: KILL_AFTER_MS,
        serverLogLevel: SERVER_LOG_LEVEL,
        doors: Object.fromEntries(doors.map((d) => [d, LABELS[d]])),
        server: 'one `mercato start` (NODE_ENV=production, MERCATO_DB_POOL_SIZE default 10), no worker',
        reference: 'bench/peers/bare-insert.ts: Hono + @hono/node-server + pg pool of 10, one INSERT … RETURNING id per request',
        client:
          'undici Pool per door and level, `in flight` keep-alive connections opened before the measurement, in the benchmark process',
        cluster: 'initdb defaults (fsync, synchronous_commit, full_page_writes on) + pg_stat_statements (track = top)',
      },
      idleCommitsPerSecond: { mercato: idleCommitsPerSecond[DB.mercato], bare: idleCommitsPerSecond[DB.bare] },
      cells,
      summary,
      killCheck: kill,
    };
    mkdirSync(dirname(OUT), { recursive: true });
    writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\nWritten: ${OUT} (${Math.round((Date.now() - started) / 1000)} s in all)`);
    if (kill && kill.lost > 0) process.exitCode = 1;
  } finally {
    await stopChild(server);
    await stopChild(bare);
    for (const child of children) child.kill('SIGKILL');
    await sim?.close();
    await monitor?.close();
    await cluster.destroy();
    rmSync(APP_DIR, { recursive: true, force: true });
  }
}

await main();
