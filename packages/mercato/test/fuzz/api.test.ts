/**
 * Fuzz of the admin API (/api/*) over real HTTP: every route of the route table with odd path parameters, query
 * strings (pagination, filters), bodies (malformed, wrongly typed, deeply nested, over the limit, NUL and odd Unicode,
 * SQL-looking strings), content types and Authorization headers. Properties: see harness.ts (no 5xx, no internal
 * detail, 4xx as JSON `{ error }`, memory bounded); the server answers /healthz after the run.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import {
  type FuzzRequest,
  type FuzzServer,
  OTHER_SHOP,
  HEAP_GROWTH_BOUND_MB,
  RSS_GROWTH_BOUND_MB,
  casesFor,
  checkAnswer,
  contentType,
  deepJson,
  deepJsonText,
  fuzzParams,
  headerText,
  invalidUtf8,
  malformedJson,
  oddJson,
  oddSegment,
  oddString,
  queryOf,
  shortOddString,
  send,
  startFuzzServer,
  tally,
  timeoutFor,
} from './harness.ts';

const CASES = casesFor(0.3);

/** A route of the admin API: method, path with `:param`s, the query keys it reads, and the body it expects. */
interface Endpoint {
  method: string;
  path: string;
  query?: readonly string[];
  body?: fc.Arbitrary<unknown>;
}

const PAGINATION = ['limit', 'offset', 'status', 'from', 'to', 'search', 'cursor'];
const ENDPOINTS: readonly Endpoint[] = [
  { method: 'GET', path: '/api/pages' },
  { method: 'GET', path: '/api/home' },
  { method: 'GET', path: '/api/stats/runs', query: ['range'] },
  { method: 'GET', path: '/api/stats/flows', query: ['range'] },
  { method: 'GET', path: '/api/flows' },
  {
    method: 'POST',
    path: '/api/flows/:flow/run',
    body: fc.record(
      {
        // echo takes any object, typed wants { n: 0..1000, tag? }: mostly plausible, with odd leaves
        input: fc.oneof(
          fc.dictionary(shortOddString, oddJson, { maxKeys: 4 }),
          fc.record({ n: fc.oneof(fc.integer({ min: -5, max: 1005 }), oddJson), tag: shortOddString }, { requiredKeys: ['n'] }),
          oddJson,
        ),
        retryPolicy: fc.oneof(
          { weight: 4, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.record({ maxAttempts: oddJson, initialIntervalMs: oddJson }, { requiredKeys: [] }) },
          { weight: 1, arbitrary: oddJson },
        ),
      },
      { requiredKeys: [] },
    ),
  },
  { method: 'GET', path: '/api/flows/:flow/runs', query: PAGINATION },
  { method: 'GET', path: '/api/runs', query: PAGINATION },
  {
    method: 'POST',
    path: '/api/runs/bulk-delete',
    body: fc.record({ ids: fc.oneof(fc.array(fc.oneof(fc.uuid(), oddString), { maxLength: 120 }), oddJson) }),
  },
  { method: 'GET', path: '/api/runs/:run' },
  { method: 'POST', path: '/api/runs/:run/cancel' },
  { method: 'POST', path: '/api/runs/:run/retry', query: ['mode'] },
  { method: 'DELETE', path: '/api/runs/:run' },
  { method: 'GET', path: '/api/runs/:run/watch', query: ['since', 'timeout'] },
  { method: 'GET', path: '/api/runs/:run/logs', query: ['q', 'levels', 'limit', 'offset', 'before'] },
  { method: 'GET', path: '/api/runs/:run/logs/export', query: ['format', 'q', 'levels'] },
  { method: 'GET', path: '/api/providers' },
  {
    method: 'PUT',
    path: '/api/providers/:provider',
    body: fc.record(
      { config: fc.oneof(fc.record({ password: oddJson, region: oddJson }, { requiredKeys: [] }), oddJson) },
      { requiredKeys: [] },
    ),
  },
  { method: 'POST', path: '/api/providers/:provider/check' },
  { method: 'GET', path: '/api/crons' },
  { method: 'POST', path: '/api/crons/toggle', body: fc.record({ key: oddJson, enabled: oddJson }, { requiredKeys: [] }) },
  { method: 'GET', path: '/api/functions' },
  { method: 'GET', path: '/api/functions/:handle/instances' },
  { method: 'POST', path: '/api/functions/:handle/instances', body: oddJson },
  { method: 'PUT', path: '/api/functions/:handle/instances/:id', body: oddJson },
  { method: 'DELETE', path: '/api/functions/:handle/instances/:id' },
  { method: 'GET', path: '/api/mcp/capabilities' },
  { method: 'GET', path: '/api/mcp/tokens' },
  {
    method: 'POST',
    path: '/api/mcp/tokens',
    body: fc.record(
      {
        name: oddJson,
        permissions: fc.oneof(fc.array(fc.constantFrom('read_logs', 'read_flows', 'run_flows', 'nope', ''), { maxLength: 4 }), oddJson),
        expiresAt: fc.oneof(fc.constantFrom('2030-01-01T00:00:00Z', '1970-01-01', 'never', '', '2030-02-30'), oddJson),
      },
      { requiredKeys: [] },
    ),
  },
  { method: 'GET', path: '/api/mcp/tokens/:token' },
  { method: 'PATCH', path: '/api/mcp/tokens/:token', body: fc.record({ name: oddJson, status: oddJson }, { requiredKeys: [] }) },
  { method: 'PUT', path: '/api/mcp/tokens/:token/permissions', body: fc.record({ permissions: oddJson }, { requiredKeys: [] }) },
  { method: 'POST', path: '/api/mcp/tokens/:token/rotate' },
  { method: 'POST', path: '/api/mcp/tokens/:token/revoke' },
  { method: 'GET', path: '/api/pages/custom' },
  { method: 'POST', path: '/api/pages/custom/:page/_rpc/:kind/:name', body: fc.record({ input: oddJson }, { requiredKeys: [] }) },
];

