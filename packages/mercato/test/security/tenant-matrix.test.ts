/**
 * The tenant matrix (docs/admin-api.md, "Tenant isolation and authentication"): every `/api` route of the real route
 * table × three foreign callers — another shop of the same app, the same shop of another app, a token without a shop —
 * and every MCP tool and resource × a token of another shop. Each call aims at a resource of tenant A = (main, SHOP) and
 * must be refused (404/403; 401 for the shopless token) or, for a list, answer without any of A's data; a dump of every
 * table before and after shows what changed. A route, tool or resource without an entry below fails the coverage test.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { buildApp } from '../../src/serve.ts';
import {
  type Caller,
  FOREIGN_CALLERS,
  OTHER_SHOP,
  SHOP,
  type Seed,
  type SecurityEnv,
  TENANT_A,
  changesOutside,
  checkerSaw,
  dumpDatabase,
  dumpDiff,
  sessionToken,
  startSecurityEnv,
} from './fixture.ts';

/**
 * What a foreign caller must get:
 * - `deny`: 404 or 403, and no row of any table changed;
 * - `list`: `status` (default 200) with none of A's markers in the body, and no row changed (`aSees`: A's own call of
 *   the same route shows at least one marker, so an empty answer cannot pass for isolation);
 * - `own`: the route acts on the caller's own tenant (a create, a save): `status`, none of A's markers in the body, and
 *   no row of any other tenant (A included) or of a shared table changed.
 * The shopless token is refused with 401 on every route, whatever the entry says.
 */
type Expectation =
  | { kind: 'deny' }
  | { kind: 'list'; status?: number; aSees?: boolean; check?: (body: any, caller: Caller) => void }
  | { kind: 'own'; status: number; check?: (body: any, caller: Caller) => void };

interface RouteEntry {
  path: (seed: Seed) => string;
  body?: (seed: Seed) => unknown;
  expect: Expectation;
  /** The call reaches the platform: A's function instances there must be unchanged too. */
  platform?: boolean;
}

const deny: Expectation = { kind: 'deny' };
const list = (options: Omit<Extract<Expectation, { kind: 'list' }>, 'kind'> = {}): Expectation => ({ kind: 'list', ...options });
const own = (status: number, check?: (body: any, caller: Caller) => void): Expectation => ({ kind: 'own', status, check });

/** Middleware registered on /api (no handler of its own): authentication, page gate, body limit, installation, the custom-pages switch. */
const MIDDLEWARE = new Set(['ALL /api/*', 'ALL /api/pages/custom/*']);

