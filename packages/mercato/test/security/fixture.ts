/**
 * The tenant-isolation fixture: a two-app runtime (apps `main` and `second`) behind the real HTTP app, the platform
 * simulator with both apps and two shops, and the data of tenant A = (main, SHOP) that every other tenant must not reach:
 * runs with steps and log lines, a disabled cron, a provider config, an MCP token with an audit record, a function
 * instance on the platform, an A-only function and an A-only custom page. Every value that only A's data carries is a
 * marker (`seed.markers`): a foreign answer must contain none of them.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { type PlatformSim, start } from 'platform-sim';
import { expect } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineCustomPage, defineFunction, defineProvider } from '../../src/app/define.ts';
import type { Database } from '../../src/db/engine.ts';
import { signJwt, signSessionToken } from '../../src/http/session-token.ts';
import { startWorker } from '../../src/serve.ts';
import { FAST_WORKER, OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';

export { OTHER_SHOP, SHOP };

export const APPS = {
  main: { handle: 'main', apiKey: 'security-key-main', apiSecret: 'security-secret-main-0001' },
  second: { handle: 'second', apiKey: 'security-key-second', apiSecret: 'security-secret-second-0002' },
} as const;
export const ENCRYPTION_KEY = '5e'.repeat(32);

/** Random per test file, so no marker can be a constant that happens to appear elsewhere. */
const nonce = randomBytes(4).toString('hex');
const marker = (what: string) => `A-${what}-${nonce}`;

export const A_ONLY = {
  /** Title of the custom page only tenant A may see (also its loader's answer). */
  pageTitle: marker('page'),
  /** Handle of the function definition only tenant A may see. */
  functionHandle: `a-only-${nonce}`,
};

const isA = (ctx: { appHandle: string; shop: string }) => ctx.appHandle === APPS.main.handle && ctx.shop === SHOP;

/** Every provider config a checker was given (the isolation test asserts none of A's reached another tenant's check). */
export const checkerSaw: unknown[] = [];

const vault = defineProvider({
  name: 'vault',
  ui: {
    fields: {
      baseUrl: { type: 'text', label: 'Base URL' },
      password: { type: 'password', label: 'Password' },
    },
  },
  checker: ({ config }) => {
    checkerSaw.push(structuredClone(config));
    return typeof config.baseUrl === 'string';
  },
  methods: {},
});

const app = defineApp({ providers: { vault } });

export const instance = app.defineConfig({
  flows: {
    noisy: app.defineFlow({
      name: 'noisy',
      input: z.object({ note: z.string() }),
      concurrency: null,
      run: async (ctx, input) => {
        await ctx.step('write', async () => {
          await ctx.log.info(`note ${input.note}`, { note: input.note });
          return { wrote: input.note };
        });
        return { note: input.note };
      },
    }),
  },
  crons: [{ schedule: '0 * * * *', flow: 'noisy', input: { note: 'cron' }, shops: 'all' }],
  functions: {
    shared: defineFunction({
      type: 'delivery_customization',
      handle: 'hide-shipping',
      fields: { keyword: { type: 'text', label: 'Keyword' } },
    }),
    aOnly: defineFunction({ type: 'cart_transform', handle: A_ONLY.functionHandle, fields: {}, authorize: isA }),
  },
  experimental: {
    customPages: true,
    pages: {
      secret: defineCustomPage({
        title: A_ONLY.pageTitle,
        authorize: isA,
        loaders: { summary: { run: () => ({ title: A_ONLY.pageTitle }) } },
        actions: { note: { run: (ctx) => ctx.dispatchFlow({ flowName: 'noisy', input: { note: A_ONLY.pageTitle } }) } },
      }),
    },
  },
  mcp: {
    tools: {
      'notes.whoami': {
        description: 'The tenant the call runs for',
        requiredPermissions: [],
        run: (ctx) => ({ appHandle: ctx.appHandle, shop: ctx.shop }),
      },
    },
    resources: {
      'notes://whoami': { name: 'Who am I', requiredPermissions: [], read: (ctx) => `${ctx.appHandle} ${ctx.shop}` },
    },
  },
  shopify: {
    apps: {
      main: { apiKey: APPS.main.apiKey, apiSecret: APPS.main.apiSecret },
      second: { apiKey: APPS.second.apiKey, apiSecret: APPS.second.apiSecret },
    },
  },
  worker: FAST_WORKER,
});

