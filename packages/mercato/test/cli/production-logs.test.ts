/**
 * The production processes' output (docs/observability.md, "Logs"): `mercato start` and `mercato worker`, spawned from the
 * built CLI, write JSON lines (after the plain-text start-up banner) with the request id on access lines, the app and shop
 * of an authenticated request, and the run id, flow, app and shop on the run's lines. Traffic goes through every path
 * that handles a secret: a session token, a provider with a secret field saved and read by a flow, an MCP token, the
 * metrics token, ENCRYPTION_KEY and the platform's API secret. None of these values appears anywhere in the output.
 *
 * The worker runs in its own process only on PostgreSQL (PGlite is one process's database): on PGlite, `mercato start`
 * alone is checked.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { signSessionToken } from '../../src/http/session-token.ts';
import { SHOP, TEST_API_KEY, TEST_API_SECRET } from '../helpers/runtime.ts';
import { startSim } from '../platform/helpers.ts';
import { parseExposition, valueOf } from '../metrics/exposition.ts';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../../bin/mercato.js');
// inside the workspace, so the app resolves `mercato` from its node_modules (test-artifacts/ is git-ignored)
const APP = resolve(here, `../../../../test-artifacts/production-logs-${randomBytes(4).toString('hex')}`);
const DATA = mkdtempSync(join(tmpdir(), 'mercato-production-logs-'));

const ENCRYPTION_KEY = randomBytes(32).toString('hex');
const METRICS_TOKEN = `metrics-${randomBytes(16).toString('hex')}`;
const PROVIDER_SECRET = `vault-secret-${randomBytes(12).toString('hex')}`;

mkdirSync(APP, { recursive: true });
writeFileSync(
  join(APP, 'service.config.ts'),
  `import { defineApp, defineProvider } from 'mercato';
import { z } from 'zod';

const vault = defineProvider({
  name: 'vault',
  ui: { fields: { url: { type: 'text', label: 'URL' }, apiKey: { type: 'password', label: 'API key' } } },
  methods: { keyLength: (config: { apiKey: string }) => () => config.apiKey.length },
});
const app = defineApp({ providers: { vault } });

export default app.defineConfig({
  flows: {
    useVault: app.defineFlow({
      name: 'useVault',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) => {
        const length = await ctx.step('read', () => ctx.providers.vault.keyLength());
        await ctx.log.info('vault used', { length });
        return { length };
      },
    }),
    // a run still in flight when the worker is told to stop (its graceful stop lets it finish)
    slowStep: app.defineFlow({
      name: 'slowStep',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) => ctx.step('wait', () => new Promise((resolve) => setTimeout(() => resolve('waited'), 3000))),
    }),
  },
  worker: { pollIntervalMs: 50, pollMaxIntervalMs: 200 },
});
`,
);

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}
const procs: Proc[] = [];

/** Spawns `mercato <args>`; resolves once `ready` matches its output. */
function spawnMercato(args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<Proc & { match: RegExpExecArray }> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: APP, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const proc = { child, output: () => out, exited };
  procs.push(proc);
  return new Promise((res, rej) => {
    const deadline = Date.now() + 60_000;
    const check = () => {
      const match = ready.exec(out);
      if (match) return res({ ...proc, match });
      if (child.exitCode !== null || Date.now() > deadline) return rej(new Error(`mercato ${args[0]} did not come up:\n${out}`));
      setTimeout(check, 50);
    };
    check();
  });
}

async function stop(proc: Proc): Promise<string> {
  proc.child.kill('SIGTERM');
  expect(await proc.exited).toBe(0);
  return proc.output();
}

/** The JSON lines of an output; every line that is not the banner must be one. */
function jsonLines(output: string): Array<Record<string, any>> {
  const lines: Array<Record<string, any>> = [];
  for (const line of output.split('\n')) {
    if (line.trim() === '') continue;
    // the plain-text banner: its first line, the indented lines under it, the shutdown line
    if (/^mercato (start|worker)\b/.test(line) || /^ {2}[a-z ]+: /i.test(line)) continue;
    let parsed: Record<string, any>;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new Error(`not a JSON line: ${line}`);
    }
    // `name` is the logger's on every line: an event field of that name would come out twice (the last one wins)
    expect(parsed, line).toMatchObject({
      name: 'mercato',
      level: expect.any(Number),
      time: expect.any(Number),
      pid: expect.any(Number),
      msg: expect.any(String),
    });
    lines.push(parsed);
  }
  return lines;
}

