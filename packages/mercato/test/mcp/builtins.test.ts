/**
 * The built-in tools and resources against the real integrations: flows and the worker, log search, crons, and the
 * platform simulator (installations, Admin GraphQL) — with the default shop scope and with mcp.crossShopAccess.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'drizzle-orm';
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { LATEST_STABLE_API_VERSION } from '../../src/app/platform.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { OTHER_SHOP, SHOP, waitForRun } from '../helpers/runtime.ts';
import { ENCRYPTION_KEY, startSim } from '../platform/helpers.ts';
import { instance } from './app.ts';
import { type McpTestServer, startMcpServer } from './helpers.ts';
import { rejection } from '../kit/index.ts';

const THIRD_SHOP = 'shop-three.myshopify.com';
const SHOP_QUERY = '{ shop { name myshopifyDomain } }';
const ALL = ['read_logs', 'read_flows', 'run_flows', 'read_crons', 'manage_crons', 'platform_admin_graphql'];

const crossApp = defineApp();
const crossInstance = crossApp.defineConfig({
  flows: { noop: crossApp.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) },
  mcp: { crossShopAccess: true },
});

const structured = (result: unknown) => (result as { structuredContent: any }).structuredContent;
const text = (result: { contents: unknown[] }) => result.contents[0] as { text: string; mimeType: string };

describeEngines('MCP built-in tools and resources', (get) => {
  let sim: PlatformSim;
  let s: McpTestServer;
  let client: Client;
  let tokenId: string;

  beforeAll(async () => {
    sim = await startSim();
    s = await startMcpServer(instance, get().db, { worker: true, env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY } });
    // The first admin request of each shop installs it (token exchange against the simulator).
    const token = await s.createToken({ name: 'everything', permissions: ALL });
    tokenId = token.id;
    expect((await s.api('/api/mcp/tokens', { shop: OTHER_SHOP })).status).toBe(200);
    client = await s.connect(token.secret);
    // listed once, the SDK client checks every result below against the tool's outputSchema
    await client.listTools();
  });
  afterAll(async () => {
    await s?.close();
    await sim?.close();
  });

  it('hashes secrets with the key derived from ENCRYPTION_KEY when it is set', async () => {
    const [row] = await get().db.query<{ hash_key_id: string }>(sql`select hash_key_id from mcp_tokens where id = ${tokenId}::uuid`);
    expect(row!.hash_key_id).toMatch(/^env:[0-9a-f]{8}$/);
  });

  it("service.shops.list lists only the token's shop by default", async () => {
    expect(structured(await client.callTool({ name: 'service.shops.list' }))).toEqual({
      shops: [{ shop: SHOP, current: true }],
      crossShopAccess: false,
    });
  });

  it("service.admin.graphql runs against the token's shop: status, parsed body, GraphQL errors passed back, API version", async () => {
    const ok = structured(await client.callTool({ name: 'service.admin.graphql', arguments: { shop: SHOP, query: SHOP_QUERY } }));
    expect(ok).toMatchObject({
      shop: SHOP,
      apiVersion: LATEST_STABLE_API_VERSION,
      status: 200,
      body: { data: { shop: { name: 'Shop One', myshopifyDomain: SHOP } } },
    });
    expect(sim.state.graphqlCalls.at(-1)).toMatchObject({ shop: SHOP, apiVersion: LATEST_STABLE_API_VERSION });

    const withErrors = structured(
      await client.callTool({ name: 'service.admin.graphql', arguments: { shop: SHOP, query: '{ nope }', apiVersion: '2025-07' } }),
    );
    expect(withErrors.status).toBe(200);
    expect(withErrors.body.errors.length).toBeGreaterThan(0);
    expect(sim.state.graphqlCalls.at(-1)!.apiVersion).toBe('2025-07');

    const vars = structured(
      await client.callTool({
        name: 'service.admin.graphql',
        arguments: { shop: SHOP.toUpperCase(), query: 'query Q($n: Int) { shop { name } }', variables: { n: 1 } },
      }),
    );
    expect(vars.body.data.shop.name).toBe('Shop One');
  });

  it('service.admin.graphql refuses another shop (-32003, audited with the target shop) and bad inputs (-32602)', async () => {
    const denied = await rejection(
      client.callTool({ name: 'service.admin.graphql', arguments: { shop: OTHER_SHOP, query: SHOP_QUERY } }),
      McpError,
    );
    expect(denied.code).toBe(-32003);
    expect(denied.message).toContain('outside this token');
    const [audit] = (await s.api(`/api/mcp/tokens/${tokenId}`)).body.audits;
    expect(audit).toMatchObject({ capability: 'service.admin.graphql', status: 'denied', targetShop: OTHER_SHOP });
    expect(
      (await rejection(client.callTool({ name: 'service.admin.graphql', arguments: { shop: 'not a shop', query: SHOP_QUERY } }), McpError))
        .code,
    ).toBe(-32602);
    expect((await rejection(client.callTool({ name: 'service.admin.graphql', arguments: { shop: SHOP } }), McpError)).code).toBe(-32602);
    expect(
      (
        await rejection(
          client.callTool({ name: 'service.admin.graphql', arguments: { shop: SHOP, query: SHOP_QUERY, apiVersion: 'latest' } }),
          McpError,
        )
      ).code,
    ).toBe(-32602);
    expect(
      (
        await rejection(
          client.callTool({ name: 'service.admin.graphql', arguments: { shop: SHOP, query: SHOP_QUERY, variables: [] } }),
          McpError,
        )
      ).code,
    ).toBe(-32602);
  });

  it('service.flows.list returns input schemas and crons', async () => {
    const { flows } = structured(await client.callTool({ name: 'service.flows.list' }));
    const sync = flows.find((f: any) => f.name === 'sync');
    expect(sync.inputSchema).toMatchObject({ type: 'object', properties: { since: { type: 'string' } } });
    expect(sync.crons).toEqual([expect.objectContaining({ key: 'sync:0 * * * *', schedule: '0 * * * *' })]);
  });

  it("service.flows.run dispatches for the token's shop only, with trigger mcp; bad flow or input is -32602", async () => {
    const result = structured(await client.callTool({ name: 'service.flows.run', arguments: { flow: 'sync', input: { since: '2h' } } }));
    expect(result).toMatchObject({ status: 'pending', flow: 'sync', shop: SHOP });
    const [run] = await get().db.query<{ shop: string; trigger: string; app_handle: string }>(
      sql`select shop, trigger, app_handle from runs where id = ${result.runId}::uuid`,
    );
    expect(run).toEqual({ shop: SHOP, trigger: 'mcp', app_handle: 'default' });
    expect((await waitForRun(get().db, result.runId)).status).toBe('completed');

    const badInput = await rejection(
      client.callTool({ name: 'service.flows.run', arguments: { flow: 'sync', input: { since: 5 } } }),
      McpError,
    );
    expect(badInput.code).toBe(-32602);
    expect((badInput.data as any).issues[0]).toMatchObject({ path: '/input/since', expected: 'string', received: '5' });
    expect(badInput.message).toContain('/input/since');
    expect((await rejection(client.callTool({ name: 'service.flows.run', arguments: { flow: 'missing' } }), McpError)).code).toBe(-32602);
    expect(
      (await rejection(client.callTool({ name: 'service.flows.run', arguments: { flow: 'sync', shop: OTHER_SHOP } }), McpError)).code,
    ).toBe(-32602);
  });

  it('service.logs.search searches a run of this shop with the query language, levels, context and limit', async () => {
    const { runId } = structured(await client.callTool({ name: 'service.flows.run', arguments: { flow: 'noisy', input: { orders: 5 } } }));
    expect((await waitForRun(get().db, runId)).status).toBe('completed');
    const search = async (args: Record<string, unknown>) =>
      structured(await client.callTool({ name: 'service.logs.search', arguments: { runId, ...args } }));

    const all = await search({});
    expect(all.total).toBe(8);
    expect(all.logs.map((l: any) => l.message)[0]).toBe('done');
    expect((await search({ limit: 2 })).logs).toHaveLength(2);
    expect((await search({ levels: ['error'] })).logs.map((l: any) => l.message)).toEqual(['payment failed']);
    expect((await search({ levels: 'warn,error' })).total).toBe(2);

    const matched = await search({ query: 'orderId=1003' });
    expect(matched.total).toBe(1);
    expect(matched.logs.filter((l: any) => !l.context).map((l: any) => l.message)).toEqual(['order 1003 fetched']);
    expect(matched.logs.filter((l: any) => l.context)).toHaveLength(4);
    const bare = await search({ query: 'orderId=1003', context: false });
    expect(bare.logs.map((l: any) => l.message)).toEqual(['order 1003 fetched']);
    expect((await search({ query: 'orderId=1003 C:1' })).logs).toHaveLength(3);

    const badQuery = await rejection(client.callTool({ name: 'service.logs.search', arguments: { runId, query: '(unclosed' } }), McpError);
    expect(badQuery.code).toBe(-32602);
    expect(badQuery.message).toContain('position');
    for (const args of [
      { runId, limit: 201 },
      { runId, limit: 0 },
      { runId, levels: ['debug'] },
      { runId, levels: [] },
      { runId: 'nope' },
      {},
    ]) {
      expect(
        (await rejection(client.callTool({ name: 'service.logs.search', arguments: args }), McpError)).code,
        JSON.stringify(args),
      ).toBe(-32602);
    }
    const missing = await rejection(
      client.callTool({ name: 'service.logs.search', arguments: { runId: '00000000-0000-4000-8000-000000000000' } }),
      McpError,
    );
    expect(missing.code).toBe(-32602);

    // A run of another shop is not found.
    const other = await s.createToken({ name: 'other', permissions: ['read_logs'] }, OTHER_SHOP);
    const otherClient = await s.connect(other.secret);
    expect((await rejection(otherClient.callTool({ name: 'service.logs.search', arguments: { runId } }), McpError)).message).toContain(
      'not found',
    );
  });

  it("service.crons.list and set_enabled work on the token shop's override only", async () => {
    const { crons } = structured(await client.callTool({ name: 'service.crons.list' }));
    expect(crons).toEqual([expect.objectContaining({ key: 'sync:0 * * * *', enabled: true })]);
    expect(
      structured(await client.callTool({ name: 'service.crons.set_enabled', arguments: { key: 'sync:0 * * * *', enabled: false } })),
    ).toEqual({ ok: true, key: 'sync:0 * * * *', enabled: false });
    expect(structured(await client.callTool({ name: 'service.crons.list' })).crons[0].enabled).toBe(false);
    const otherShop = (await s.api('/api/crons', { shop: OTHER_SHOP })).body;
    expect(JSON.stringify(otherShop)).toContain('"enabled":true');
    expect(
      (await rejection(client.callTool({ name: 'service.crons.set_enabled', arguments: { key: 'nope', enabled: true } }), McpError)).code,
    ).toBe(-32602);
    expect(
      (await rejection(client.callTool({ name: 'service.crons.set_enabled', arguments: { key: 'sync:0 * * * *' } }), McpError)).code,
    ).toBe(-32602);
  });

  it('built-in resources: log search docs, the log search reference, recent runs', async () => {
    const docs = text(await client.readResource({ uri: 'service://docs/log-search' }));
    expect(docs.mimeType).toBe('text/markdown');
    expect(docs.text).toContain('level:>=warn');
    const reference = JSON.parse(text(await client.readResource({ uri: 'service://tools/service.logs.search' })).text);
    expect(reference).toMatchObject({
      name: 'service.logs.search',
      defaults: { limit: 50, context: true },
      limits: { limit: { max: 200 } },
    });
    const recent = JSON.parse(text(await client.readResource({ uri: 'service://runs/recent' })).text);
    expect(recent.shop).toBe(SHOP);
    expect(recent.runs.length).toBeGreaterThanOrEqual(2);
    expect(recent.runs[0]).toMatchObject({ flowName: 'noisy', trigger: 'mcp' });
    expect(recent.runs.every((r: any) => r.shop === SHOP)).toBe(true);
  });

  it('mcp.crossShopAccess widens shops.list and graphql to every shop installed for the app, never beyond', async () => {
    const cross = await startMcpServer(crossInstance, get().db, { env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY } });
    try {
      const token = await cross.createToken({ name: 'cross', permissions: ['platform_admin_graphql'] });
      const c = await cross.connect(token.secret);
      const shops = structured(await c.callTool({ name: 'service.shops.list' }));
      expect(shops).toEqual({
        shops: [
          { shop: SHOP, current: true },
          { shop: OTHER_SHOP, current: false },
        ],
        crossShopAccess: true,
      });
      const other = structured(await c.callTool({ name: 'service.admin.graphql', arguments: { shop: OTHER_SHOP, query: SHOP_QUERY } }));
      expect(other).toMatchObject({ shop: OTHER_SHOP, status: 200, body: { data: { shop: { name: 'Shop Two' } } } });
      const third = await rejection(
        c.callTool({ name: 'service.admin.graphql', arguments: { shop: THIRD_SHOP, query: SHOP_QUERY } }),
        McpError,
      );
      expect(third.code).toBe(-32003);
      expect(third.message).toContain('no active installation');
    } finally {
      await cross.close();
    }
  });
});