const ROUTES: Record<string, RouteEntry> = {
  'GET /api/pages': { path: () => '/api/pages', expect: list() },

  // flows and runs
  'GET /api/flows': { path: () => '/api/flows', expect: list() },
  'POST /api/flows/:name/run': {
    path: () => '/api/flows/noisy/run',
    body: () => ({ input: { note: 'foreign' } }),
    expect: own(202),
  },
  'GET /api/flows/:name/runs': { path: () => '/api/flows/noisy/runs', expect: list({ aSees: true }) },
  'GET /api/runs': { path: () => '/api/runs', expect: list({ aSees: true }) },
  'POST /api/runs/bulk-delete': {
    path: () => '/api/runs/bulk-delete',
    body: (s) => ({ ids: [s.runId, s.queuedRunId] }),
    expect: list({ check: (body) => expect(body.deleted).toBe(0) }),
  },
  'GET /api/runs/:id': { path: (s) => `/api/runs/${s.runId}`, expect: deny },
  'POST /api/runs/:id/cancel': { path: (s) => `/api/runs/${s.queuedRunId}/cancel`, expect: deny },
  'POST /api/runs/:id/retry': { path: (s) => `/api/runs/${s.runId}/retry`, expect: deny },
  'DELETE /api/runs/:id': { path: (s) => `/api/runs/${s.runId}`, expect: deny },
  'GET /api/runs/:id/watch': { path: (s) => `/api/runs/${s.runId}/watch?timeout=1`, expect: deny },
  // the caller's own runs' version (no run, no id in the answer); A's runs never wake it (test/admin/watch.test.ts)
  'GET /api/runs/watch': {
    path: () => '/api/runs/watch?timeout=0',
    expect: list({ check: (body) => expect(body).toEqual({ changed: true, version: expect.any(String) }) }),
  },
  'GET /api/runs/:id/logs': { path: (s) => `/api/runs/${s.runId}/logs`, expect: deny },
  'GET /api/runs/:id/logs/export': { path: (s) => `/api/runs/${s.runId}/logs/export?format=ndjson`, expect: deny },
  'GET /api/home': {
    path: () => '/api/home',
    // A's only completed run is counted for A alone (the foreign callers' runs, made by the entries above, stay queued).
    expect: list({ check: (body) => expect(body.counts.completed).toBe(0) }),
  },
  // the charts' aggregates: A's completed run is never counted for a foreign caller
  'GET /api/stats/runs': {
    path: () => '/api/stats/runs?range=7d',
    expect: list({ check: (body) => expect(body.counts.completed).toBe(0) }),
  },
  'GET /api/stats/flows': {
    path: () => '/api/stats/flows',
    expect: list({ check: (body) => expect(body.flows.filter((f: { completed: number }) => f.completed > 0)).toEqual([]) }),
  },

  // providers
  'GET /api/providers': { path: () => '/api/providers', expect: list({ aSees: true }) },
  'PUT /api/providers/:name': {
    path: () => '/api/providers/vault',
    body: () => ({ config: { baseUrl: 'https://foreign.example', password: 'foreign-password' } }),
    expect: own(200),
  },
  'POST /api/providers/:name/check': { path: () => '/api/providers/vault/check', expect: own(200) },

  // crons
  'GET /api/crons': {
    path: () => '/api/crons',
    // A disabled the cron for itself; every other tenant still sees it enabled.
    expect: list({ check: (body) => expect(body.crons.map((c: any) => c.enabled)).toEqual([true]) }),
  },
  'POST /api/crons/toggle': { path: () => '/api/crons/toggle', body: (s) => ({ key: s.cronKey, enabled: true }), expect: own(200) },

  // functions (instances live on the platform)
  'GET /api/functions': { path: () => '/api/functions', expect: list({ aSees: true }) },
  'GET /api/functions/:handle/instances': {
    path: () => '/api/functions/hide-shipping/instances',
    expect: list({ aSees: true }),
    platform: true,
  },
  'POST /api/functions/:handle/instances': {
    path: () => '/api/functions/hide-shipping/instances',
    body: () => ({ title: 'foreign instance', config: { keyword: 'foreign' } }),
    expect: own(201),
    platform: true,
  },
  'PUT /api/functions/:handle/instances/:id': {
    path: (s) => `/api/functions/hide-shipping/instances/${encodeURIComponent(s.instanceId)}`,
    body: () => ({ title: 'hijacked', config: { keyword: 'hijacked' } }),
    expect: deny,
    platform: true,
  },
  'DELETE /api/functions/:handle/instances/:id': {
    path: (s) => `/api/functions/hide-shipping/instances/${encodeURIComponent(s.instanceId)}`,
    expect: deny,
    platform: true,
  },

  // MCP token administration
  'GET /api/mcp/capabilities': { path: () => '/api/mcp/capabilities', expect: list() },
  'GET /api/mcp/tokens': { path: () => '/api/mcp/tokens', expect: list({ aSees: true }) },
  'POST /api/mcp/tokens': { path: () => '/api/mcp/tokens', body: () => ({ name: 'foreign token' }), expect: own(201) },
  'GET /api/mcp/tokens/:id': { path: (s) => `/api/mcp/tokens/${s.mcpTokenId}`, expect: deny },
  'PATCH /api/mcp/tokens/:id': { path: (s) => `/api/mcp/tokens/${s.mcpTokenId}`, body: () => ({ status: 'disabled' }), expect: deny },
  'PUT /api/mcp/tokens/:id/permissions': {
    path: (s) => `/api/mcp/tokens/${s.mcpTokenId}/permissions`,
    body: () => ({ permissions: ['run_flows'] }),
    expect: deny,
  },
  'POST /api/mcp/tokens/:id/rotate': { path: (s) => `/api/mcp/tokens/${s.mcpTokenId}/rotate`, expect: deny },
  'POST /api/mcp/tokens/:id/revoke': { path: (s) => `/api/mcp/tokens/${s.mcpTokenId}/revoke`, expect: deny },

  // custom pages (the page `secret` authorizes tenant A only)
  'GET /api/pages/custom': { path: () => '/api/pages/custom', expect: list({ aSees: true }) },
  'POST /api/pages/custom/:page/_rpc/:kind/:name': {
    path: () => '/api/pages/custom/secret/_rpc/action/note',
    body: () => ({ input: {} }),
    expect: deny,
  },
};