/** A session token of an app for a shop. */
export function sessionToken(appName: keyof typeof APPS, shop: string): string {
  const a = APPS[appName];
  return signSessionToken({ apiKey: a.apiKey, apiSecret: a.apiSecret, shop });
}

/** A correctly signed token of app main whose claims name no shop (no `dest`). */
export function shoplessToken(): string {
  const now = Math.floor(Date.now() / 1000);
  return signJwt(
    { alg: 'HS256', typ: 'JWT' },
    { iss: `https://${SHOP}/admin`, aud: APPS.main.apiKey, exp: now + 60, nbf: now, iat: now },
    APPS.main.apiSecret,
  );
}

/** A caller of the matrix: who it is (the tenant its rows belong to, none for a refused token) and its token. */
export interface Caller {
  name: string;
  token: () => string;
  tenant: { appHandle: string; shop: string } | null;
}

export const TENANT_A = { appHandle: APPS.main.handle, shop: SHOP };
export const FOREIGN_CALLERS: Caller[] = [
  { name: 'another shop of the same app', token: () => sessionToken('main', OTHER_SHOP), tenant: { appHandle: 'main', shop: OTHER_SHOP } },
  { name: 'the same shop of another app', token: () => sessionToken('second', SHOP), tenant: { appHandle: 'second', shop: SHOP } },
  { name: 'a token without a shop (no dest)', token: shoplessToken, tenant: null },
];

export interface Seed {
  /** A completed run of A (steps and log lines) and a queued one. */
  runId: string;
  queuedRunId: string;
  cronKey: string;
  mcpTokenId: string;
  mcpSecret: string;
  /** GID of A's delivery customization on the platform. */
  instanceId: string;
  /** Strings only A's data contain. */
  markers: string[];
}

export interface SecurityEnv {
  t: TestRuntime;
  sim: PlatformSim;
  url: string;
  seed: Seed;
  /** fetch with a bearer token; the body is JSON when given. */
  call(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; text: string; body: any }>;
  close(): Promise<void>;
}

