/**
 * `npm run bench:tenancy` — the noisy neighbour: does one shop's backlog hold up the other shops' runs, and what does
 * fairness cost the big shop? Then the load-shaping rules (keyed concurrency, rateLimit, debounce) across 3 workers.
 *
 * On a private, durable PostgreSQL 15 cluster (the machinery of `npm run bench:flows`: initdb/pg_ctl on another loopback
 * port, fsync and synchronous_commit on), with the app bench/tenancy-app/service.config.ts installed on the platform
 * simulator's shops, one real `mercato start` process (the dispatch door, no worker) and real `mercato worker`
 * processes, per cell:
 *   - shop A gets BENCH_BACKLOG (300,000) queued one-step runs of `heavy`: one run dispatched through the API (the
 *     template), then a bulk `insert … select` of copies of its row (the same app, shop, flow, trigger, retry policy,
 *     priority and keys as the dispatch wrote; input { n }; created/available a minute ago, so that the FIFO claim
 *     serves them before anything dispatched later), then ANALYZE and CHECKPOINT;
 *   - ONE `mercato worker` at concurrency BENCH_CONCURRENCY (10), default prefetch, the claim fair (default) or FIFO
 *     (MERCATO_BENCH_FIFO_CLAIM=1 in its environment), `heavy`'s step of 0 or 50 ms (TENANCY_HEAVY_STEP_MS);
 *   - BENCH_LIGHT_SHOPS (200) other shops each dispatch BENCH_LIGHT_RATE (2) runs/s of `light` (step 0 ms) through
 *     the real door, POST /api/flows/light/run with a session token of the shop (open loop: a request every
 *     1000 / (shops × rate) ms, shops in turn, whether or not the earlier ones were answered; keep-alive connections);
 *   - after BENCH_WARMUP_S (5 s) of load, a window of BENCH_WINDOW_S (20 s; ended early, and said so, if shop A's
 *     pending runs fall below BENCH_LOW_BACKLOG, 10,000, checked every second: the backlog never runs out inside the
 *     window), then BENCH_GRACE_S (2 s) more of load, then the worker is stopped (SIGTERM: its running runs finish, its queued ones are handed back).
 * Dispatch → start latency of a light run: from the moment the benchmark sends its request (wall clock, stamped just
 * before the request is written, and carried in the input as `sentAt`) to the first line of the flow body in the
 * worker (wall clock, `performance.timeOrigin + performance.now()` in both processes: sub-millisecond, the same
 * machine clock), for every light run sent inside the window. A run whose body had not started by the cut-off (window
 * end + grace) counts as not started: its latency is more than (cut-off − sentAt) and a percentile that falls on such
 * runs is reported as "> x". Shop A's throughput: shop A's runs whose finished_at (database clock) falls inside the
 * window, per second.
 * Cells: heavy step 0 and 50 ms × claim fair and FIFO, BENCH_ROUNDS (3) rounds, the order rotated from round to round.
 *
 * Then, with 3 worker processes (fair claim, concurrency BENCH_CONCURRENCY each), through the same door:
 *   - concurrency { limit: 2 } (key: the shop): 4 shops × 20 runs holding 200 ms; each body's start and end (output);
 *     the most bodies of one key executing at once (a sweep over the intervals), never above 2;
 *   - rateLimit { limit: 5, period: '1s' } (key: the shop): 2 shops × 30 runs dispatched at once; the most starts in any
 *     1 s window per key, measured at claim time (the `at` the engine records in rate_starts inside the claim
 *     transaction, copied by a trigger of the benchmark into a log table, as the engine deletes the rows it no longer
 *     needs): the check, with no tolerance; and, for information, at body start (worker clock), which adds the claim →
 *     body delay of each run (its jitter can put 6 body starts inside 1 s: the tolerance that would take is reported);
 *   - debounce (period 3 s, key from the input): 1,000 dispatches with the same key, 16 in flight; distinct runIds
 *     answered, `joined: true` answers, runs of the flow in the table, runs executed.
 * Prints tables; writes bench/results/tenancy.json. Method and reading: docs/benchmarks.md, "Tenancy (noisy neighbour)".
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { type PlatformSim, start as startSim } from 'platform-sim';
import { signSessionToken } from '../packages/mercato/src/http/session-token.ts';
import { freePort, startCluster } from '../packages/mercato/test/kit/cluster.ts';
import { gitState } from './lib/git.ts';
import { runToEnd, spawnReady, stop } from './lib/processes.ts';
import { CLK_TCK, treeCpuMs } from './lib/proc.ts';
import { type Spread, fmt, percentile, spread, table } from './lib/stats.ts';
import { BIN, DURABLE_SETTINGS, ROOT, autoExplainSettings, keepServerLog, num } from './lib/common.ts';

const APP = join(ROOT, 'bench/tenancy-app/service.config.ts');

const ROUNDS = num('BENCH_ROUNDS', 3);
// 300,000: at 10,000 runs/s (0 ms steps on a quiet machine) 100,000 ran low 5–7 s into the window, and so short a window
// made shop A's ratio move by ±0.2 between rounds
const BACKLOG = num('BENCH_BACKLOG', 300_000);
const LIGHT_SHOPS = num('BENCH_LIGHT_SHOPS', 200);
const LIGHT_RATE = num('BENCH_LIGHT_RATE', 2);
const WARMUP_MS = num('BENCH_WARMUP_S', 5) * 1000;
const WINDOW_MS = num('BENCH_WINDOW_S', 20) * 1000;
const GRACE_MS = num('BENCH_GRACE_S', 2) * 1000;
const CONCURRENCY = num('BENCH_CONCURRENCY', 10);
const STEPS = (process.env.BENCH_STEPS ?? '0,50').split(',').map(Number);
const SHAPING = process.env.BENCH_SHAPING !== '0';
const LOAD = process.env.BENCH_LOAD !== '0';
const SHAPING_WORKERS = 3;
const DEBOUNCE_DISPATCHES = num('BENCH_DEBOUNCE_DISPATCHES', 1000);
/** The window ends early when shop A has fewer pending runs than this (a few seconds of its fastest throughput). */
const LOW_BACKLOG = Math.min(num('BENCH_LOW_BACKLOG', 10_000), Math.floor(BACKLOG / 4));
const OUT = resolve(ROOT, process.env.BENCH_OUT || 'bench/results/tenancy.json');
const ALL_CLAIMS = ['fair', 'fifo'] as const;
type Claim = (typeof ALL_CLAIMS)[number];
/** BENCH_CLAIMS=fair (or fifo) measures one claim only (for trying things; the ratios then have gaps). */
const CLAIMS = ALL_CLAIMS.filter((c) => (process.env.BENCH_CLAIMS ?? 'fair,fifo').split(',').includes(c));
/** BENCH_PREFETCH=<n>: the load cells' worker gets `--prefetch=<n>` (default: none, the configured default). */
const PREFETCH = process.env.BENCH_PREFETCH ?? '';

const API_KEY = 'bench-tenancy-key';
const API_SECRET = 'bench-tenancy-secret';
const ENCRYPTION_KEY = randomBytes(32).toString('hex');
const SHOP_A = 'shop-a.myshopify.com';
const lightShop = (i: number) => `light-${String(i).padStart(3, '0')}.myshopify.com`;
const LIGHT = Array.from({ length: LIGHT_SHOPS }, (_, i) => lightShop(i));
const DATABASE = 'bench_tenancy';