/** What a foreign MCP token must get for a tool or resource: `deny` is a JSON-RPC -32602 (not found) or -32003 (out of scope). */
interface McpEntry {
  /** Tool arguments (tools only). */
  args?: (seed: Seed) => Record<string, unknown>;
  expect: 'deny' | 'list' | 'own';
  /** A's own token gets at least one of A's markers from the same call. */
  aSees?: boolean;
  check?: (result: any) => void;
}

const TOOLS: Record<string, McpEntry> = {
  'service.shops.list': {
    args: () => ({}),
    expect: 'own',
    check: (r) => expect(r.structuredContent.shops).toEqual([{ shop: OTHER_SHOP, current: true }]),
  },
  'service.admin.graphql': { args: () => ({ shop: SHOP, query: '{ shop { name } }' }), expect: 'deny' },
  'service.logs.search': { args: (s) => ({ runId: s.runId }), expect: 'deny', aSees: true },
  'service.flows.list': { args: () => ({}), expect: 'list' },
  'service.flows.run': {
    args: () => ({ flow: 'noisy', input: { note: 'foreign' } }),
    expect: 'own',
    check: (r) => expect(r.structuredContent.shop).toBe(OTHER_SHOP),
  },
  'service.crons.list': {
    args: () => ({}),
    expect: 'list',
    check: (r) => expect(r.structuredContent.crons.map((c: any) => c.enabled)).toEqual([true]),
  },
  // A's run, by another shop's token: "not found", never read, canceled or retried
  'service.runs.get': { args: (s) => ({ runId: s.runId }), expect: 'deny', aSees: true },
  'service.runs.cancel': { args: (s) => ({ runId: s.runId }), expect: 'deny' },
  'service.runs.retry': { args: (s) => ({ runId: s.runId, mode: 'reset' }), expect: 'deny' },
  // enabled: true, the default: the list checks above and below still see the cron enabled for the foreign tenant
  'service.crons.set_enabled': { args: (s) => ({ key: s.cronKey, enabled: true }), expect: 'own' },
  'notes.whoami': {
    args: () => ({}),
    expect: 'own',
    check: (r) => expect(r.structuredContent).toEqual({ appHandle: 'main', shop: OTHER_SHOP }),
  },
};

const RESOURCES: Record<string, McpEntry> = {
  'service://docs/log-search': { expect: 'list' },
  'service://permissions': { expect: 'own', check: (r) => expect(JSON.parse(r.contents[0].text).token.shop).toBe(OTHER_SHOP) },
  'service://tools/service.logs.search': { expect: 'list' },
  'service://runs/recent': { expect: 'list', aSees: true },
  'notes://whoami': { expect: 'own', check: (r) => expect(r.contents[0].text).toBe(`main ${OTHER_SHOP}`) },
};

const FOREIGN_STATUSES = [404];

