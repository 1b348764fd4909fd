/**
 * Fuzz of `POST /mcp` over real HTTP with a valid MCP token (and sometimes a bad one): JSON-RPC messages with known and
 * unknown methods, odd ids and params, batches, notifications, tool calls with odd arguments (flows.run included),
 * resource reads of odd URIs, malformed and deeply nested JSON, wrong content types and protocol versions.
 * Properties: see harness.ts; a 4xx body may be a JSON-RPC error object.
 */
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { MCP_METHOD_NAMES } from '../../src/mcp/rpc.ts';
import {
  type FuzzRequest,
  type FuzzServer,
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
  oddString,
  send,
  shortOddString,
  startFuzzServer,
  tally,
  timeoutFor,
} from './harness.ts';

const CASES = casesFor(0.15);

/** Every request method of MCP, answered or not, and a notification (which gets no answer). */
const METHODS = [...MCP_METHOD_NAMES, 'notifications/initialized'];
const TOOLS = [
  'service.shops.list',
  'service.admin.graphql',
  'service.logs.search',
  'service.flows.list',
  'service.flows.run',
  'service.crons.list',
  'service.crons.set_enabled',
  'fuzz.echo',
];
const URIS = ['service://docs/log-search', 'service://permissions', 'service://tools/service.logs.search', 'service://runs/recent'];

const id = fc.oneof(
  { weight: 6, arbitrary: fc.integer() },
  { weight: 2, arbitrary: oddString },
  { weight: 1, arbitrary: fc.constantFrom(null, 1.5, -0, 2 ** 60, true, {}, [], 'x'.repeat(5000)) },
);

/** Arguments of a tool: its expected shape with odd values, or anything. */
const toolArguments = (tool: string): fc.Arbitrary<unknown> => {
  const shaped: Record<string, fc.Arbitrary<unknown>> = {
    'service.flows.run': fc.record(
      {
        flow: fc.oneof(fc.constantFrom('echo', 'typed', 'webhook:orders/create', 'nope'), oddString),
        input: oddJson,
        shop: oddJson,
      },
      { requiredKeys: [] },
    ),
    'service.logs.search': fc.record(
      { runId: fc.oneof(fc.uuid(), oddString), q: oddString, limit: oddJson, levels: oddJson, shop: oddJson },
      { requiredKeys: [] },
    ),
    'service.crons.set_enabled': fc.record({ key: oddJson, enabled: oddJson, shop: oddJson }, { requiredKeys: [] }),
    'fuzz.echo': fc.record({ message: oddJson, count: oddJson }, { requiredKeys: [] }),
  };
  return fc.oneof({ weight: 3, arbitrary: shaped[tool] ?? oddJson }, { weight: 1, arbitrary: oddJson });
};

const params = (method: string): fc.Arbitrary<unknown> => {
  if (method === 'tools/call')
    return fc.constantFrom(...TOOLS, 'nope', '').chain((name) =>
      fc.record(
        {
          name: fc.oneof({ weight: 5, arbitrary: fc.constant<unknown>(name) }, { weight: 1, arbitrary: oddJson }),
          arguments: toolArguments(name),
        },
        { requiredKeys: [] },
      ),
    );
  if (method === 'resources/read')
    return fc.record(
      {
        uri: fc.oneof(
          fc.constantFrom<unknown>(...URIS),
          oddString.map((s) => `service://${s}`),
          oddJson,
        ),
      },
      { requiredKeys: [] },
    );
  if (method === 'initialize')
    return fc.record(
      { protocolVersion: fc.oneof(fc.constant('2025-11-25'), oddString), capabilities: oddJson, clientInfo: oddJson },
      { requiredKeys: [] },
    );
  return fc.oneof(fc.constant({}), fc.dictionary(shortOddString, oddJson, { maxKeys: 3 }));
};

/** One JSON-RPC message: mostly well-formed, with odd parts. */
const message: fc.Arbitrary<unknown> = fc
  .oneof(
    { weight: 6, arbitrary: fc.constant('tools/call') },
    { weight: 2, arbitrary: fc.constant('resources/read') },
    { weight: 4, arbitrary: fc.constantFrom(...METHODS) },
    { weight: 1, arbitrary: oddString },
  )
  .chain((method) =>
    fc.record(
      {
        jsonrpc: fc.oneof({ weight: 9, arbitrary: fc.constant<unknown>('2.0') }, { weight: 1, arbitrary: oddJson }),
        id,
        method: fc.oneof({ weight: 9, arbitrary: fc.constant<unknown>(method) }, { weight: 1, arbitrary: oddJson }),
        params: fc.oneof({ weight: 5, arbitrary: params(method) }, { weight: 1, arbitrary: oddJson }),
      },
      { requiredKeys: ['jsonrpc', 'method'] },
    ),
  );

