/**
 * Issue 20, point 4: a request refused with HTTP 403 for the token's state (disabled, revoked, expired) is audited with
 * status `refused`, what it asked for and why; the secret is never in the row. Point 10: reserved permissions are not
 * offered, yet a token that holds one keeps it and keeps working.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { instance } from './app.ts';
import { type McpTestServer, rpc, startMcpServer } from './helpers.ts';

describeEngines('MCP refusals in the audit', (get) => {
  let s: McpTestServer;
  beforeAll(async () => {
    // no auth cache: a change made in the database applies on the next request
    s = await startMcpServer(instance, get().db, { overrides: { authCacheTtlMs: 0 } });
  });
  afterAll(() => s?.close());

  const audits = async (id: string) => (await s.api(`/api/mcp/tokens/${id}`)).body.audits as any[];
  const call = (secret: string, body: unknown) => s.post(body, { authorization: `Bearer ${secret}` });

  it('disabled, revoked and expired tokens: 403, and an audit record with the reason and the target', async () => {
    const { id, secret } = await s.createToken({ name: 'refused', permissions: ['test:read_orders'] });
    expect((await call(secret, rpc('tools/call', { name: 'orders.count', arguments: {} }))).status).toBe(200);

    await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { status: 'disabled' } });
    const disabled = await call(secret, rpc('tools/call', { name: 'orders.count', arguments: {} }));
    expect(disabled.status).toBe(403);
    expect(await disabled.json()).toEqual({ error: 'MCP token is disabled' });
    expect((await call(secret, rpc('resources/read', { uri: 'orders://summary' }))).status).toBe(403);
    expect((await call(secret, rpc('initialize', { protocolVersion: '2025-11-25' }))).status).toBe(403);
    expect((await call(secret, '{ not json')).status).toBe(403);

    await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { status: 'active' } });
    await get().db.query(sql`update mcp_tokens set expires_at = now() - interval '1 second' where id = ${id}::uuid`);
    expect((await call(secret, rpc('tools/list'))).status).toBe(403);
    await s.api(`/api/mcp/tokens/${id}/revoke`, { method: 'POST' });
    expect((await call(secret, rpc('tools/call', { name: 'orders.nope' }))).status).toBe(403);

    const rows = (await audits(id)).map((a) => [a.kind, a.capability, a.status, a.error]);
    expect(rows).toEqual([
      ['tool', 'orders.nope', 'refused', 'MCP token is revoked'],
      ['request', 'tools/list', 'refused', 'MCP token has expired'],
      ['request', '(not a JSON-RPC request)', 'refused', 'MCP token is disabled'],
      ['request', 'initialize', 'refused', 'MCP token is disabled'],
      ['resource', 'orders://summary', 'refused', 'MCP token is disabled'],
      ['tool', 'orders.count', 'refused', 'MCP token is disabled'],
      ['tool', 'orders.count', 'ok', null],
    ]);
    const [, , , , , refusedCall] = await audits(id);
    expect(refusedCall).toMatchObject({
      requiredPermissions: ['test:read_orders'],
      permissions: ['test:read_orders'],
      targetShop: expect.any(String),
    });
    expect(refusedCall.requestId).toMatch(/.+/);

    // the secret (nor its random part) is in no audit row
    const stored = await get().db.query<{ row: string }>(
      sql`select row_to_json(a)::text as row from mcp_audits a where token_id = ${id}::uuid`,
    );
    expect(stored.length).toBe(7);
    const random = secret.split('_').pop()!;
    for (const { row } of stored) {
      expect(row).not.toContain(secret);
      expect(row).not.toContain(random);
    }
  });

  it('a tool name and an error text holding NUL characters still leave their audit record, made storable', async () => {
    const { id, secret } = await s.createToken({ name: 'nul', permissions: ['test:read_orders'] });
    const res = await call(secret, rpc('tools/call', { name: 'orders.\u0000nope\ud800', arguments: {} }));
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain('error');
    const [record] = await audits(id);
    expect(record).toMatchObject({ kind: 'tool', capability: 'orders.\ufffdnope\ufffd', status: expect.any(String) });
    expect(record.status).not.toBe('ok');
    expect(record.error === null || !record.error.includes('\u0000')).toBe(true);
  });

  it('401 (unknown or wrong secret) writes nothing: there is no token to attribute it to', async () => {
    const { id, secret } = await s.createToken({ name: 'wrong secret' });
    const wrong = `${secret.slice(0, -4)}AAAA`;
    const res = await call(wrong, rpc('tools/call', { name: 'orders.count' }));
    expect(res.status).toBe(401);
    expect(await audits(id)).toEqual([]);
  });

  it('reserved permissions: not offered, still accepted and kept on a token, which keeps working', async () => {
    const caps = (await s.api('/api/mcp/capabilities')).body;
    const offered = caps.permissions.map((p: any) => p.key);
    for (const key of ['read_providers', 'write_providers', 'read_functions', 'manage_mcp_tokens']) expect(offered).not.toContain(key);
    expect(offered).toEqual(expect.arrayContaining(['read_logs', 'read_runs', 'test:read_orders']));

    const { id, secret } = await s.createToken({ name: 'old grants', permissions: ['read_providers', 'test:read_orders'] });
    expect((await s.api(`/api/mcp/tokens/${id}`)).body.permissions).toEqual(['read_providers', 'test:read_orders']);
    const put = await s.api(`/api/mcp/tokens/${id}/permissions`, {
      method: 'PUT',
      json: { permissions: ['read_providers', 'read_flows'] },
    });
    expect(put).toMatchObject({ status: 200, body: { permissions: ['read_providers', 'read_flows'] } });
    const client = await s.connect(secret);
    const permissions = JSON.parse(((await client.readResource({ uri: 'service://permissions' })).contents[0] as any).text);
    expect(permissions.granted).toEqual(['read_providers', 'read_flows']);
    expect(permissions.permissions.map((p: any) => p.key)).not.toContain('read_providers');
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('service.flows.list');
  });
});