describeEngines('tenant matrix', (get) => {
  let env: SecurityEnv;
  let foreignMcpSecret: string;
  beforeAll(async () => {
    env = await startSecurityEnv(get().db);
    // B's MCP token holds every permission, so tools/list and resources/list name the whole catalog.
    const capabilities = await env.call(sessionToken('main', OTHER_SHOP), 'GET', '/api/mcp/capabilities');
    const created = await env.call(sessionToken('main', OTHER_SHOP), 'POST', '/api/mcp/tokens', {
      name: 'foreign, every permission',
      permissions: capabilities.body.permissions.map((p: any) => p.key),
    });
    expect(created.status).toBe(201);
    foreignMcpSecret = created.body.secret;
  }, 120_000);
  afterAll(() => env?.close());

  const dump = () => dumpDatabase(get().db);
  /** A's markers in an answer, leaving out those the request itself carried (an error may quote the id it was given). */
  const markersIn = (text: string, request = '') => env.seed.markers.filter((m) => text.includes(m) && !request.includes(m));
  const aInstances = async () =>
    (await env.call(sessionToken('main', SHOP), 'GET', '/api/functions/hide-shipping/instances')).body.instances.map((i: any) => [
      i.id,
      i.owner,
      i.config,
    ]);

  it('every /api route of the route table has a matrix entry, and every entry a route', () => {
    const table = buildApp(env.t.runtime).routes.filter((r) => r.path.startsWith('/api'));
    const keys = [...new Set(table.map((r) => `${r.method} ${r.path}`))];
    const missing = keys.filter((k) => !MIDDLEWARE.has(k) && !(k in ROUTES));
    expect(missing, `routes without a tenant-matrix entry in test/security/tenant-matrix.test.ts: ${missing.join(', ')}`).toEqual([]);
    const stale = Object.keys(ROUTES).filter((k) => !keys.includes(k));
    expect(stale, `matrix entries naming no route: ${stale.join(', ')}`).toEqual([]);
    expect([...MIDDLEWARE].filter((k) => !keys.includes(k))).toEqual([]);
  });

  for (const [key, entry] of Object.entries(ROUTES)) {
    it(`${key} × every foreign caller: nothing of A read or changed`, async () => {
      const [method] = key.split(' ') as [string];
      const path = entry.path(env.seed);
      const body = entry.body?.(env.seed);
      const exp = entry.expect;
      if (exp.kind === 'list' && exp.aSees) {
        const mine = await env.call(sessionToken('main', SHOP), method, path, body);
        expect(mine.status).toBe(exp.status ?? 200);
        expect(markersIn(mine.text), `A's own ${key} shows A's data`).not.toEqual([]);
      }
      for (const caller of FOREIGN_CALLERS) {
        const label = `${key} as ${caller.name}`;
        const platformBefore = entry.platform ? await aInstances() : undefined;
        const before = await dump();
        const res = await env.call(caller.token(), method, path, body);
        const diff = dumpDiff(before, await dump());
        expect(markersIn(res.text, `${path} ${JSON.stringify(body)}`), `${label}: A's data in the answer`).toEqual([]);
        expect(res.status, `${label}: 5xx`).toBeLessThan(500);
        if (caller.tenant === null) {
          expect(res.status, label).toBe(401);
          expect(diff, label).toEqual([]);
        } else if (exp.kind === 'deny') {
          expect(FOREIGN_STATUSES, `${label}: answered ${res.status} ${res.text.slice(0, 200)}`).toContain(res.status);
          expect(
            diff.map((r) => r.text),
            label,
          ).toEqual([]);
        } else if (exp.kind === 'list') {
          expect(res.status, `${label}: ${res.text.slice(0, 200)}`).toBe(exp.status ?? 200);
          exp.check?.(res.body, caller);
          expect(
            diff.map((r) => r.text),
            label,
          ).toEqual([]);
        } else {
          expect(res.status, `${label}: ${res.text.slice(0, 200)}`).toBe(exp.status);
          exp.check?.(res.body, caller);
          expect(
            changesOutside(diff, caller.tenant).map((r) => r.text),
            `${label}: rows of other tenants changed`,
          ).toEqual([]);
        }
        if (platformBefore) expect(await aInstances(), `${label}: A's instances on the platform`).toEqual(platformBefore);
      }
    });
  }

  it("no provider checker run for another tenant was given A's config", () => {
    const seen = JSON.stringify(checkerSaw);
    expect(markersIn(seen)).toEqual([]);
  });

  // --- MCP ---------------------------------------------------------------------------------------

  const rpc = async (secret: string, method: string, params: Record<string, unknown>) => {
    const res = await fetch(`${env.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const text = await res.text();
    return { status: res.status, text, body: JSON.parse(text) };
  };

  it('every MCP tool and resource the server lists has a matrix entry, and every entry a capability', async () => {
    const tools = (await rpc(foreignMcpSecret, 'tools/list', {})).body.result.tools.map((t: any) => t.name);
    const resources = (await rpc(foreignMcpSecret, 'resources/list', {})).body.result.resources.map((r: any) => r.uri);
    expect(tools.length).toBeGreaterThan(0);
    const missing = [...tools.filter((n: string) => !(n in TOOLS)), ...resources.filter((u: string) => !(u in RESOURCES))];
    expect(
      missing,
      `MCP tools/resources without a tenant-matrix entry in test/security/tenant-matrix.test.ts: ${missing.join(', ')}`,
    ).toEqual([]);
    const stale = [
      ...Object.keys(TOOLS).filter((n) => !tools.includes(n)),
      ...Object.keys(RESOURCES).filter((u) => !resources.includes(u)),
    ];
    expect(stale, `matrix entries naming no MCP capability: ${stale.join(', ')}`).toEqual([]);
  });

  const mcpCases = [
    ...Object.entries(TOOLS).map(([name, e]) => ({
      label: `tool ${name}`,
      e,
      method: 'tools/call',
      params: (s: Seed) => ({ name, arguments: e.args?.(s) ?? {} }),
    })),
    ...Object.entries(RESOURCES).map(([uri, e]) => ({ label: `resource ${uri}`, e, method: 'resources/read', params: () => ({ uri }) })),
  ];
  for (const { label, e, method, params } of mcpCases) {
    it(`MCP ${label} with a token of another shop: nothing of A read or changed`, async () => {
      if (e.aSees) {
        const mine = await rpc(env.seed.mcpSecret, method, params(env.seed));
        expect(mine.body.error, mine.text).toBeUndefined();
        expect(markersIn(mine.text), `A's own token reads A's data`).not.toEqual([]);
      }
      const caller = { appHandle: 'main', shop: OTHER_SHOP };
      const before = await dump();
      const res = await rpc(foreignMcpSecret, method, params(env.seed));
      const diff = dumpDiff(before, await dump());
      expect(markersIn(res.text, JSON.stringify(params(env.seed))), `${label}: A's data in the answer`).toEqual([]);
      expect(res.status).toBe(200);
      if (e.expect === 'deny') {
        expect([-32602, -32003], res.text).toContain(res.body.error?.code);
      } else {
        expect(res.body.error, res.text).toBeUndefined();
        e.check?.(res.body.result);
      }
      expect(
        changesOutside(diff, caller).map((r) => r.text),
        `${label}: rows of other tenants changed`,
      ).toEqual([]);
      if (e.expect !== 'own') {
        // B's own rows: only its audit record and its token's lastUsedAt may move.
        expect(
          [...new Set(diff.map((r) => r.table))].filter((t) => t !== 'mcp_audits' && t !== 'mcp_tokens'),
          label,
        ).toEqual([]);
      }
    });
  }

  it("the dump sees a change: A's own write shows up as changed rows of A only", async () => {
    const before = await dump();
    const res = await env.call(sessionToken('main', SHOP), 'POST', '/api/crons/toggle', { key: env.seed.cronKey, enabled: true });
    expect(res.status).toBe(200);
    const diff = dumpDiff(before, await dump());
    expect(diff.length).toBeGreaterThan(0);
    expect(changesOutside(diff, TENANT_A)).toEqual([]);
    expect(changesOutside(diff, { appHandle: 'main', shop: OTHER_SHOP }).length).toBeGreaterThan(0);
  });
});