const progress = (line: string) => process.stdout.write(`  … ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Wall-clock ms with sub-millisecond resolution: the clock the flow bodies stamp their start with. */
const wallNow = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// Cluster, simulator, server, workers

type Cluster = Awaited<ReturnType<typeof startCluster>>;
let cluster: Cluster;
let sim: PlatformSim;
let db: pg.Client;
let server: { child: ChildProcess; url: string } | undefined;
const urlOf = (database: string) => `postgres://postgres@127.0.0.1:${cluster.port}/${database}`;
const baseEnv = Object.fromEntries(
  Object.entries(process.env).filter(([key]) => !key.startsWith('OTEL_') && key !== 'MERCATO_BENCH_FIFO_CLAIM'),
);
const appEnv = (): NodeJS.ProcessEnv => ({
  ...baseEnv,
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  DATABASE_URL: urlOf(DATABASE),
  PLATFORM_API_KEY: API_KEY,
  PLATFORM_API_SECRET: API_SECRET,
  PLATFORM_ORIGIN: sim.url,
  ENCRYPTION_KEY,
});

const q = async <T = Record<string, any>>(text: string, values?: unknown[]) => (await db.query(text, values)).rows as T[];

async function startServer(): Promise<void> {
  const port = await freePort();
  const child = await spawnReady(process.execPath, [BIN, 'start', '--port', String(port), '--config', APP], {
    cwd: ROOT,
    // the door knows every flow; the load cells' worker only heavy and light (TENANCY_SHAPING_FLOWS=0)
    env: { ...appEnv(), TENANCY_SHAPING_FLOWS: '1', HOST: `http://127.0.0.1:${port}`, MERCATO_BIND_ADDRESS: '127.0.0.1' },
    ready: /listening on (http:\/\/\S+)/,
    label: 'mercato start',
    timeoutMs: 90_000,
  });
  server = { child, url: `http://127.0.0.1:${port}` };
}

function startWorker(env: NodeJS.ProcessEnv, extraArgs: string[] = []): Promise<ChildProcess> {
  return spawnReady(process.execPath, [BIN, 'worker', '--config', APP, `--concurrency=${CONCURRENCY}`, ...extraArgs], {
    cwd: ROOT,
    env: { ...appEnv(), ...env },
    ready: /mercato worker .*concurrency/,
    label: 'mercato worker',
  });
}

// ---------------------------------------------------------------------------------------------
// HTTP: keep-alive connections to the door, session tokens per shop

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const tokens = new Map<string, { value: string; until: number }>();
/** Session tokens live 60 s: a shop's client keeps one for 20 s, as an embedded app caching its token would. */
function sessionToken(shop: string): string {
  const now = Date.now();
  let t = tokens.get(shop);
  if (!t || now >= t.until) {
    t = { value: signSessionToken({ apiKey: API_KEY, apiSecret: API_SECRET, shop }), until: now + 20_000 };
    tokens.set(shop, t);
  }
  return t.value;
}

function call(method: 'GET' | 'POST', path: string, shop: string, body?: unknown): Promise<{ status: number; text: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((done, fail) => {
    const req = request(
      `${server!.url}${path}`,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${sessionToken(shop)}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => done({ status: res.statusCode ?? 0, text }));
        res.on('error', fail);
      },
    );
    req.on('error', fail);
    req.end(payload);
  });
}

/** A dispatch through the door: POST /api/flows/<flow>/run. */
async function dispatch(
  shop: string,
  flow: string,
  input: unknown,
): Promise<{ status: number; runId?: string; joined?: boolean; text: string }> {
  const res = await call('POST', `/api/flows/${flow}/run`, shop, { input });
  let parsed: { runId?: string; joined?: boolean } = {};
  try {
    parsed = JSON.parse(res.text);
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, runId: parsed.runId, joined: parsed.joined, text: res.text };
}

/** The first session-token request of a shop installs it (token exchange with the simulator). */
async function installShops(shops: readonly string[]) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < shops.length) {
        const shop = shops[next++];
        const res = await call('GET', '/api/flows', shop);
        if (res.status !== 200) throw new Error(`GET /api/flows for ${shop}: ${res.status} ${res.text.slice(0, 300)}`);
      }
    }),
  );
  const [{ n }] = await q<{ n: number }>(`select count(*)::int as n from installations where status = 'active'`);
  if (n < shops.length) throw new Error(`only ${n} of ${shops.length} shops are installed`);
}

// ---------------------------------------------------------------------------------------------
// The light load: open loop, LIGHT_SHOPS × LIGHT_RATE dispatches per second

interface Sent {
  shop: string;
  sentAt: number;
  answeredAt?: number;
  status?: number;
  runId?: string;
}

