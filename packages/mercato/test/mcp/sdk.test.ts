/** The MCP endpoint judged by the official SDK client: handshake, lists, calls, reads, ping, every JSON-RPC error code, audits. */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { MERCATO_VERSION } from '../../src/version.ts';
import { SHOP } from '../helpers/runtime.ts';
import { instance, seen } from './app.ts';
import { type McpTestServer, startMcpServer } from './helpers.ts';
import { rejection } from '../kit/index.ts';

const TIMEOUT_MS = 300;

describeEngines('MCP endpoint with the SDK client', (get) => {
  let s: McpTestServer;
  let full: { id: string; secret: string };
  let readOnly: { id: string; secret: string };
  beforeAll(async () => {
    s = await startMcpServer(instance, get().db, { overrides: { timeoutMs: TIMEOUT_MS } });
    full = await s.createToken({
      name: 'full',
      permissions: ['read_logs', 'read_flows', 'run_flows', 'read_crons', 'test:read_orders', 'test:write_orders'],
    });
    readOnly = await s.createToken({ name: 'read only', permissions: ['test:read_orders'] });
  });
  afterAll(() => s?.close());
  beforeEach(() => {
    seen.contexts.length = 0;
    seen.slowAborted.length = 0;
    seen.slowReason.length = 0;
  });

  const audits = async (id: string) => (await s.api(`/api/mcp/tokens/${id}`)).body.audits as any[];

  it('initializes with protocol 2025-11-25, the package version and tools + resources capabilities without list changes', async () => {
    const client = await s.connect(full.secret);
    expect(client.getServerVersion()).toMatchObject({ name: 'mercato', version: MERCATO_VERSION });
    expect(client.getServerCapabilities()).toEqual({ tools: {}, resources: {} });
    expect(client.getInstructions()).toContain(SHOP);
    expect(await client.ping()).toEqual({});
  });

  it('lists only the tools and resources the grants fully cover', async () => {
    const client = await s.connect(readOnly.secret);
    const tools = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(tools).toEqual([
      'orders.context',
      'orders.count',
      'orders.echo',
      'orders.fail',
      'orders.raw',
      'orders.slow',
      'service.shops.list',
    ]);
    const resources = (await client.listResources()).resources.map((r) => r.uri).sort();
    expect(resources).toEqual([
      'orders://broken',
      'orders://json',
      'orders://plain',
      'orders://slow',
      'orders://summary',
      'service://permissions',
    ]);

    const all = await s.connect(full.secret);
    const fullTools = (await all.listTools()).tools;
    expect(fullTools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['orders.write', 'service.logs.search', 'service.flows.list', 'service.flows.run', 'service.crons.list']),
    );
    expect(fullTools.map((t) => t.name)).not.toContain('service.admin.graphql');
    expect(fullTools.map((t) => t.name)).not.toContain('service.crons.set_enabled');
    const count = fullTools.find((t) => t.name === 'orders.count')!;
    expect(count.inputSchema).toMatchObject({ type: 'object', properties: { status: { enum: ['open', 'closed'] } } });
    expect(fullTools.find((t) => t.name === 'orders.raw')!.inputSchema).toEqual({ type: 'object' });
    const summary = (await all.listResources()).resources.find((r) => r.uri === 'orders://summary');
    expect(summary).toEqual({
      uri: 'orders://summary',
      name: 'Order summary',
      description: 'A markdown summary',
      mimeType: 'text/markdown',
    });
  });

  it('maps tool results: plain object → text + structuredContent, string → text, content objects pass through', async () => {
    const client = await s.connect(full.secret);
    const counted = await client.callTool({ name: 'orders.count', arguments: { status: 'open' } });
    expect(counted.structuredContent).toEqual({ shop: SHOP, status: 'open', count: 2 });
    expect(counted.content).toEqual([{ type: 'text', text: JSON.stringify({ shop: SHOP, status: 'open', count: 2 }, null, 2) }]);
    expect(counted.isError).toBeUndefined();
    expect(await client.callTool({ name: 'orders.echo', arguments: { message: 'hi' } })).toEqual({
      content: [{ type: 'text', text: 'echo: hi' }],
    });
    expect(await client.callTool({ name: 'orders.raw' })).toEqual({
      content: [{ type: 'text', text: 'raw text' }],
      structuredContent: { raw: true },
    });
  });

  it('gives run() the immutable token scope, the current grants, a signal and the database', async () => {
    const client = await s.connect(full.secret);
    const result = await client.callTool({ name: 'orders.context', arguments: {} });
    expect(result.structuredContent).toMatchObject({ appHandle: 'default', shop: SHOP, tokenId: full.id, db: true });
    expect((result.structuredContent as any).permissions).toContain('test:write_orders');
    expect(seen.contexts[0]!.signal).toBeInstanceOf(AbortSignal);
    expect(seen.contexts[0]!.signal.aborted).toBe(false);
  });

  it('reads resources with the MIME type resolution order: returned, then definition, then text/plain', async () => {
    const client = await s.connect(full.secret);
    expect(await client.readResource({ uri: 'orders://summary' })).toEqual({
      contents: [{ uri: 'orders://summary', mimeType: 'text/markdown', text: `# Orders of ${SHOP}` }],
    });
    expect((await client.readResource({ uri: 'orders://json' })).contents[0]).toMatchObject({
      mimeType: 'application/json',
      text: '{"orders":2}',
    });
    expect((await client.readResource({ uri: 'orders://plain' })).contents[0]).toMatchObject({
      mimeType: 'text/plain',
      text: 'plain text',
    });
    const content = (await client.readResource({ uri: 'service://permissions' })).contents[0] as { text: string };
    const permissions = JSON.parse(content.text);
    expect(permissions.granted).toContain('test:read_orders');
    expect(permissions.token).toEqual({ id: full.id, appHandle: 'default', shop: SHOP });
    expect(permissions.tools.find((t: any) => t.name === 'service.admin.graphql').available).toBe(false);
  });

  it('-32601 for an unsupported method', async () => {
    const client = await s.connect(full.secret);
    const error = await rejection(client.listPrompts(), McpError);
    expect(error.code).toBe(-32601);
  });

  it('-32602 for an unknown tool or resource and for invalid arguments; each call is audited', async () => {
    const client = await s.connect(full.secret);
    expect((await rejection(client.callTool({ name: 'orders.nope' }), McpError)).code).toBe(-32602);
    expect((await rejection(client.readResource({ uri: 'orders://nope' }), McpError)).code).toBe(-32602);
    const invalid = await rejection(client.callTool({ name: 'orders.count', arguments: { status: 'lost', extra: 1, min: -1 } }), McpError);
    expect(invalid.code).toBe(-32602);
    expect(invalid.message).toContain('/status must be one of "open", "closed"');
    expect((invalid.data as any).issues).toEqual([
      { path: '/status', message: 'must be one of "open", "closed"', expected: 'one of "open", "closed"', received: '"lost"' },
      {
        path: '/extra',
        message: 'is not an allowed property',
        expected: 'one of the properties status, min',
        received: 'property "extra"',
      },
      { path: '/min', message: 'must be >= 0', expected: '>= 0', received: '-1' },
    ]);
    expect((await rejection(client.callTool({ name: 'orders.echo', arguments: {} }), McpError)).code).toBe(-32602);
    const recent = await audits(full.id);
    expect(recent.slice(0, 4).map((a) => [a.kind, a.capability, a.status])).toEqual([
      ['tool', 'orders.echo', 'error'],
      ['tool', 'orders.count', 'error'],
      ['resource', 'orders://nope', 'error'],
      ['tool', 'orders.nope', 'error'],
    ]);
  });

  it('-32003 for a known capability the grants do not cover (not listed, still denied), audited as denied', async () => {
    const client = await s.connect(readOnly.secret);
    const denied = await rejection(client.callTool({ name: 'orders.write' }), McpError);
    expect(denied.code).toBe(-32003);
    expect(denied.data).toEqual({
      requiredPermissions: ['test:read_orders', 'test:write_orders'],
      missingPermissions: ['test:write_orders'],
    });
    expect((await rejection(client.callTool({ name: 'service.flows.run', arguments: { flow: 'sync' } }), McpError)).code).toBe(-32003);
    expect((await rejection(client.readResource({ uri: 'orders://secret' }), McpError)).code).toBe(-32003);
    expect((await rejection(client.readResource({ uri: 'service://runs/recent' }), McpError)).code).toBe(-32003);
    const [last, , , first] = await audits(readOnly.id);
    expect(first).toMatchObject({
      kind: 'tool',
      capability: 'orders.write',
      status: 'denied',
      permissions: ['test:read_orders'],
      requiredPermissions: ['test:read_orders', 'test:write_orders'],
      targetShop: SHOP,
    });
    expect(last).toMatchObject({ kind: 'resource', capability: 'service://runs/recent', status: 'denied' });
  });

  it('-32000 for a tool or resource exception, a malformed resource result, a time-out (the signal aborts)', async () => {
    const client = await s.connect(full.secret);
    const failed = await rejection(client.callTool({ name: 'orders.fail' }), McpError);
    expect(failed.code).toBe(-32000);
    expect(failed.message).toContain('the order service is down');
    expect((await rejection(client.readResource({ uri: 'orders://broken' }), McpError)).code).toBe(-32000);

    const started = Date.now();
    const timedOut = await rejection(client.callTool({ name: 'orders.slow' }), McpError);
    expect(timedOut.code).toBe(-32000);
    expect(timedOut.message).toContain(`timed out after ${TIMEOUT_MS} ms`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(seen.slowAborted).toEqual([true]);
    expect(seen.slowReason[0]).toContain('timed out');
    expect((await rejection(client.readResource({ uri: 'orders://slow' }), McpError)).code).toBe(-32000);

    const [slowRead, slowTool, broken, fail] = await audits(full.id);
    expect(fail).toMatchObject({ capability: 'orders.fail', status: 'error' });
    expect(fail.error).toContain('the order service is down');
    expect(broken).toMatchObject({ capability: 'orders://broken', status: 'error' });
    expect(slowTool).toMatchObject({ capability: 'orders.slow', status: 'timeout' });
    expect(slowTool.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(slowRead).toMatchObject({ kind: 'resource', capability: 'orders://slow', status: 'timeout' });
  });

  it('audits successful calls with token permissions, duration, request id and target shop; detail keeps the 10 latest', async () => {
    const token = await s.createToken({ name: 'audited', permissions: ['test:read_orders'] });
    const client = await s.connect(token.secret);
    for (let i = 0; i < 12; i++) await client.callTool({ name: 'orders.count', arguments: {} });
    await client.readResource({ uri: 'orders://summary' });
    const recent = await audits(token.id);
    expect(recent).toHaveLength(10);
    expect(recent[0]).toMatchObject({
      kind: 'resource',
      capability: 'orders://summary',
      status: 'ok',
      error: null,
      permissions: ['test:read_orders'],
      requiredPermissions: ['test:read_orders'],
      targetShop: SHOP,
    });
    expect(recent[1]).toMatchObject({ kind: 'tool', capability: 'orders.count', status: 'ok' });
    expect(typeof recent[1].durationMs).toBe('number');
    expect(recent[1].requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(recent.map((a) => a.requestId)).size).toBe(10);
    // tools/list and ping are not capability calls: no audit.
    await client.listTools();
    await client.ping();
    expect((await audits(token.id))[0].capability).toBe('orders://summary');
  });

  it('a token revoked between two calls is refused on the next one (no cached grants)', async () => {
    const token = await s.createToken({ name: 'short lived', permissions: ['test:read_orders'] });
    const client = await s.connect(token.secret);
    await client.callTool({ name: 'orders.count' });
    await s.api(`/api/mcp/tokens/${token.id}/permissions`, { method: 'PUT', json: { permissions: [] } });
    expect((await rejection(client.callTool({ name: 'orders.count' }), McpError)).code).toBe(-32003);
    await s.api(`/api/mcp/tokens/${token.id}/revoke`, { method: 'POST' });
    await expect(client.callTool({ name: 'orders.echo', arguments: { message: 'x' } })).rejects.toMatchObject({ code: 403 });
  });

  it('HTTP-level failures reach the SDK as errors carrying the HTTP status (401 unknown token)', async () => {
    await expect(s.connect(`mcp_${'0'.repeat(32)}_${'A'.repeat(43)}`)).rejects.toMatchObject({ code: 401 });
    await expect(s.connect('not-a-token')).rejects.toMatchObject({ code: 401 });
  });
});