export async function startSecurityEnv(db: Database): Promise<SecurityEnv> {
  const deployed = [{ handle: 'hide-shipping', apiType: 'delivery_customization' as const }];
  const sim = await start({
    apps: [
      { apiKey: APPS.main.apiKey, apiSecret: APPS.main.apiSecret, functions: deployed },
      { apiKey: APPS.second.apiKey, apiSecret: APPS.second.apiSecret, functions: deployed },
    ],
    shops: [SHOP, OTHER_SHOP],
    bucket: { max: 100_000, restoreRate: 100_000 },
  });
  const t = await startTestRuntime(instance, db, { http: true, env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY } });
  const url = t.url!;

  const call: SecurityEnv['call'] = async (token, method, path, body) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = text;
    }
    return { status: res.status, text, body: parsed };
  };
  const asA = (method: string, path: string, body?: unknown) => call(sessionToken('main', SHOP), method, path, body);
  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await asA(method, path, body);
    expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
    return res.body;
  };

  // Every tenant that calls in the matrix is installed first: installation on first contact is the caller's own row.
  for (const caller of FOREIGN_CALLERS) await call(caller.token(), 'GET', '/api/pages');
  await ok('GET', '/api/pages');

  const noteA = marker('note');
  const worker = await startWorker(t.runtime, { heartbeatIntervalMs: 100 });
  const { runId } = await ok('POST', '/api/flows/noisy/run', { input: { note: noteA } });
  await waitForRun(t.runtime.db, runId, (r) => r.status === 'completed', 60_000);
  await worker.stop();
  // With the worker stopped, this one stays queued: the lifecycle routes (cancel, delete) have a live run to aim at.
  const { runId: queuedRunId } = await ok('POST', '/api/flows/noisy/run', { input: { note: noteA } });

  const cronKey = 'noisy:0 * * * *';
  await ok('POST', '/api/crons/toggle', { key: cronKey, enabled: false });

  const baseUrl = `https://${marker('vault')}.example`;
  const password = marker('password');
  await ok('PUT', '/api/providers/vault', { config: { baseUrl, password } });

  const tokenName = marker('token');
  const created = await ok('POST', '/api/mcp/tokens', { name: tokenName, permissions: ['read_flows', 'read_logs', 'read_runs'] });
  const mcp = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${created.secret}`, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'service.flows.list', arguments: {} } }),
  });
  expect(mcp.status).toBe(200);

  const instanceTitle = marker('instance');
  const fn = await ok('POST', '/api/functions/hide-shipping/instances', { title: instanceTitle, config: { keyword: marker('keyword') } });

  const seed: Seed = {
    runId,
    queuedRunId,
    cronKey,
    mcpTokenId: created.token.id,
    mcpSecret: created.secret,
    instanceId: fn.instance.id,
    markers: [
      noteA,
      runId,
      queuedRunId,
      baseUrl,
      password,
      tokenName,
      created.token.id,
      created.token.fingerprint,
      fn.instance.id,
      instanceTitle,
      A_ONLY.pageTitle,
      A_ONLY.functionHandle,
    ],
  };

  // A sees every piece of its data: the isolation checks below aim at resources that exist.
  expect((await asA('GET', `/api/runs/${runId}`)).status).toBe(200);
  expect((await asA('GET', `/api/runs/${runId}/logs`)).text).toContain(noteA);
  expect((await asA('GET', '/api/providers')).text).toContain(baseUrl);
  expect((await asA('GET', `/api/mcp/tokens/${seed.mcpTokenId}`)).body.audits).toHaveLength(1);
  expect((await asA('GET', '/api/functions/hide-shipping/instances')).text).toContain(instanceTitle);
  expect((await asA('GET', '/api/home')).body.counts.completed).toBe(1);
  expect((await asA('GET', '/api/crons')).body.crons.find((c: any) => c.key === cronKey)?.enabled).toBe(false);

  return {
    t,
    sim,
    url,
    seed,
    call,
    async close() {
      await t.close();
      await sim.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Database dumps

export interface DumpRow {
  table: string;
  /** `app_handle/shop` for the tables that carry both columns; null otherwise. */
  tenant: string | null;
  text: string;
}

const TABLE_NAME_RE = /^[a-z_][a-z0-9_]*$/;

/** Every row of every table of the schema (`select * from` each table information_schema lists), sorted. */
export async function dumpDatabase(db: Database): Promise<DumpRow[]> {
  const tables = await db.query<{ table_name: string }>(
    sql`select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`,
  );
  const out: DumpRow[] = [];
  for (const { table_name: table } of tables) {
    if (!TABLE_NAME_RE.test(table)) throw new Error(`unexpected table name ${JSON.stringify(table)}`);
    const rows = await db.query<Record<string, unknown>>(sql.raw(`select * from "${table}"`));
    for (const row of rows) {
      const text = JSON.stringify(row, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
      const tenant = 'app_handle' in row && 'shop' in row ? `${String(row.app_handle)}/${String(row.shop)}` : null;
      out.push({ table, tenant, text: `${table} ${text}` });
    }
  }
  return out.sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0));
}

/** The rows that differ between two dumps: removed (`-`) and added (`+`), each with its table. */
export function dumpDiff(before: DumpRow[], after: DumpRow[]): DumpRow[] {
  const count = (rows: DumpRow[]) => {
    const m = new Map<string, number>();
    for (const r of rows) m.set(r.text, (m.get(r.text) ?? 0) + 1);
    return m;
  };
  const b = count(before);
  const a = count(after);
  const diff: DumpRow[] = [];
  for (const r of before) if ((a.get(r.text) ?? 0) < (b.get(r.text) ?? 0)) diff.push({ ...r, text: `- ${r.text}` });
  for (const r of after) if ((b.get(r.text) ?? 0) < (a.get(r.text) ?? 0)) diff.push({ ...r, text: `+ ${r.text}` });
  return diff;
}

/** The changed rows that do not belong to `tenant` (all of them when tenant is null). */
export function changesOutside(diff: DumpRow[], tenant: { appHandle: string; shop: string } | null): DumpRow[] {
  const own = tenant ? `${tenant.appHandle}/${tenant.shop}` : null;
  return diff.filter((r) => own === null || r.tenant !== own);
}