function lightLoad() {
  const interval = 1000 / (LIGHT_SHOPS * LIGHT_RATE);
  const sent: Sent[] = [];
  const inflight = new Set<Promise<void>>();
  let running = true;
  let maxLagMs = 0;
  let errors = 0;
  const errorSamples: string[] = [];
  const t0 = wallNow();
  const loop = (async () => {
    let j = 0;
    while (running) {
      const now = wallNow();
      while (running && t0 + j * interval <= now) {
        maxLagMs = Math.max(maxLagMs, now - (t0 + j * interval));
        const record: Sent = { shop: LIGHT[j % LIGHT_SHOPS], sentAt: 0 };
        j++;
        sent.push(record);
        record.sentAt = wallNow();
        const p = dispatch(record.shop, 'light', { sentAt: record.sentAt }).then(
          (res) => {
            record.answeredAt = wallNow();
            record.status = res.status;
            record.runId = res.runId;
            if (res.status !== 202) {
              errors++;
              if (errorSamples.length < 5) errorSamples.push(`${res.status} ${res.text.slice(0, 200)}`);
            }
          },
          (error: Error) => {
            errors++;
            if (errorSamples.length < 5) errorSamples.push(String(error.message));
          },
        );
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
      }
      await sleep(1);
    }
  })();
  return {
    sent,
    get maxLagMs() {
      return maxLagMs;
    },
    get errors() {
      return errors;
    },
    errorSamples,
    async stop() {
      running = false;
      await loop;
      await Promise.all([...inflight]);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Figures

/** Percentiles of latencies where a run that had not started is +Infinity (its latency is only known to be above a bound). */
interface Censored {
  /** ms, or null when the percentile falls on runs that had not started by the cut-off */
  value: number | null;
  /** when value is null: the latency is above this (the smallest bound among the runs not started), ms */
  above?: number;
}

function censoredPercentile(sorted: readonly number[], bounds: readonly number[], p: number): Censored {
  const value = percentile(sorted, p);
  if (Number.isFinite(value)) return { value };
  return { value: null, above: Math.min(...bounds) };
}

/** A value of a censored spread: +Infinity when the percentile fell on runs not started by the cut-off. */
const showBound = (x: number, decimals = 1) => (Number.isFinite(x) ? fmt(x, decimals) : x > 0 ? 'not started' : '–');
const showCensored = (c: Censored | undefined, decimals = 1) =>
  !c ? '–' : c.value !== null ? fmt(c.value, decimals) : `> ${fmt((c.above ?? 0) / 1000, 1)} s`;

interface CellFigures {
  round: number;
  stepMs: number;
  claim: Claim;
  backlog: number;
  windowSeconds: number;
  /** the window was cut short: shop A's backlog fell below BENCH_LOW_BACKLOG */
  windowEndedEarly: boolean;
  /** light runs sent inside the window (answered 202) */
  lightSent: number;
  lightStarted: number;
  lightNotStarted: number;
  latencyP50: Censored;
  latencyP90: Censored;
  latencyP99: Censored;
  latencyMax: Censored;
  /**
   * p50 / p99 of the parts of the latency: request sent → runs.started_at (database clock: the claim at commit 15f6a4b;
   * for a run claimed ahead, the start the worker records, in engines that record it), runs.started_at → body
   */
  sentToClaimP50: number;
  sentToClaimP99: number;
  claimToBodyP50: number;
  claimToBodyP99: number;
  /** the part after the door answered: 202 received → body start (negative when the body started first) */
  answerToBodyP50: number;
  answerToBodyP99: number;
  /** request sent → 202 answer */
  dispatchHttpP50: number;
  dispatchHttpP99: number;
  dispatchErrors: number;
  dispatchErrorSamples: string[];
  /** largest delay of the benchmark's open-loop schedule (its own process was late by this much at most) */
  loadScheduleMaxLagMs: number;
  /** shop A's runs finished inside the window, per second */
  shopARunsPerSecond: number;
  /** light runs finished inside the window, per second */
  lightRunsPerSecond: number;
  /** shop A's runs still pending at the end of the window (0: its backlog ran out and the throughput is a floor) */
  shopABacklogLeft: number;
  /** CPU of the worker process and of the `mercato start` process over the window, in cores (1.0 = one core) */
  workerCores: number;
  serverCores: number;
  /** Executions of the claim statement inside the window (pg_stat_statements), per second, and runs per claim */
  claimsPerSecond: number;
  runsPerClaim: number;
  /** shop A's runs whose available_at moved after the backlog was queued (handed back unstarted, or recovered) */
  shopARunsMovedBack: number;
  /** pg_stat_statements over the window: the claim statement's calls/s and mean ms, and the top statements by total time */
  claimStatement: { calls: number; meanMs: number; totalMsPerSecond: number } | null;
  topStatements: Array<{ query: string; callsPerSecond: number; meanMs: number; totalMsPerSecond: number }>;
}

interface StatementStat {
  query: string;
  calls: number;
  total: number;
  rows: number;
}

async function statementStats(): Promise<StatementStat[]> {
  return q<StatementStat>(
    `select query, calls::float8 as calls, total_exec_time::float8 as total, rows::float8 as rows from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database()) order by total_exec_time desc`,
  );
}

/**
 * The fair claim (claim_fair: the walk) or the FIFO claim (claim_fifo: `with due as (… order by available_at …)`) of
 * flows/store/claim.ts, as pg_stat_statements shows them; not the gated claim (`id = any($1::uuid[])`).
 */
const isClaim = (query: string) =>
  /update runs r set/i.test(query) &&
  !/any\(\$1::uuid\[\]\)/i.test(query) &&
  (/with recursive walk/i.test(query) || (/^\s*with due as \(/i.test(query) && /order by available_at/i.test(query)));
const oneLine = (query: string, max = 140) => {
  const flat = query.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

async function resetRuns() {
  await q(`truncate runs, rate_starts, bench_rate_log cascade`);
}

async function queueBacklog(): Promise<void> {
  const template = await dispatch(SHOP_A, 'heavy', { n: 0 });
  if (template.status !== 202 || !template.runId) throw new Error(`template dispatch: ${template.status} ${template.text}`);
  // rows shaped like the dispatched one; a minute old, so that they come before anything dispatched later in FIFO order
  await q(
    `update runs set created_at = now() - interval '1 minute', available_at = now() - interval '1 minute', updated_at = now() - interval '1 minute' where id = $1`,
    [template.runId],
  );
  await q(
    `insert into runs (app_handle, shop, flow_name, status, trigger, input, retry_policy, parent_run_id, trace_context, priority,
                       concurrency_key, rate_key, created_at, available_at, updated_at)
     select t.app_handle, t.shop, t.flow_name, t.status, t.trigger, jsonb_build_object('n', g), t.retry_policy, t.parent_run_id,
            t.trace_context, t.priority, t.concurrency_key, t.rate_key,
            t.created_at + g * interval '1 microsecond', t.available_at + g * interval '1 microsecond', t.updated_at
     from runs t cross join generate_series(1, $2::int) g where t.id = $1`,
    [template.runId, BACKLOG - 1],
  );
  await q('analyze runs');
  await q('checkpoint');
}

async function measureCell(round: number, stepMs: number, claim: Claim): Promise<CellFigures> {
  const tag = `round ${round} step ${stepMs} ms ${claim}`;
  await resetRuns();
  progress(`${tag}: queueing ${BACKLOG} runs of shop A`);
  await queueBacklog();
  const [{ t: queuedAt }] = await q<{ t: string }>(`select clock_timestamp()::text as t`);
  // a worker that knows only `heavy` and `light`: no gated flow, so its claim is the ungated claim alone
  const worker = await startWorker(
    {
      TENANCY_SHAPING_FLOWS: '0',
      TENANCY_HEAVY_STEP_MS: String(stepMs),
      ...(claim === 'fifo' ? { MERCATO_BENCH_FIFO_CLAIM: '1' } : {}),
    },
    PREFETCH ? [`--prefetch=${PREFETCH}`] : [],
  );
  let load: ReturnType<typeof lightLoad> | undefined;
  try {
    progress(`${tag}: worker up; light load ${LIGHT_SHOPS} shops × ${LIGHT_RATE}/s; warm-up ${WARMUP_MS / 1000} s`);
    load = lightLoad();
    await sleep(WARMUP_MS);
    const w0 = wallNow();
    const [{ t: t0db }] = await q<{ t: string }>(`select clock_timestamp()::text as t`);
    const cpu0 = { worker: treeCpuMs([worker.pid!]), server: treeCpuMs([server!.child.pid!]) };
    await q('select pg_stat_statements_reset()');
    // the window is WINDOW_MS, cut short if shop A's backlog runs low (it must not run out inside the window)
    let endedEarly = false;
    while (wallNow() - w0 < WINDOW_MS) {
      await sleep(Math.min(1000, WINDOW_MS - (wallNow() - w0)));
      const [{ n }] = await q<{ n: number }>(`select count(*)::int as n from runs where shop = $1 and status = 'pending'`, [SHOP_A]);
      if (n < LOW_BACKLOG) {
        endedEarly = true;
        progress(`${tag}: shop A's backlog is down to ${n}: the window ends after ${fmt((wallNow() - w0) / 1000, 1)} s`);
        break;
      }
    }
    const stats = await statementStats();
    const w1 = wallNow();
    const [{ t: t1db }] = await q<{ t: string }>(`select clock_timestamp()::text as t`);
    const cpu1 = { worker: treeCpuMs([worker.pid!]), server: treeCpuMs([server!.child.pid!]) };
    const [{ left }] = await q<{ left: number }>(`select count(*)::int as left from runs where shop = $1 and status = 'pending'`, [SHOP_A]);
    const [moved] = await q<{ n: number }>(`select count(*)::int as n from runs where shop = $1 and available_at > $2::timestamptz`, [
      SHOP_A,
      queuedAt,
    ]);
    await sleep(GRACE_MS);
    const cutoff = wallNow();
    await stop([worker]);
    await load.stop();
    const windowSeconds = (w1 - w0) / 1000;

    const [done] = await q<{ a: number; light: number }>(
      `select count(*) filter (where shop = $1)::int as a, count(*) filter (where flow_name = 'light')::int as light
         from runs where status = 'completed' and finished_at >= $2::timestamptz and finished_at < $3::timestamptz`,
      [SHOP_A, t0db, t1db],
    );
    const rows = await q<{ id: string; status: string; body: number | null; claimed: number | null }>(
      `select id, status, (output->>'startedAt')::float8 as body, extract(epoch from started_at)::float8 * 1000 as claimed
         from runs where flow_name = 'light'`,
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    const inWindow = load.sent.filter((s) => s.sentAt >= w0 && s.sentAt < w1 && s.status === 202 && s.runId);
    const latencies: number[] = [];
    const bounds: number[] = [];
    const toClaim: number[] = [];
    const toBody: number[] = [];
    const afterAnswer: number[] = [];
    for (const s of inWindow) {
      const r = byId.get(s.runId!);
      if (r && r.status === 'completed' && r.body !== null && r.body <= cutoff) {
        latencies.push(r.body - s.sentAt);
        if (s.answeredAt !== undefined) afterAnswer.push(r.body - s.answeredAt);
        if (r.claimed !== null) {
          toClaim.push(r.claimed - s.sentAt);
          toBody.push(r.body - r.claimed);
        }
      } else {
        latencies.push(Number.POSITIVE_INFINITY);
        bounds.push(cutoff - s.sentAt);
      }
    }
    const claimRows = stats.filter((r) => isClaim(r.query));
    const claimCalls = claimRows.reduce((n, r) => n + r.calls, 0);
    const claimTotal = claimRows.reduce((n, r) => n + r.total, 0);
    const claimedRows = claimRows.reduce((n, r) => n + r.rows, 0);
    latencies.sort((a, b) => a - b);
    toClaim.sort((a, b) => a - b);
    toBody.sort((a, b) => a - b);
    afterAnswer.sort((a, b) => a - b);
    const http = load.sent
      .filter((s) => s.sentAt >= w0 && s.sentAt < w1 && s.answeredAt !== undefined)
      .map((s) => s.answeredAt! - s.sentAt)
      .sort((a, b) => a - b);
    const figures: CellFigures = {
      round,
      stepMs,
      claim,
      backlog: BACKLOG,
      windowSeconds,
      windowEndedEarly: endedEarly,
      lightSent: inWindow.length,
      lightStarted: latencies.filter(Number.isFinite).length,
      lightNotStarted: bounds.length,
      latencyP50: censoredPercentile(latencies, bounds, 50),
      latencyP90: censoredPercentile(latencies, bounds, 90),
      latencyP99: censoredPercentile(latencies, bounds, 99),
      latencyMax: censoredPercentile(latencies, bounds, 100),
      sentToClaimP50: percentile(toClaim, 50),
      sentToClaimP99: percentile(toClaim, 99),
      claimToBodyP50: percentile(toBody, 50),
      claimToBodyP99: percentile(toBody, 99),
      answerToBodyP50: percentile(afterAnswer, 50),
      answerToBodyP99: percentile(afterAnswer, 99),
      dispatchHttpP50: percentile(http, 50),
      dispatchHttpP99: percentile(http, 99),
      dispatchErrors: load.errors,
      dispatchErrorSamples: load.errorSamples,
      loadScheduleMaxLagMs: load.maxLagMs,
      shopARunsPerSecond: done.a / windowSeconds,
      lightRunsPerSecond: done.light / windowSeconds,
      shopABacklogLeft: left,
      workerCores: (cpu1.worker - cpu0.worker) / (w1 - w0),
      serverCores: (cpu1.server - cpu0.server) / (w1 - w0),
      claimsPerSecond: claimCalls / windowSeconds,
      runsPerClaim: claimedRows / Math.max(1, claimCalls),
      shopARunsMovedBack: moved.n,
      claimStatement:
        claimCalls > 0 ? { calls: claimCalls, meanMs: claimTotal / claimCalls, totalMsPerSecond: claimTotal / windowSeconds } : null,
      topStatements: stats.slice(0, 6).map((r) => ({
        query: oneLine(r.query, 300),
        callsPerSecond: r.calls / windowSeconds,
        meanMs: r.total / Math.max(1, r.calls),
        totalMsPerSecond: r.total / windowSeconds,
      })),
    };
    progress(
      `${tag}: light dispatch → start p50 ${showCensored(figures.latencyP50)}, p99 ${showCensored(figures.latencyP99)} (ms) ` +
        `(${figures.lightStarted}/${figures.lightSent} started); shop A ${fmt(figures.shopARunsPerSecond, 0)} runs/s, ` +
        `light ${fmt(figures.lightRunsPerSecond, 0)} runs/s; backlog left ${left}; worker ${fmt(figures.workerCores)} cores, ` +
        `server ${fmt(figures.serverCores)} cores; ${fmt(figures.claimsPerSecond, 0)} claims/s of ${fmt(figures.runsPerClaim, 1)} runs, ` +
        `claim statement ${fmt(figures.claimStatement?.meanMs, 2)} ms mean; shop A runs moved back ${moved.n}; ` +
        `dispatch errors ${figures.dispatchErrors}`,
    );
    if (left === 0) progress(`${tag}: warning: shop A's backlog ran out inside the window (its throughput is a floor)`);
    return figures;
  } finally {
    await stop([worker]);
    await load?.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Load shaping across 3 workers

async function waitCompleted(flow: string, count: number, timeoutMs: number) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await q<{ done: number; bad: number }>(
      `select count(*) filter (where status = 'completed')::int as done,
              count(*) filter (where status in ('failed','canceled'))::int as bad from runs where flow_name = $1`,
      [flow],
    );
    if (row.bad > 0) throw new Error(`${flow}: ${row.bad} run(s) failed or were canceled`);
    if (row.done >= count) return;
    if (Date.now() > until) throw new Error(`${flow}: ${row.done}/${count} completed after ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** The most intervals open at once (an end at the same instant as a start closes first). */
function maxOverlap(intervals: ReadonlyArray<[number, number]>): number {
  const events = intervals.flatMap(([s, e]) => [
    [s, 1],
    [e, -1],
  ]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let most = 0;
  for (const [, d] of events) {
    open += d;
    most = Math.max(most, open);
  }
  return most;
}

/** The most of `times` (ms, any order) inside any window [t, t + width). */
function maxInWindow(times: readonly number[], width: number): number {
  const t = [...times].sort((a, b) => a - b);
  let most = 0;
  let j = 0;
  for (let i = 0; i < t.length; i++) {
    while (t[i] - t[j] >= width) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/** The shortest span of `limit + 1` consecutive starts (≥ the period when the limit held). */
function minSpan(times: readonly number[], limit: number): number {
  const t = [...times].sort((a, b) => a - b);
  let min = Number.POSITIVE_INFINITY;
  for (let i = limit; i < t.length; i++) min = Math.min(min, t[i] - t[i - limit]);
  return min;
}

async function dispatchAll(items: ReadonlyArray<{ shop: string; flow: string; input: unknown }>, inflight: number) {
  const answers: Array<Awaited<ReturnType<typeof dispatch>>> = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (next < items.length) {
        const i = next++;
        answers[i] = await dispatch(items[i].shop, items[i].flow, items[i].input);
      }
    }),
  );
  return answers;
}

interface ShapingFigures {
  concurrency: {
    limit: number;
    keys: number;
    runsPerKey: number;
    holdMs: number;
    /** per key (shop): the most bodies executing at once (worker clock), and the most runs `running` at once by the
     * database's started_at → finished_at (started_at is the claim transaction's start, so this one may overstate) */
    perKey: Array<{ key: string; maxBodies: number; maxDbIntervals: number; workers: number }>;
    maxBodies: number;
    seconds: number;
    met: boolean;
  };
  rate: {
    limit: number;
    periodMs: number;
    keys: number;
    runsPerKey: number;
    seconds: number;
    perKey: Array<{
      key: string;
      /** claim time (rate_starts.at): most starts in any 1 s window; shortest span of limit + 1 consecutive starts */
      claimMaxIn1s: number;
      claimMinSpanMs: number;
      /** body start (worker clock), for information: most starts in any 1 s window; shortest span of limit + 1 starts;
       * the tolerance a body-start check would need (1000 − that span, or 0) */
      bodyMaxIn1s: number;
      bodyMinSpanMs: number;
      bodyToleranceNeededMs: number;
      workers: number;
      seconds: number;
    }>;
    met: boolean;
  };
  debounce: {
    dispatches: number;
    inflight: number;
    periodMs: number;
    accepted: number;
    distinctRunIds: number;
    joinedAnswers: number;
    runsInTable: number;
    runsExecuted: number;
    dispatchSeconds: number;
    executedInputN: number | null;
    met: boolean;
  };
}

async function shaping(): Promise<ShapingFigures> {
  await resetRuns();
  progress(`shaping: starting ${SHAPING_WORKERS} worker processes (fair claim, concurrency ${CONCURRENCY} each)`);
  const workers = await Promise.all(Array.from({ length: SHAPING_WORKERS }, () => startWorker({ TENANCY_SHAPING_FLOWS: '1' })));
  try {
    // keyed concurrency
    const cKeys = LIGHT.slice(0, 4);
    const runsPerKey = 20;
    const holdMs = 200;
    const c0 = Date.now();
    const cAnswers = await dispatchAll(
      cKeys.flatMap((shop) => Array.from({ length: runsPerKey }, () => ({ shop, flow: 'limited', input: { hold: holdMs } }))),
      16,
    );
    const refused = cAnswers.filter((a) => a.status !== 202);
    if (refused.length > 0) throw new Error(`limited: ${refused.length} dispatches refused, e.g. ${refused[0].status} ${refused[0].text}`);
    await waitCompleted('limited', cKeys.length * runsPerKey, 120_000);
    const cSeconds = (Date.now() - c0) / 1000;
    const cRows = await q<{ shop: string; s: number; e: number; pid: number; ds: number; de: number }>(
      `select shop, (output->>'startedAt')::float8 as s, (output->>'endedAt')::float8 as e, (output->>'pid')::int as pid,
              extract(epoch from started_at)::float8 * 1000 as ds, extract(epoch from finished_at)::float8 * 1000 as de
         from runs where flow_name = 'limited'`,
    );
    const perKeyC = cKeys.map((key) => {
      const mine = cRows.filter((r) => r.shop === key);
      return {
        key,
        maxBodies: maxOverlap(mine.map((r) => [r.s, r.e])),
        // started_at is the claim transaction's now(), taken before it waits for the key's lock: an upper bound
        maxDbIntervals: maxOverlap(mine.map((r) => [r.ds, r.de])),
        workers: new Set(mine.map((r) => r.pid)).size,
      };
    });
    const maxBodies = Math.max(...perKeyC.map((k) => k.maxBodies));
    progress(
      `shaping: concurrency { limit: 2 }: most bodies at once per key ${perKeyC.map((k) => k.maxBodies).join(', ')} ` +
        `(database intervals ${perKeyC.map((k) => k.maxDbIntervals).join(', ')}); ${fmt(cSeconds, 1)} s`,
    );

    // rate limit
    const rKeys = LIGHT.slice(4, 6);
    const rRuns = 30;
    const r0 = Date.now();
    const rAnswers = await dispatchAll(
      rKeys.flatMap((shop) => Array.from({ length: rRuns }, () => ({ shop, flow: 'throttled', input: {} }))),
      16,
    );
    if (rAnswers.some((a) => a.status !== 202)) throw new Error('throttled: a dispatch was refused');
    await waitCompleted('throttled', rKeys.length * rRuns, 120_000);
    const rSeconds = (Date.now() - r0) / 1000;
    const bodies = await q<{ shop: string; s: number; pid: number }>(
      `select shop, (output->>'startedAt')::float8 as s, (output->>'pid')::int as pid from runs where flow_name = 'throttled'`,
    );
    const claims = await q<{ key: string; at: number }>(`select key, extract(epoch from at)::float8 * 1000 as at from bench_rate_log`);
    const perKeyR = rKeys.map((key) => {
      const b = bodies.filter((r) => r.shop === key).map((r) => r.s);
      const c = claims.filter((r) => JSON.parse(r.key)[2] === key).map((r) => r.at);
      if (c.length !== rRuns) throw new Error(`throttled ${key}: ${c.length} claim records for ${rRuns} runs`);
      return {
        key,
        claimMaxIn1s: maxInWindow(c, 1000),
        claimMinSpanMs: minSpan(c, 5),
        bodyMaxIn1s: maxInWindow(b, 1000),
        bodyMinSpanMs: minSpan(b, 5),
        bodyToleranceNeededMs: Math.max(0, 1000 - minSpan(b, 5)),
        workers: new Set(bodies.filter((r) => r.shop === key).map((r) => r.pid)).size,
        seconds: (Math.max(...b) - Math.min(...b)) / 1000,
      };
    });
    progress(
      `shaping: rateLimit 5/1s: most claims in 1 s ${perKeyR.map((k) => k.claimMaxIn1s).join(', ')}, most body starts in ` +
        `1 s ${perKeyR.map((k) => k.bodyMaxIn1s).join(', ')}; shortest span of 6 claims ` +
        `${perKeyR.map((k) => fmt(k.claimMinSpanMs, 1)).join(', ')} ms`,
    );

    // debounce
    const dShop = LIGHT[6];
    const periodMs = 3000;
    const d0 = performance.now();
    const dAnswers = await dispatchAll(
      Array.from({ length: DEBOUNCE_DISPATCHES }, (_, n) => ({ shop: dShop, flow: 'debounced', input: { key: 'bench-key', n } })),
      16,
    );
    const dispatchSeconds = (performance.now() - d0) / 1000;
    const accepted = dAnswers.filter((a) => a.status === 202);
    const ids = new Set(accepted.map((a) => a.runId));
    await waitCompleted('debounced', ids.size, 60_000);
    await sleep(periodMs + 1000); // anything else that might start would have by now
    const [dRow] = await q<{ runs: number; executed: number; n: number | null }>(
      `select count(*)::int as runs, count(*) filter (where status = 'completed')::int as executed,
              max((output->>'n')::int) as n from runs where flow_name = 'debounced'`,
    );
    const debounce = {
      dispatches: DEBOUNCE_DISPATCHES,
      inflight: 16,
      periodMs,
      accepted: accepted.length,
      distinctRunIds: ids.size,
      joinedAnswers: accepted.filter((a) => a.joined === true).length,
      runsInTable: dRow.runs,
      runsExecuted: dRow.executed,
      dispatchSeconds,
      executedInputN: dRow.n,
      met: accepted.length === DEBOUNCE_DISPATCHES && ids.size === 1 && dRow.runs === 1 && dRow.executed === 1,
    };
    progress(
      `shaping: debounce: ${debounce.accepted} accepted in ${fmt(dispatchSeconds, 1)} s, ${debounce.distinctRunIds} distinct runId(s), ` +
        `${debounce.joinedAnswers} joined, ${debounce.runsInTable} run(s) in the table, ${debounce.runsExecuted} executed`,
    );
    return {
      concurrency: {
        limit: 2,
        keys: cKeys.length,
        runsPerKey,
        holdMs,
        perKey: perKeyC,
        maxBodies,
        seconds: cSeconds,
        met: maxBodies <= 2,
      },
      rate: {
        limit: 5,
        periodMs: 1000,
        keys: rKeys.length,
        runsPerKey: rRuns,
        perKey: perKeyR,
        seconds: rSeconds,
        met: perKeyR.every((k) => k.claimMaxIn1s <= 5),
      },
      debounce,
    };
  } finally {
    await stop(workers);
  }
}

// ---------------------------------------------------------------------------------------------
// Summary

const variantKey = (stepMs: number, claim: Claim) => `step${stepMs}-${claim}`;
const TARGETS: Record<number, { p50: number; p99: number }> = { 0: { p50: 20, p99: 100 }, 50: { p50: 70, p99: 150 } };
const THROUGHPUT_RATIO_TARGET = 0.9;

/** A censored median over rounds: the finite values' spread when every round has one, else null parts. */
function censoredSpread(values: Censored[]): Spread & { rounds: string[] } {
  const finite = values.map((v) => (v.value === null ? Number.POSITIVE_INFINITY : v.value));
  const sorted = [...finite].sort((a, b) => a - b);
  return {
    min: sorted[0],
    median: percentile(sorted, 50),
    max: sorted[sorted.length - 1],
    rounds: values.map((v) => showCensored(v)),
  };
}

function summarize(cells: CellFigures[]) {
  const variants = STEPS.flatMap((stepMs) =>
    CLAIMS.map((claim) => {
      const mine = cells.filter((c) => c.stepMs === stepMs && c.claim === claim).sort((a, b) => a.round - b.round);
      return {
        key: variantKey(stepMs, claim),
        stepMs,
        claim,
        latencyP50: censoredSpread(mine.map((c) => c.latencyP50)),
        latencyP99: censoredSpread(mine.map((c) => c.latencyP99)),
        latencyMax: censoredSpread(mine.map((c) => c.latencyMax)),
        notStarted: spread(mine.map((c) => c.lightNotStarted / Math.max(1, c.lightSent))),
        sentToClaimP50: spread(mine.map((c) => c.sentToClaimP50)),
        sentToClaimP99: spread(mine.map((c) => c.sentToClaimP99)),
        claimToBodyP50: spread(mine.map((c) => c.claimToBodyP50)),
        claimToBodyP99: spread(mine.map((c) => c.claimToBodyP99)),
        answerToBodyP99: spread(mine.map((c) => c.answerToBodyP99)),
        dispatchHttpP50: spread(mine.map((c) => c.dispatchHttpP50)),
        dispatchHttpP99: spread(mine.map((c) => c.dispatchHttpP99)),
        shopARunsPerSecond: spread(mine.map((c) => c.shopARunsPerSecond)),
        lightRunsPerSecond: spread(mine.map((c) => c.lightRunsPerSecond)),
        workerCores: spread(mine.map((c) => c.workerCores)),
        serverCores: spread(mine.map((c) => c.serverCores)),
        claimsPerSecond: spread(mine.map((c) => c.claimsPerSecond)),
        windowSeconds: spread(mine.map((c) => c.windowSeconds)),
        runsPerClaim: spread(mine.map((c) => c.runsPerClaim)),
        claimMeanMs: spread(mine.map((c) => c.claimStatement?.meanMs)),
        backlogRanOut: mine.filter((c) => c.shopABacklogLeft === 0).length,
      };
    }),
  );
  const ratios = STEPS.map((stepMs) => {
    const rounds = [...new Set(cells.map((c) => c.round))].sort((a, b) => a - b);
    const perRound = rounds.map((round) => {
      const fair = cells.find((c) => c.round === round && c.stepMs === stepMs && c.claim === 'fair');
      const fifo = cells.find((c) => c.round === round && c.stepMs === stepMs && c.claim === 'fifo');
      return fair && fifo ? fair.shopARunsPerSecond / fifo.shopARunsPerSecond : undefined;
    });
    const perRoundTotal = rounds.map((round) => {
      const fair = cells.find((c) => c.round === round && c.stepMs === stepMs && c.claim === 'fair');
      const fifo = cells.find((c) => c.round === round && c.stepMs === stepMs && c.claim === 'fifo');
      return fair && fifo
        ? (fair.shopARunsPerSecond + fair.lightRunsPerSecond) / (fifo.shopARunsPerSecond + fifo.lightRunsPerSecond)
        : undefined;
    });
    // With 0 ms steps the machine is CPU-bound and a light run costs what one of shop A's costs: the FIFO claim spends
    // on A the capacity the fair claim gives the light shops (their runs wait out the window behind A's backlog). So a
    // fair claim with no cost of its own reaches at most (FIFO's A − fair's light) ÷ FIFO's A on shop A's ratio.
    const perRoundCeiling = rounds.map((round) => {
      const fair = cells.find((c) => c.round === round && c.stepMs === stepMs && c.claim === 'fair');
      const fifo = cells.find((c) => c.round === round && c.stepMs === stepMs && c.claim === 'fifo');
      return stepMs === 0 && fair && fifo
        ? (fifo.shopARunsPerSecond + fifo.lightRunsPerSecond - fair.lightRunsPerSecond) / fifo.shopARunsPerSecond
        : undefined;
    });
    return {
      stepMs,
      perRound,
      ...spread(perRound),
      totalPerRound: perRoundTotal,
      total: spread(perRoundTotal),
      ceiling: spread(perRoundCeiling),
    };
  });
  const targets: Array<{ figure: string; median: string; target: string; met: boolean }> = [];
  for (const stepMs of STEPS) {
    const v = variants.find((x) => x.key === variantKey(stepMs, 'fair'))!;
    const t = TARGETS[stepMs] ?? { p50: 20 + stepMs, p99: 100 + stepMs };
    targets.push({
      figure: `light dispatch → start p50, fair claim, heavy step ${stepMs} ms (ms)`,
      median: fmt(v.latencyP50.median, 1),
      target: `≤ ${t.p50}`,
      met: v.latencyP50.median <= t.p50,
    });
    targets.push({
      figure: `light dispatch → start p99, fair claim, heavy step ${stepMs} ms (ms)`,
      median: fmt(v.latencyP99.median, 1),
      target: `≤ ${t.p99}`,
      met: v.latencyP99.median <= t.p99,
    });
    const r = ratios.find((x) => x.stepMs === stepMs)!;
    targets.push({
      figure: `shop A runs/s, fair / FIFO in the same round, heavy step ${stepMs} ms`,
      median: fmt(r.median, 3),
      target: `≥ ${THROUGHPUT_RATIO_TARGET}`,
      met: r.median >= THROUGHPUT_RATIO_TARGET,
    });
  }
  return { variants, ratios, targets };
}

function printSummary(cells: CellFigures[], summary: ReturnType<typeof summarize>, shaping: ShapingFigures | undefined, pgVersion: string) {
  const out: string[] = [];
  const say = (line = '') => out.push(line);
  const rounds = [...new Set(cells.map((c) => c.round))].sort((a, b) => a - b);
  say();
  say(
    `Tenancy: ${rounds.length} round(s); shop A ${BACKLOG} queued runs; ${LIGHT_SHOPS} light shops × ${LIGHT_RATE} dispatches/s through POST /api/flows/light/run; ` +
      `one worker, concurrency ${CONCURRENCY}, default prefetch; window ${WINDOW_MS / 1000} s after ${WARMUP_MS / 1000} s of warm-up, ` +
      `cut-off ${GRACE_MS / 1000} s after it; PostgreSQL ${pgVersion} (fsync, synchronous_commit on); ${cpus().length} CPU(s) shared. ` +
      'Per round, then min / median / max.',
  );
  const rows = [['variant', 'figure', ...rounds.map((r) => `r${r}`), 'min', 'median', 'max', 'target']];
  for (const v of summary.variants) {
    const mine = rounds.map((r) => cells.find((c) => c.round === r && c.stepMs === v.stepMs && c.claim === v.claim));
    const label = `heavy step ${v.stepMs} ms, ${v.claim === 'fair' ? 'fair claim' : 'FIFO claim'}`;
    const t = TARGETS[v.stepMs];
    const line = (figure: string, perRound: string[], s: Spread, decimals: number, target = '') => [
      label,
      figure,
      ...perRound,
      showBound(s.min, decimals),
      showBound(s.median, decimals),
      showBound(s.max, decimals),
      target,
    ];
    const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
    rows.push(
      line(
        'dispatch → start p50 (ms)',
        mine.map((c) => showCensored(c?.latencyP50)),
        v.latencyP50,
        1,
        v.claim === 'fair' && t ? `≤ ${t.p50} ${verdict(v.latencyP50.median <= t.p50)}` : '',
      ),
    );
    rows.push(
      line(
        'dispatch → start p99 (ms)',
        mine.map((c) => showCensored(c?.latencyP99)),
        v.latencyP99,
        1,
        v.claim === 'fair' && t ? `≤ ${t.p99} ${verdict(v.latencyP99.median <= t.p99)}` : '',
      ),
    );
    rows.push(
      line(
        'dispatch → start max (ms)',
        mine.map((c) => showCensored(c?.latencyMax)),
        v.latencyMax,
        1,
      ),
    );
    rows.push(
      line(
        '  sent → runs.started_at p50 / p99 (ms)',
        mine.map((c) => (c ? `${fmt(c.sentToClaimP50, 1)} / ${fmt(c.sentToClaimP99, 1)}` : '–')),
        v.sentToClaimP99,
        1,
      ),
    );
    rows.push(
      line(
        '  runs.started_at → body p50 / p99 (ms)',
        mine.map((c) => (c ? `${fmt(c.claimToBodyP50, 1)} / ${fmt(c.claimToBodyP99, 1)}` : '–')),
        v.claimToBodyP99,
        1,
      ),
    );
    rows.push(
      line(
        '  202 answer → body p50 / p99 (ms)',
        mine.map((c) => (c ? `${fmt(c.answerToBodyP50, 1)} / ${fmt(c.answerToBodyP99, 1)}` : '–')),
        v.answerToBodyP99,
        1,
      ),
    );
    rows.push(
      line(
        '  light runs not started by the cut-off',
        mine.map((c) => (c ? `${c.lightNotStarted}/${c.lightSent}` : '–')),
        v.notStarted,
        3,
      ),
    );
    rows.push(
      line(
        '  dispatch HTTP p50 / p99 (ms)',
        mine.map((c) => (c ? `${fmt(c.dispatchHttpP50, 1)} / ${fmt(c.dispatchHttpP99, 1)}` : '–')),
        v.dispatchHttpP99,
        1,
      ),
    );
    rows.push(
      line(
        '  window (s)',
        mine.map((c) => `${fmt(c?.windowSeconds, 1)}${c?.windowEndedEarly ? '*' : ''}`),
        v.windowSeconds,
        1,
      ),
    );
    rows.push(
      line(
        'shop A runs/s',
        mine.map((c) => fmt(c?.shopARunsPerSecond, 0)),
        v.shopARunsPerSecond,
        0,
      ),
    );
    rows.push(
      line(
        'light runs/s',
        mine.map((c) => fmt(c?.lightRunsPerSecond, 0)),
        v.lightRunsPerSecond,
        0,
      ),
    );
    rows.push(
      line(
        '  CPU worker / server (cores)',
        mine.map((c) => (c ? `${fmt(c.workerCores)} / ${fmt(c.serverCores)}` : '–')),
        v.workerCores,
        2,
      ),
    );
    rows.push(
      line(
        '  claims/s; runs per claim',
        mine.map((c) => (c ? `${fmt(c.claimsPerSecond, 0)}; ${fmt(c.runsPerClaim, 1)}` : '–')),
        v.runsPerClaim,
        1,
      ),
    );
    rows.push(
      line(
        '  claim statement mean (ms)',
        mine.map((c) => fmt(c?.claimStatement?.meanMs, 2)),
        v.claimMeanMs,
        2,
      ),
    );
  }
  say(table(rows, [0, 1]));
  say(
    '(the min / median / max of a two-figure row are of its second figure; "> x s": the percentile falls on runs not started by the ' +
      "cut-off; window *: ended early, shop A's backlog ran low)",
  );
  say();
  say('Shop A runs/s, fair / FIFO, per round (and of all runs, shop A + light)');
  say(
    table([
      ['heavy step', ...rounds.map((r) => `r${r}`), 'min', 'median', 'max', 'target', 'all runs: median', 'A at most: median'],
      ...summary.ratios.map((r) => [
        `${r.stepMs} ms`,
        ...r.perRound.map((x) => fmt(x, 3)),
        fmt(r.min, 3),
        fmt(r.median, 3),
        fmt(r.max, 3),
        `≥ ${THROUGHPUT_RATIO_TARGET} ${r.median >= THROUGHPUT_RATIO_TARGET ? 'met' : 'MISSED'}`,
        fmt(r.total.median, 3),
        r.ceiling.median === undefined ? '' : fmt(r.ceiling.median, 3),
      ]),
    ]),
  );
  say(
    "(all runs: shop A + light, fair ÷ FIFO: the same work, as the FIFO claim runs the light shops' runs only after A's backlog. " +
      "A at most, 0 ms steps only: the machine is CPU-bound and a light run costs what one of A's does, so a fair claim " +
      "costing nothing would give A at most FIFO's runs/s less the light shops' runs/s)",
  );
  if (shaping) {
    const s = shaping;
    say();
    say(`Load shaping, ${SHAPING_WORKERS} worker processes × concurrency ${CONCURRENCY}, dispatched through POST /api/flows/<flow>/run`);
    say(
      table([
        ['rule', 'measured', 'limit', ''],
        [
          `concurrency { limit: 2 } (key: shop), ${s.concurrency.keys} shops × ${s.concurrency.runsPerKey} runs of ${s.concurrency.holdMs} ms`,
          `most bodies at once per key: ${s.concurrency.perKey.map((k) => k.maxBodies).join(', ')} (DB intervals ${s.concurrency.perKey.map((k) => k.maxDbIntervals).join(', ')})`,
          '≤ 2',
          s.concurrency.met ? 'met' : 'MISSED',
        ],
        [
          `rateLimit { limit: 5, period: '1s' } (key: shop), ${s.rate.keys} shops × ${s.rate.runsPerKey} runs at once`,
          `most claims (rate_starts.at) in any 1 s: ${s.rate.perKey.map((k) => k.claimMaxIn1s).join(', ')}; for information, body starts: ${s.rate.perKey.map((k) => k.bodyMaxIn1s).join(', ')}`,
          '≤ 5',
          s.rate.met ? 'met' : 'MISSED',
        ],
        [
          '',
          `shortest span of 6 starts: claims ${s.rate.perKey.map((k) => fmt(k.claimMinSpanMs, 1)).join(', ')} ms, bodies ${s.rate.perKey.map((k) => fmt(k.bodyMinSpanMs, 1)).join(', ')} ms`,
          '≥ 1000',
          '',
        ],
        [
          `debounce (3 s, one key), ${s.debounce.dispatches} dispatches, ${s.debounce.inflight} in flight`,
          `${s.debounce.distinctRunIds} distinct runId, ${s.debounce.joinedAnswers} joined, ${s.debounce.runsInTable} run(s) in the table, ${s.debounce.runsExecuted} executed`,
          '1 run',
          s.debounce.met ? 'met' : 'MISSED',
        ],
      ]),
    );
  }
  say();
  say('Targets (medians over the rounds)');
  say(table([['figure', 'median', 'target', ''], ...summary.targets.map((t) => [t.figure, t.median, t.target, t.met ? 'met' : 'MISSED'])]));
  console.log(out.join('\n'));
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      server?.child.kill('SIGKILL');
      if (process.listenerCount(signal) === 0) process.exit(130);
    });
  }
  console.log(
    `Mercato tenancy benchmark: ${ROUNDS} round(s), heavy steps ${STEPS.join('/')} ms, claims fair/FIFO, backlog ${BACKLOG}, ` +
      `${LIGHT_SHOPS} light shops × ${LIGHT_RATE}/s, window ${WINDOW_MS / 1000} s`,
  );
  // the engine measured is the one built now (others commit meanwhile): HEAD at the start, and at the end when it moved
  const commitAtStart = gitState([]).commit;
  const engineDiffFilesAtStart = execFileSync(
    'git',
    ['diff', '--name-only', 'HEAD', '--', 'packages/mercato/src', 'packages/mercato/migrations'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  )
    .split('\n')
    .filter(Boolean);
  progress('building the mercato CLI if its dist/ is older than the sources');
  await runToEnd(process.execPath, [join(ROOT, 'packages/mercato/scripts/build.mjs'), '--js', '--if-stale', '--quiet'], {
    cwd: ROOT,
    env: process.env,
    label: 'mercato build (the engine may be in the middle of an edit: retry in a minute)',
  });
  progress('starting a private PostgreSQL 15 cluster (durable: fsync and synchronous_commit on)');
  cluster = await startCluster({
    settings: {
      ...DURABLE_SETTINGS,
      ...autoExplainSettings(),
    },
  });
  const cells: CellFigures[] = [];
  let shapingFigures: ShapingFigures | undefined;
  try {
    const admin = new pg.Client({ connectionString: urlOf('postgres') });
    await admin.connect();
    await admin.query(`create database ${DATABASE}`);
    await admin.end();
    db = new pg.Client({ connectionString: urlOf(DATABASE), application_name: 'bench-tenancy' });
    await db.connect();
    const [{ version }] = await q<{ version: string }>(`select current_setting('server_version') as version`);
    await q('create extension if not exists pg_stat_statements');

    const shops = [SHOP_A, ...LIGHT];
    sim = await startSim({ apps: [{ apiKey: API_KEY, apiSecret: API_SECRET, appUrl: 'http://127.0.0.1:1' }], shops });
    progress('mercato start (applies the migrations); installing the shops');
    await startServer();
    await installShops(shops);
    // the engine deletes the rate-limit start records it no longer needs: a trigger of the benchmark keeps a copy
    await q(`create table bench_rate_log (key text not null, at timestamptz not null)`);
    await q(`create function bench_rate_log() returns trigger language plpgsql as $$
      begin insert into bench_rate_log values (new.key, new.at); return new; end $$`);
    await q(`create trigger bench_rate_log after insert on rate_starts for each row execute function bench_rate_log()`);

    const variants = STEPS.flatMap((stepMs) => CLAIMS.map((claim) => ({ stepMs, claim })));
    if (LOAD) {
      for (let round = 1; round <= ROUNDS; round++) {
        const shift = (round - 1) % variants.length;
        const order = [...variants.slice(shift), ...variants.slice(0, shift)];
        console.log(`Round ${round}/${ROUNDS}: ${order.map((v) => variantKey(v.stepMs, v.claim)).join(', ')}`);
        for (const v of order) cells.push(await measureCell(round, v.stepMs, v.claim));
      }
    }
    if (SHAPING) shapingFigures = await shaping();

    const summary = summarize(cells);
    printSummary(cells, summary, shapingFigures, version);
    const [{ v: fullVersion }] = await q<{ v: string }>('select version() as v');
    const { commit, uncommittedChanges } = gitState(['packages/mercato/src', 'packages/mercato/migrations']);
    // the engine measured: HEAD plus whatever uncommitted changes the working tree had (other people edit it meanwhile)
    const engineDiffSha1 = uncommittedChanges
      ? createHash('sha1')
          .update(execFileSync('git', ['diff', 'HEAD', '--', 'packages/mercato/src', 'packages/mercato/migrations'], { cwd: ROOT }))
          .digest('hex')
      : null;
    const result = {
      measuredAt: new Date().toISOString(),
      durationSeconds: Math.round((Date.now() - started) / 1000),
      commit: commitAtStart,
      headAtEnd: commit !== commitAtStart ? commit : undefined,
      engineUncommittedChanges: uncommittedChanges,
      engineDiffSha1,
      engineDiffFilesAtStart,
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model,
        node: process.version,
        postgres: fullVersion,
        clockTicksPerSecond: CLK_TCK,
        note: 'CPUs shared with other sessions; figures are noisy',
      },
      settings: {
        rounds: ROUNDS,
        backlog: BACKLOG,
        backlogInsert:
          'one run of `heavy` dispatched through POST /api/flows/heavy/run for shop A, then BENCH_BACKLOG − 1 copies of its row by one INSERT … SELECT (input { n }, created/available one minute before), ANALYZE, CHECKPOINT',
        lightShops: LIGHT_SHOPS,
        lightRatePerShop: LIGHT_RATE,
        lightDoor: 'POST /api/flows/light/run, session token per shop (cached 20 s), node:http keep-alive agent (≤ 64 sockets), open loop',
        lightStepMs: Number(process.env.TENANCY_LIGHT_STEP_MS ?? 0),
        heavyStepsMs: STEPS,
        concurrency: CONCURRENCY,
        prefetch: PREFETCH || 'default (worker.prefetch 100; the local queue holds about 100 ms of work)',
        warmupSeconds: WARMUP_MS / 1000,
        windowSeconds: WINDOW_MS / 1000,
        graceSeconds: GRACE_MS / 1000,
        latency:
          'request sent (benchmark, wall clock, just before the request is written; carried in the input) → first line of the flow body (worker, wall clock); performance.timeOrigin + performance.now() in both',
        claims: { fair: 'default', fifo: 'MERCATO_BENCH_FIFO_CLAIM=1 in the worker environment' },
        shapingWorkers: SHAPING_WORKERS,
        cluster:
          'initdb defaults (fsync, synchronous_commit, full_page_writes on) + pg_stat_statements (track = top), private loopback port',
        server: 'one `mercato start` (NODE_ENV=production), no worker',
      },
      cells,
      summary,
      shaping: shapingFigures ?? null,
    };
    mkdirSync(dirname(OUT), { recursive: true });
    writeFileSync(OUT, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`\nWritten: ${OUT} (${Math.round((Date.now() - started) / 1000)} s in all)`);
  } finally {
    if (server) await stop([server.child]);
    agent.destroy();
    await sim?.close();
    await db?.end().catch(() => {});
    keepServerLog(cluster.dir);
    await cluster.destroy();
  }
}

await main();