/** Real ids and names (so the fuzz reaches past the 404s) mixed with odd ones. */
const known = { runs: [] as string[], tokens: [] as string[] };
const PARAM_VALUES: Record<string, () => fc.Arbitrary<string>> = {
  flow: () => fc.constantFrom('echo', 'typed', 'webhook%3Aorders%2Fcreate', 'nope'),
  run: () => (known.runs.length > 0 ? fc.constantFrom(...known.runs) : fc.uuid()),
  token: () => (known.tokens.length > 0 ? fc.constantFrom(...known.tokens) : fc.uuid()),
  provider: () => fc.constantFrom('vault', 'nope'),
  handle: () => fc.constantFrom('discount', 'nope'),
  id: () => fc.uuid(),
  page: () => fc.constantFrom('report', 'nope'),
  kind: () => fc.constantFrom('loader', 'action', 'nope'),
  name: () => fc.constantFrom('summary', 'raw', 'rerun', 'nope'),
};

function pathOf(endpoint: Endpoint): fc.Arbitrary<string> {
  const segments = endpoint.path.split('/').map((segment) => {
    if (!segment.startsWith(':')) return fc.constant(segment);
    const real = PARAM_VALUES[segment.slice(1)]!;
    return fc.oneof({ weight: 3, arbitrary: real() }, { weight: 2, arbitrary: oddSegment });
  });
  return fc.tuple(...segments).map((parts) => parts.join('/'));
}