const body: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  { weight: 10, arbitrary: message.map((m) => JSON.stringify(m)) },
  { weight: 1, arbitrary: fc.array(message, { maxLength: 5 }).map((batch) => JSON.stringify(batch)) },
  { weight: 2, arbitrary: malformedJson },
  { weight: 1, arbitrary: deepJsonText },
  {
    weight: 1,
    // a tool call whose arguments nest deeper than the limit
    arbitrary: fc.constantFrom(300, 5000, 50_000).map((d) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'service.flows.run', arguments: { flow: 'echo', input: { a: 0 } } },
      }).replace('{"a":0}', `{"a":${deepJson(d, 'array')}}`),
    ),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(1_000_000, 1_000_001)
      .map((n) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { p: 'x'.repeat(n - 60) } })),
  },
  { weight: 1, arbitrary: invalidUtf8 },
);

describeEngines('fuzz: POST /mcp over HTTP', (get) => {
  let server: FuzzServer;
  let secret: string;

  beforeAll(async () => {
    server = await startFuzzServer(get().db);
    const res = await fetch(`${server.url}/api/mcp/tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.token()}`, 'content-type': 'application/json' },
      // every permission but the Admin API (which would reach the simulator's shop data): tools run as far as they go
      body: JSON.stringify({ name: 'fuzz', permissions: ['read_logs', 'read_flows', 'run_flows', 'read_crons', 'manage_crons'] }),
    });
    expect(res.status).toBe(201);
    secret = ((await res.json()) as { secret: string }).secret;
  });
  afterAll(async () => {
    await server?.close();
  });

  it(
    `${CASES} odd JSON-RPC requests: no 5xx, no internal detail, 4xx as JSON, memory bounded`,
    async () => {
      const stats = tally();
      const request = fc.record({
        body,
        contentType,
        accept: fc.constantFrom('application/json, text/event-stream', 'application/json', 'text/event-stream', '*/*', undefined),
        authorization: fc.oneof(
          { weight: 12, arbitrary: fc.constant<string | undefined>('valid') },
          { weight: 1, arbitrary: headerText.map((h) => `Bearer ${h}`) },
          { weight: 1, arbitrary: fc.constant(undefined) },
        ),
        protocol: fc.oneof(
          { weight: 8, arbitrary: fc.constant<string | undefined>(undefined) },
          { weight: 1, arbitrary: fc.constantFrom('2025-11-25', '2024-11-05', '', 'x') },
        ),
        origin: fc.oneof(
          { weight: 8, arbitrary: fc.constant<string | undefined>(undefined) },
          { weight: 1, arbitrary: fc.constantFrom('null', 'https://evil.example', 'http://localhost:1') },
        ),
        method: fc.oneof(
          { weight: 12, arbitrary: fc.constant('POST') },
          { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'OPTIONS', 'HEAD') },
        ),
      });
      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          const headers: Record<string, string> = {};
          if (r.authorization !== undefined) headers.authorization = r.authorization === 'valid' ? `Bearer ${secret}` : r.authorization;
          if (r.contentType !== undefined) headers['content-type'] = r.contentType;
          if (r.accept !== undefined) headers.accept = r.accept;
          if (r.protocol !== undefined) headers['mcp-protocol-version'] = r.protocol;
          if (r.origin !== undefined) headers.origin = r.origin;
          const req: FuzzRequest = { method: r.method, path: '/mcp', headers, body: r.body };
          const answer = await send(server.url, req);
          stats.add(answer.status, answer);
          checkAnswer(answer, req, { jsonRpc: true });
        }),
        fuzzParams(CASES),
      );
      const { rssGrowthMb, heapGrowthMb } = stats.finish(`/mcp [${get().kind}]`);
      expect(heapGrowthMb).toBeLessThan(HEAP_GROWTH_BOUND_MB);
      expect(rssGrowthMb).toBeLessThan(RSS_GROWTH_BOUND_MB);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    },
    timeoutFor(CASES, 60),
  );

  it("tool calls whose name or arguments hold NUL characters or lone surrogates each leave an audit record (the probe's N2)", async () => {
    const odd = fc
      .stringMatching(/^[a-z.]{0,8}$/)
      .chain((base) =>
        fc
          .array(fc.constantFrom('\u0000', '\ud800', '\udfff', 'x', '\u0000\u0000'), { minLength: 1, maxLength: 4 })
          .map((parts) => `${base}${parts.join('')}`),
      );
    const calls = await fc.sample(fc.tuple(odd, odd), { numRuns: 40, seed: 34 });
    const [{ n: before }] = await get().db.query<{ n: number }>(sql`select count(*)::int as n from mcp_audits`);
    const errorsBefore = server.errorLines().length;
    for (const [name, value] of calls) {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: `service.runs.get${name}`, arguments: { runId: value } },
      });
      const res = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body,
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    const [{ n: after }] = await get().db.query<{ n: number }>(sql`select count(*)::int as n from mcp_audits`);
    expect(after - before).toBe(calls.length);
    expect(server.errorLines().slice(errorsBefore)).toEqual([]);
  });
});