const kind = process.env.DATABASE_URL ? 'postgres' : 'pglite';

describe(`mercato start and worker: JSON lines, no secret in the output [${kind}]`, () => {
  let sim: PlatformSim;
  let tdb: TestDatabase | undefined;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    sim = await startSim();
    if (kind === 'postgres') tdb = await createTestDatabase('postgres', { migrate: false });
    env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'production',
      LOG_LEVEL: 'debug',
      PLATFORM_API_KEY: TEST_API_KEY,
      PLATFORM_API_SECRET: TEST_API_SECRET,
      PLATFORM_ORIGIN: sim.url,
      HOST: 'https://app.example.com',
      ENCRYPTION_KEY,
      MERCATO_METRICS_TOKEN: METRICS_TOKEN,
      ...(tdb ? { DATABASE_URL: tdb.url } : { MERCATO_DATA_DIR: join(DATA, 'db') }),
    };
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await tdb?.drop();
    await sim?.close();
    rmSync(APP, { recursive: true, force: true });
    rmSync(DATA, { recursive: true, force: true });
  }, 60_000);

  it(
    'HTTP, a provider secret, an MCP token, a run and scrapes: JSON lines with their fields, none of the secrets',
    { timeout: 180_000 },
    async () => {
      const start = await spawnMercato(['start', '--port', '0'], env, /listening on (http:\/\/\S+)/);
      const url = start.match[1]!;
      const worker =
        kind === 'postgres' ? await spawnMercato(['worker', '--metrics-port', '0'], env, /health: +(http:\/\/\S+?)\/healthz/) : undefined;

      const sessionToken = signSessionToken({ apiKey: TEST_API_KEY, apiSecret: TEST_API_SECRET, shop: SHOP });
      const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
        const res = await fetch(`${url}${path}`, {
          method,
          headers: { authorization: `Bearer ${sessionToken}`, 'content-type': 'application/json', ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : null, requestId: res.headers.get('x-request-id') };
      };

      // a provider secret, saved (encrypted) and listed (masked)
      const saved = await api('PUT', '/api/providers/vault', { config: { url: 'https://vault.example.com', apiKey: PROVIDER_SECRET } });
      expect(saved.status, JSON.stringify(saved.body)).toBe(200);
      expect(JSON.stringify((await api('GET', '/api/providers')).body)).not.toContain(PROVIDER_SECRET);
      // an MCP token, created and used
      const created = await api('POST', '/api/mcp/tokens', { name: 'logs', permissions: ['read_flows'] });
      expect(created.status).toBe(201);
      const mcpSecret = created.body.secret as string;
      const mcp = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${mcpSecret}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      expect(mcp.status).toBe(200);
      // a wrong bearer on /mcp and on /metrics (the values tried must not be logged either)
      expect((await fetch(`${url}/mcp`, { method: 'POST', headers: { authorization: `Bearer ${mcpSecret}x` }, body: '{}' })).status).toBe(
        401,
      );
      expect((await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}x` } })).status).toBe(401);
      // a run, with a request id of ours
      const dispatched = await api('POST', '/api/flows/useVault/run', { input: {} }, { 'x-request-id': 'req-logs-test-1' });
      expect(dispatched.status).toBe(202);
      const runId = dispatched.body.runId as string;
      if (worker) {
        await expect
          .poll(
            async () => (await api('GET', `/api/runs/${runId}`)).body?.run?.status ?? (await api('GET', `/api/runs/${runId}`)).body?.status,
            {
              timeout: 60_000,
              interval: 200,
            },
          )
          .toBe('completed');
        const workerBase = worker.match[1]!;
        const scraped = await fetch(`${workerBase}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
        expect(scraped.status).toBe(200);
        expect(
          valueOf(parseExposition(await scraped.text()), 'mercato_runs_finished_total', { flow: 'useVault', status: 'completed' }),
        ).toBe(1);
        expect((await fetch(`${workerBase}/readyz`)).status).toBe(200);
      }
      const scraped = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect(scraped.status).toBe(200);
      expect(valueOf(parseExposition(await scraped.text()), 'mercato_runs_dispatched_total', { flow: 'useVault', trigger: 'api' })).toBe(1);

      let drainingReadiness: { status: number; body: any } | undefined;
      if (worker) {
        // a run in flight when the worker gets SIGTERM: the operations port keeps answering while it finishes, and
        // /readyz says the worker is not running (503), so an orchestrator stops counting on it (docs/observability.md)
        const slow = await api('POST', '/api/flows/slowStep/run', { input: {} });
        expect(slow.status).toBe(202);
        await expect
          .poll(async () => (await api('GET', `/api/runs/${slow.body.runId}`)).body?.status, { timeout: 30_000, interval: 100 })
          .toBe('running');
        worker.child.kill('SIGTERM');
        const workerBase = worker.match[1]!;
        await expect
          .poll(
            async () => {
              const res = await fetch(`${workerBase}/readyz`);
              drainingReadiness = { status: res.status, body: await res.json() };
              return drainingReadiness.body?.checks?.worker?.running;
            },
            { timeout: 2_000, interval: 50 },
          )
          .toBe(false);
        expect(drainingReadiness).toMatchObject({ status: 503, body: { ok: false, checks: { worker: { ok: false, active: 1 } } } });
        // the run finishes in the draining worker, then the process exits cleanly
        await expect
          .poll(async () => (await api('GET', `/api/runs/${slow.body.runId}`)).body?.status, { timeout: 30_000, interval: 100 })
          .toBe('completed');
        expect(await worker.exited).toBe(0);
      }

      const startOut = await stop(start);
      const workerOut = worker ? worker.output() : '';

      // no secret anywhere, in any form we used it
      const secrets = {
        ENCRYPTION_KEY,
        PLATFORM_API_SECRET: TEST_API_SECRET,
        METRICS_TOKEN,
        PROVIDER_SECRET,
        MCP_SECRET: mcpSecret,
        SESSION_TOKEN: sessionToken,
        'session token signature': sessionToken.split('.')[2]!,
      };
      for (const [what, value] of Object.entries(secrets)) {
        expect(startOut.includes(value), `${what} in the output of mercato start`).toBe(false);
        expect(workerOut.includes(value), `${what} in the output of mercato worker`).toBe(false);
      }

      // JSON lines with their fields
      const startLines = jsonLines(startOut);
      const access = startLines.filter((l) => l.msg === 'request');
      const dispatchLine = access.find((l) => l.requestId === 'req-logs-test-1');
      // at info (a production log at the default level has it), with the route that matched
      expect(dispatchLine).toMatchObject({
        level: 30,
        method: 'POST',
        route: '/api/flows/:name/run',
        path: '/api/flows/useVault/run',
        status: 202,
        app: 'default',
        shop: SHOP,
      });
      expect(access.every((l) => typeof l.requestId === 'string' && typeof l.status === 'number')).toBe(true);
      // the level follows the status: info below 400, warn for 4xx, error for 5xx (probes at trace)
      for (const l of access)
        expect(l.level, `${l.method} ${l.path} ${l.status}`).toBe(l.status >= 500 && l.status !== 503 ? 50 : l.status >= 400 ? 40 : 30);
      // the events a request causes carry its request id (and the trace id: null, tracing is off here)
      expect(startLines.find((l) => l.event === 'run.dispatched')).toMatchObject({
        runId,
        flow: 'useVault',
        app: 'default',
        shop: SHOP,
        requestId: 'req-logs-test-1',
        traceId: null,
      });
      const mcpLine = startLines.find((l) => l.event === 'mcp.call');
      expect(mcpLine).toMatchObject({ method: 'tools/list', app: 'default', shop: SHOP, status: 'ok', requestId: expect.any(String) });
      expect(access.some((l) => l.requestId === mcpLine?.requestId && l.path === '/mcp')).toBe(true);
      if (worker) {
        const workerLines = jsonLines(workerOut);
        for (const event of ['run.started', 'run.completed']) {
          expect(
            workerLines.find((l) => l.event === event && l.runId === runId),
            event,
          ).toMatchObject({ flow: 'useVault', app: 'default', shop: SHOP });
        }
      }
    },
  );
});