/** The body: the expected shape with odd leaves, or any JSON, or malformed, deep, huge, invalid UTF-8, or none. */
function bodyOf(endpoint: Endpoint): fc.Arbitrary<string | Uint8Array | undefined> {
  return fc.oneof(
    { weight: 8, arbitrary: (endpoint.body ?? oddJson).map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 2, arbitrary: oddJson.map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 2, arbitrary: malformedJson },
    { weight: 1, arbitrary: deepJsonText },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(999_990, 1_000_000, 1_000_001, 1_500_000)
        .map((n) => JSON.stringify({ input: { pad: 'x'.repeat(n - 22) } })),
    },
    { weight: 1, arbitrary: invalidUtf8 },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

const authorization = (server: () => FuzzServer) =>
  fc.oneof(
    { weight: 12, arbitrary: fc.constant(() => `Bearer ${server().token()}`) },
    { weight: 1, arbitrary: fc.constant(() => `Bearer ${server().token(OTHER_SHOP)}`) },
    { weight: 1, arbitrary: headerText.map((h) => () => h) },
    { weight: 1, arbitrary: headerText.map((h) => () => `Bearer ${h}`) },
    { weight: 1, arbitrary: fc.constant(() => undefined) },
  );

describeEngines('fuzz: /api over HTTP', (get) => {
  let server: FuzzServer;

  beforeAll(async () => {
    server = await startFuzzServer(get().db);
    // a few real runs and a token, so the fuzz reaches past "not found"
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/api/flows/echo/run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token()}`, 'content-type': 'application/json' },
        body: JSON.stringify({ input: { i, text: 'séance \u202e' } }),
      });
      expect(res.status).toBe(202);
      known.runs.push(((await res.json()) as { runId: string }).runId);
    }
    const res = await fetch(`${server.url}/api/mcp/tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.token()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'fuzz', permissions: ['read_logs', 'read_flows'] }),
    });
    expect(res.status).toBe(201);
    known.tokens.push(((await res.json()) as { token: { id: string } }).token.id);
  });
  afterAll(async () => {
    known.runs.length = 0;
    known.tokens.length = 0;
    await server?.close();
  });

  it(
    `${CASES} odd requests: no 5xx, no internal detail, 4xx as JSON { error }, memory bounded`,
    async () => {
      const stats = tally();
      // MERCATO_FUZZ_ONLY=<text>: only the endpoints whose "METHOD path" contains it (to dig into one finding)
      const only = process.env.MERCATO_FUZZ_ONLY;
      const endpoints = only ? ENDPOINTS.filter((e) => `${e.method} ${e.path}`.includes(only)) : ENDPOINTS;
      const request = fc.constantFrom(...endpoints).chain((endpoint) =>
        fc.record({
          method: fc.oneof(
            { weight: 9, arbitrary: fc.constant(endpoint.method) },
            { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD') },
          ),
          path: pathOf(endpoint),
          query: endpoint.path.endsWith('/watch')
            ? // a long poll on a real run waits its timeout: keep it at 0 or 1 s (odd values are still tried by the keys)
              fc.constantFrom('?timeout=0', '?timeout=1&since=x', '?timeout=-1', '?timeout=abc', '?timeout=0&since=' + 'z'.repeat(400))
            : queryOf(endpoint.query ?? PAGINATION),
          body: bodyOf(endpoint),
          contentType,
          authorization: authorization(() => server),
        }),
      );
      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          const headers: Record<string, string> = {};
          const auth = r.authorization();
          if (auth !== undefined) headers.authorization = auth;
          if (r.contentType !== undefined) headers['content-type'] = r.contentType;
          const req: FuzzRequest = { method: r.method, path: r.path + r.query, headers, body: r.body };
          const answer = await send(server.url, req);
          stats.add(answer.status, answer);
          checkAnswer(answer, req);
        }),
        fuzzParams(CASES),
      );
      const { rssGrowthMb, heapGrowthMb } = stats.finish(`/api [${get().kind}]`);
      expect(heapGrowthMb).toBeLessThan(HEAP_GROWTH_BOUND_MB);
      expect(rssGrowthMb).toBeLessThan(RSS_GROWTH_BOUND_MB);
      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);
    },
    timeoutFor(CASES, 60),
  );

  it('JSON nested 5,000 levels (objects, arrays, mixed) in every /api body answers 400, and 256 levels are accepted', async () => {
    const post = (path: string, body: string, method = 'POST') =>
      send(server.url, { method, path, headers: { authorization: `Bearer ${server.token()}`, 'content-type': 'application/json' }, body });
    for (const kind of ['object', 'array', 'mixed'] as const) {
      const deep = deepJson(5000, kind);
      for (const [method, path, wrap] of [
        ['POST', '/api/flows/echo/run', (d: string) => `{"input":{"a":${d}}}`],
        ['POST', '/api/runs/bulk-delete', (d: string) => `{"ids":${d}}`],
        ['PUT', '/api/providers/vault', (d: string) => `{"config":${d}}`],
        ['POST', '/api/crons/toggle', (d: string) => d],
        ['POST', '/api/mcp/tokens', (d: string) => `{"name":"x","permissions":${d}}`],
        ['POST', '/api/pages/custom/report/_rpc/loader/raw', (d: string) => `{"input":${d}}`],
      ] as const) {
        const req: FuzzRequest = { method, path, headers: {}, body: wrap(deep) };
        const answer = await post(path, wrap(deep), method);
        checkAnswer(answer, req);
        expect(answer.status, `${method} ${path} (${kind})`).toBe(400);
        expect((answer.json as { error: string }).error).toMatch(/more than 256 levels deep/);
      }
    }
    // the limit itself, counted over the whole body: 256 levels are accepted (and the run stored), 257 are refused
    const at = (levels: number) => post('/api/flows/echo/run', `{"input":${deepJson(levels - 1)}}`);
    expect((await at(256)).status).toBe(202);
    expect((await at(257)).status).toBe(400);
  });
});
