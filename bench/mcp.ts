/**
 * `npm run bench:mcp` — the MCP endpoint of one server process, over loopback HTTP with keep-alive clients:
 *   (i)   requests/second and latency of `ping`, `tools/list` and a simple `tools/call` (each authenticated and audited as in
 *         production), with BENCH_MCP_CLIENTS concurrent clients for BENCH_MCP_SECONDS each;
 *   (ii)  the cost of authenticating one request: with the token row cached (the steady state), with the row read from the
 *         database (a cache miss), the HMAC alone, and — side by side — what a password hash (scrypt, N=16384) would cost per request instead.
 * The clients run in a worker thread so they do not share the server's event loop (they do share the CPUs).
 * Engine: PostgreSQL when DATABASE_URL is set (a scratch database is created there and dropped), else in-memory PGlite.
 * See docs/benchmarks.md, "MCP".
 */
import { randomBytes, scryptSync } from 'node:crypto';
import { cpus, tmpdir } from 'node:os';
import { Worker } from 'node:worker_threads';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { defineApp } from '../packages/mercato/src/app/app.ts';
import { type Database, openDatabase } from '../packages/mercato/src/db/engine.ts';
import { startHttpServer } from '../packages/mercato/src/http/server.ts';
import { silentLogger } from '../packages/mercato/src/logger.ts';
import { createSecretHasher, newSecret } from '../packages/mercato/src/mcp/secret.ts';
import { createMcp } from '../packages/mercato/src/mcp/index.ts';
import { mcpDeps } from '../packages/mercato/src/mcp/wiring.ts';
import { type Runtime, createRuntime } from '../packages/mercato/src/runtime.ts';
import { buildApp, mcpOf } from '../packages/mercato/src/serve.ts';

const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);
const CLIENTS = num('BENCH_MCP_CLIENTS', 4);
const SECONDS = num('BENCH_MCP_SECONDS', 5);
const WARMUP_SECONDS = 1;
const AUTH_SAMPLES = num('BENCH_MCP_AUTH_SAMPLES', 3000);
const TARGET_LIST_RPS = 2000;
const SHOP = 'bench-shop.myshopify.com';
const ENCRYPTION_KEY = 'be'.repeat(32);

const app = defineApp();
const instance = app.defineConfig({
  flows: { noop: app.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) },
  mcp: {
    permissions: { 'bench:read_things': { label: 'Read things' } },
    tools: {
      'bench.echo': {
        description: 'Echo a word',
        requiredPermissions: ['bench:read_things'],
        inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'], additionalProperties: false },
        run: (_ctx, input: { word: string }) => input.word,
      },
    },
  },
});

// The load generator (plain JavaScript, run in a worker thread): `clients` loops of sequential requests over node:http
// keep-alive connections (lighter than fetch, so more of the shared CPUs is left to the server being measured).
const LOAD = `
const { workerData, parentPort } = require('node:worker_threads');
const http = require('node:http');
const { url, headers, body, clients, seconds, warmupSeconds } = workerData;
const target = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
const payload = Buffer.from(body);
const options = { agent, host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { ...headers, 'content-length': payload.length } };
function once() {
  return new Promise((resolve, reject) => {
    const req = http.request(options, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode !== 200 || JSON.parse(text).error) reject(new Error('unexpected answer ' + res.statusCode + ' ' + text));
        else resolve();
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}
async function loop(until, latencies) {
  while (performance.now() < until) {
    const t0 = performance.now();
    await once();
    latencies.push(performance.now() - t0);
  }
}
(async () => {
  const warm = performance.now() + warmupSeconds * 1000;
  await Promise.all(Array.from({ length: clients }, () => loop(warm, [])));
  const latencies = [];
  const start = performance.now();
  await Promise.all(Array.from({ length: clients }, () => loop(start + seconds * 1000, latencies)));
  const elapsed = performance.now() - start;
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  agent.destroy();
  parentPort.postMessage({ count: latencies.length, elapsed, p50: at(0.5), p99: at(0.99) });
})().catch((e) => parentPort.postMessage({ error: String(e && e.stack || e) }));
`;

interface Load {
  rps: number;
  p50: number;
  p99: number;
  count: number;
}

function load(url: string, secret: string, message: unknown): Promise<Load> {
  const headers = {
    authorization: `Bearer ${secret}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
  };
  return new Promise((resolve, reject) => {
    const worker = new Worker(LOAD, {
      eval: true,
      workerData: { url, headers, body: JSON.stringify(message), clients: CLIENTS, seconds: SECONDS, warmupSeconds: WARMUP_SECONDS },
    });
    worker.once('message', (m: { error?: string; count: number; elapsed: number; p50: number; p99: number }) => {
      void worker.terminate();
      if (m.error) reject(new Error(m.error));
      else resolve({ rps: (m.count / m.elapsed) * 1000, p50: m.p50, p99: m.p99, count: m.count });
    });
    worker.once('error', reject);
  });
}

async function timePerCall(samples: number, fn: () => unknown): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < samples; i++) await fn();
  return Number(process.hrtime.bigint() - start) / 1000 / samples;
}

async function openEngine(): Promise<{ db: Database; label: string; cleanup: () => Promise<void> }> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const db = await openDatabase();
    return { db, label: 'PGlite (in-memory)', cleanup: () => db.close() };
  }
  const name = `mercato_bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = async (statement: string) => {
    const a = await openDatabase({ url: serverUrl, poolSize: 1 });
    try {
      await a.exec(statement);
    } finally {
      await a.close();
    }
  };
  await admin(`create database ${name}`);
  const db = await openDatabase({
    url: Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString(),
    poolSize: 10,
    applicationName: 'mercato-bench',
  });
  const [row] = await db.query<{ v: string }>(sql`select current_setting('server_version') as v`);
  return {
    db,
    label: `PostgreSQL ${row!.v}`,
    cleanup: async () => {
      await db.close();
      await admin(`drop database if exists ${name} with (force)`);
    },
  };
}

async function main() {
  const engine = await openEngine();
  let runtime: Runtime | undefined;
  try {
    console.log(
      `Mercato MCP benchmark on ${engine.label}; ${cpus().length} CPU(s), Node ${process.version}; ${CLIENTS} keep-alive clients, ${SECONDS} s per figure`,
    );
    runtime = await createRuntime({
      instance,
      projectDir: tmpdir(),
      mode: 'test',
      db: engine.db,
      logger: silentLogger(),
      env: { NODE_ENV: 'test', PLATFORM_API_KEY: 'bench-key', PLATFORM_API_SECRET: 'bench-secret', ENCRYPTION_KEY },
    });
    const server = await startHttpServer(buildApp(runtime), { port: 0, hostname: '127.0.0.1' });
    runtime.onClose(() => server.close());
    const mcp = mcpOf(runtime);
    const { secret } = await mcp.tokens.create({ appHandle: 'default', shop: SHOP }, { name: 'bench', permissions: ['bench:read_things'] });
    const url = `${server.url}/mcp`;

    console.log('(i) requests per second');
    await load(url, secret, { jsonrpc: '2.0', id: 1, method: 'ping' }); // warm-up of the whole path (JIT, connections)
    const ping = await load(url, secret, { jsonrpc: '2.0', id: 1, method: 'ping' });
    const list = await load(url, secret, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const call = await load(url, secret, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'bench.echo', arguments: { word: 'hello' } },
    });
    const [{ audits }] = await engine.db.query<{ audits: number }>(sql`select count(*)::int as audits from mcp_audits`);

    console.log('(ii) authentication cost');
    const header = `Bearer ${secret}`;
    const authUs = await timePerCall(AUTH_SAMPLES, () => mcp.tokens.authenticate(header));
    // The same check with the cache switched off: a primary-key read per request.
    const uncached = createMcp({ ...mcpDeps(runtime), authCacheTtlMs: -1 });
    const missUs = await timePerCall(AUTH_SAMPLES, () => uncached.tokens.authenticate(header));
    const hasher = createSecretHasher({ encryptionKey: ENCRYPTION_KEY, installationKey: async () => ENCRYPTION_KEY });
    const sample = newSecret('0b8e5c2e-3c1d-4a5e-9f7a-1b2c3d4e5f60');
    const stored = await hasher.hash(sample);
    const hmacUs = await timePerCall(AUTH_SAMPLES * 10, () => hasher.verify(sample, stored));
    const salt = randomBytes(16);
    const scryptUs = await timePerCall(5, () => scryptSync(sample, salt, 64, { N: 16384, r: 8, p: 1 }));

    const rows: Array<[string, string, string]> = [
      ['ping (authenticated)', `${ping.rps.toFixed(0)} req/s`, `p50 ${ping.p50.toFixed(2)} ms, p99 ${ping.p99.toFixed(2)} ms`],
      [
        'tools/list',
        `${list.rps.toFixed(0)} req/s`,
        `p50 ${list.p50.toFixed(2)} ms, p99 ${list.p99.toFixed(2)} ms; target ≥ ${TARGET_LIST_RPS}/s: ${list.rps >= TARGET_LIST_RPS ? 'met' : 'NOT MET'}`,
      ],
      [
        'tools/call (string tool, audited)',
        `${call.rps.toFixed(0)} req/s`,
        `p50 ${call.p50.toFixed(2)} ms, p99 ${call.p99.toFixed(2)} ms; ${audits} audit rows written`,
      ],
      [
        'authentication, known token (cached row)',
        `${authUs.toFixed(1)} µs/request`,
        'HMAC-SHA256 + constant-time compare + checks; no database read',
      ],
      [
        'authentication, row read from the database',
        `${missUs.toFixed(0)} µs/request`,
        'the same plus one primary-key read (first request, or every 2 s)',
      ],
      ['authentication, HMAC + compare only', `${hmacUs.toFixed(2)} µs/request`, 'the cryptographic part'],
      [
        'a password hash instead (scrypt N=16384)',
        `${(scryptUs / 1000).toFixed(1)} ms/request`,
        `${(scryptUs / hmacUs).toFixed(0)}× the HMAC, blocking the event loop`,
      ],
    ];
    const w0 = Math.max(...rows.map((r) => r[0].length));
    const w1 = Math.max(...rows.map((r) => r[1].length));
    console.log(`\nResults (${engine.label}, one server process; clients in a worker thread of the same process)`);
    console.log(`${'figure'.padEnd(w0)}  ${'value'.padStart(w1)}  notes`);
    console.log(`${'-'.repeat(w0)}  ${'-'.repeat(w1)}  ${'-'.repeat(40)}`);
    for (const [a, b, c] of rows) console.log(`${a.padEnd(w0)}  ${b.padStart(w1)}  ${c}`);
  } finally {
    await runtime?.close();
    await engine.cleanup();
  }
}

await main();
