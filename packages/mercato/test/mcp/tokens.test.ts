/** /api/mcp token administration over real HTTP: lifecycle, validation, tenant isolation, secret storage. */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { TOKENS_CHANNEL } from '../../src/mcp/auth-cache.ts';
import { fingerprintOf, tokenIdOf } from '../../src/mcp/secret.ts';
import { OTHER_SHOP, SHOP } from '../helpers/runtime.ts';
import { instance } from './app.ts';
import { type McpTestServer, rpc, startMcpServer } from './helpers.ts';

const DAY = 86_400_000;

describeEngines('MCP token administration', (get) => {
  let s: McpTestServer;
  beforeAll(async () => {
    s = await startMcpServer(instance, get().db);
  });
  afterAll(() => s?.close());

  const call = (secret: string) => s.post(rpc('ping'), { authorization: `Bearer ${secret}` });
  /** A change made in SQL, as another process would make it: the cache hears of it by NOTIFY. */
  const changeInDatabase = async (statement: ReturnType<typeof sql>, id: string) => {
    await get().db.query(statement);
    await get().db.notify(TOKENS_CHANNEL, id);
  };
  const POLL = { timeout: 3000, interval: 10 };

  it('describes the capabilities: permissions with label, group and risk, tools, resources, expiry options', async () => {
    const { status, body } = await s.api('/api/mcp/capabilities');
    expect(status).toBe(200);
    const perms = Object.fromEntries(body.permissions.map((p: any) => [p.key, p]));
    expect(perms.platform_admin_graphql).toMatchObject({ group: 'platform', riskLevel: 'critical', core: true, reserved: false });
    // reserved permissions (no capability uses them) are not offered (docs/mcp.md, Permissions)
    expect(perms.manage_mcp_tokens).toBeUndefined();
    expect(perms.read_runs).toMatchObject({ group: 'runs', core: true, reserved: false });
    expect(perms['test:read_orders']).toMatchObject({ label: 'Read test orders', group: 'test', riskLevel: 'low', core: false });
    expect(perms['test:write_orders']).toMatchObject({ group: 'Orders', riskLevel: 'high' });
    // Defaults of a custom permission: group = namespace, risk = medium.
    expect(perms['test:export_orders']).toMatchObject({ group: 'test', riskLevel: 'medium' });
    const tools = Object.fromEntries(body.tools.map((t: any) => [t.name, t]));
    expect(tools['service.logs.search']).toMatchObject({ requiredPermissions: ['read_logs'], builtIn: true });
    expect(tools['orders.count']).toMatchObject({ requiredPermissions: ['test:read_orders'], riskLevel: 'low', builtIn: false });
    // A custom tool without riskLevel takes the highest risk of its permissions.
    expect(tools['orders.write'].riskLevel).toBe('high');
    expect(body.resources.map((r: any) => r.uri)).toEqual(
      expect.arrayContaining([
        'service://docs/log-search',
        'service://permissions',
        'service://tools/service.logs.search',
        'service://runs/recent',
        'orders://summary',
      ]),
    );
    expect(body.expiryOptions.find((o: any) => o.default)).toMatchObject({ expiresInDays: 90 });
    expect(body.expiryOptions.some((o: any) => o.expiresInDays === null)).toBe(true);
    expect(body.riskLevels).toEqual(['low', 'medium', 'high', 'critical']);
  });

  it('creates a token: 201, the secret once, default expiry 90 days, only a keyed hash stored', async () => {
    const before = Date.now();
    const { status, body } = await s.api('/api/mcp/tokens', {
      method: 'POST',
      json: { name: '  Claude  ', permissions: ['read_logs', 'read_logs', 'test:read_orders'] },
    });
    expect(status).toBe(201);
    expect(body.secret).toMatch(/^mcp_[0-9a-f]{32}_[0-9A-Za-z]{43}$/);
    expect(tokenIdOf(body.secret)).toBe(body.token.id);
    expect(body.token).toMatchObject({
      name: 'Claude',
      permissions: ['read_logs', 'test:read_orders'],
      status: 'active',
      expired: false,
      lastUsedAt: null,
    });
    expect(body.token.fingerprint).toBe(fingerprintOf(body.secret));
    expect(body.token).not.toHaveProperty('secret');
    const expires = Date.parse(body.token.expiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 90 * DAY - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 90 * DAY + 1000);

    const [row] = await get().db.query<{ secret_hash: string; hash_key_id: string }>(
      sql`select secret_hash, hash_key_id from mcp_tokens where id = ${body.token.id}::uuid`,
    );
    expect(row!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.hash_key_id).toBe('installation');
    const dump = JSON.stringify(await get().db.query(sql`select * from mcp_tokens`));
    expect(dump).not.toContain(body.secret.slice(37));

    const list = await s.api('/api/mcp/tokens');
    const listed = list.body.tokens.find((t: any) => t.id === body.token.id);
    expect(listed).toMatchObject({ id: body.token.id, fingerprint: body.token.fingerprint });
    expect(JSON.stringify(list.body)).not.toContain(body.secret);
  });

  it('accepts expiresAt, expiresInDays and null (never); rejects bad expiry, names, fields and unknown permissions with 400', async () => {
    const at = new Date(Date.now() + 3 * DAY).toISOString();
    expect(Date.parse((await s.api('/api/mcp/tokens', { method: 'POST', json: { name: 'a', expiresAt: at } })).body.token.expiresAt)).toBe(
      Date.parse(at),
    );
    const inDays = await s.api('/api/mcp/tokens', { method: 'POST', json: { name: 'b', expiresInDays: 7 } });
    expect(Math.abs(Date.parse(inDays.body.token.expiresAt) - (Date.now() + 7 * DAY))).toBeLessThan(5000);
    expect((await s.api('/api/mcp/tokens', { method: 'POST', json: { name: 'c', expiresAt: null } })).body.token.expiresAt).toBeNull();
    expect((await s.api('/api/mcp/tokens', { method: 'POST', json: { name: 'd', expiresInDays: null } })).body.token.expiresAt).toBeNull();

    const bad = async (json: unknown) => s.api('/api/mcp/tokens', { method: 'POST', json });
    const unknown = await bad({ name: 'x', permissions: ['read_logs', 'nope', 'orders:read_all'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ field: 'permissions', unknownPermissions: ['nope', 'orders:read_all'] });
    for (const json of [
      {},
      { name: '' },
      { name: 'x'.repeat(101) },
      { name: 'a\u0000b' }, // PostgreSQL cannot store NUL in text (found by the fuzz suite: it was a 500)
      { name: 'x', permissions: 'read_logs' },
      { name: 'x', expiresInDays: 0 },
      { name: 'x', expiresInDays: 1.5 },
      { name: 'x', expiresInDays: '7' },
      { name: 'x', expiresAt: 'tomorrow' },
      { name: 'x', expiresAt: new Date(Date.now() - DAY).toISOString() },
      { name: 'x', expiresAt: null, expiresInDays: 3 },
      { name: 'x', scopes: [] },
      [],
    ]) {
      const res = await bad(json);
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(typeof res.body.error).toBe('string');
    }
  });

  it('detail, PATCH (name, status, expiry), PUT permissions; disabled gives 403 on /mcp and re-enabling restores it', async () => {
    const { id, secret } = await s.createToken({ name: 'edit me', permissions: ['read_flows'] });
    expect((await call(secret)).status).toBe(200);

    expect((await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { name: 'renamed', expiresInDays: null } })).body).toEqual({
      ok: true,
    });
    let detail = await s.api(`/api/mcp/tokens/${id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ id, name: 'renamed', expiresAt: null, permissions: ['read_flows'], audits: [] });
    expect(detail.body.lastUsedAt).not.toBeNull();

    expect((await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { status: 'disabled' } })).status).toBe(200);
    const disabled = await call(secret);
    expect(disabled.status).toBe(403);
    expect(disabled.headers.get('mcp-protocol-version')).toBe('2025-11-25');
    expect((await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { status: 'active' } })).status).toBe(200);
    expect((await call(secret)).status).toBe(200);

    const put = await s.api(`/api/mcp/tokens/${id}/permissions`, {
      method: 'PUT',
      json: { permissions: ['read_logs', 'test:write_orders'] },
    });
    expect(put).toMatchObject({ status: 200, body: { ok: true, permissions: ['read_logs', 'test:write_orders'] } });
    detail = await s.api(`/api/mcp/tokens/${id}`);
    expect(detail.body.permissions).toEqual(['read_logs', 'test:write_orders']);
    expect((await s.api(`/api/mcp/tokens/${id}/permissions`, { method: 'PUT', json: { permissions: ['admin'] } })).status).toBe(400);
    expect((await s.api(`/api/mcp/tokens/${id}/permissions`, { method: 'PUT', json: {} })).status).toBe(400);

    for (const json of [{}, { status: 'revoked' }, { status: 'paused' }, { name: 3 }, { color: 'red' }]) {
      expect((await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json })).status, JSON.stringify(json)).toBe(400);
    }
  });

  it('an expired token gets 403; extending the expiry brings it back', async () => {
    const { id, secret } = await s.createToken({ name: 'short', expiresInDays: 1 });
    expect((await call(secret)).status).toBe(200);
    await changeInDatabase(sql`update mcp_tokens set expires_at = now() - interval '1 second' where id = ${id}::uuid`, id);
    await expect.poll(async () => (await call(secret)).status, POLL).toBe(403);
    const res = await call(secret);
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'MCP token has expired' });
    expect((await s.api(`/api/mcp/tokens/${id}`)).body.expired).toBe(true);
    await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { expiresInDays: 2 } });
    expect((await call(secret)).status).toBe(200);
  });

  it('rotate keeps the id and grants, kills the old secret and returns the new one once', async () => {
    const { id, secret, token } = await s.createToken({ name: 'rotate me', permissions: ['read_crons'] });
    const rotated = await s.api(`/api/mcp/tokens/${id}/rotate`, { method: 'POST' });
    expect(rotated.status).toBe(200);
    expect(rotated.body.token).toMatchObject({ id, permissions: ['read_crons'], status: 'active' });
    expect(rotated.body.secret).not.toBe(secret);
    expect(tokenIdOf(rotated.body.secret)).toBe(id);
    expect(rotated.body.token.fingerprint).not.toBe(token.fingerprint);
    expect((await call(secret)).status).toBe(401);
    expect((await call(rotated.body.secret)).status).toBe(200);
  });

  it('rotating a disabled token keeps it disabled', async () => {
    const { id } = await s.createToken({ name: 'disabled rotate' });
    await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { status: 'disabled' } });
    const rotated = await s.api(`/api/mcp/tokens/${id}/rotate`, { method: 'POST' });
    expect(rotated.body.token.status).toBe('disabled');
    expect((await call(rotated.body.secret)).status).toBe(403);
  });

  it('revoke is permanent: 403 on /mcp, edit, permissions and rotate refused with 409, revoke again is ok', async () => {
    const { id, secret } = await s.createToken({ name: 'revoke me' });
    expect((await s.api(`/api/mcp/tokens/${id}/revoke`, { method: 'POST' })).body).toEqual({ ok: true });
    const res = await call(secret);
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'MCP token is revoked' });
    expect((await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { status: 'active' } })).status).toBe(409);
    expect((await s.api(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { name: 'again' } })).status).toBe(409);
    expect((await s.api(`/api/mcp/tokens/${id}/permissions`, { method: 'PUT', json: { permissions: [] } })).status).toBe(409);
    expect((await s.api(`/api/mcp/tokens/${id}/rotate`, { method: 'POST' })).status).toBe(409);
    expect((await s.api(`/api/mcp/tokens/${id}/revoke`, { method: 'POST' })).status).toBe(200);
    const detail = await s.api(`/api/mcp/tokens/${id}`);
    expect(detail.body).toMatchObject({ status: 'revoked' });
    expect(detail.body.revokedAt).not.toBeNull();
  });

  it("another tenant's token is 404 everywhere, and is not listed", async () => {
    const { id } = await s.createToken({ name: 'mine' });
    for (const [method, path, json] of [
      ['GET', `/api/mcp/tokens/${id}`],
      ['PATCH', `/api/mcp/tokens/${id}`, { name: 'theirs' }],
      ['PUT', `/api/mcp/tokens/${id}/permissions`, { permissions: [] }],
      ['POST', `/api/mcp/tokens/${id}/rotate`],
      ['POST', `/api/mcp/tokens/${id}/revoke`],
    ] as const) {
      const res = await s.api(path, { method, json, shop: OTHER_SHOP });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    expect((await s.api('/api/mcp/tokens', { shop: OTHER_SHOP })).body.tokens.some((t: any) => t.id === id)).toBe(false);
    expect((await s.api(`/api/mcp/tokens/${id}`, { shop: SHOP })).status).toBe(200);
    expect((await s.api('/api/mcp/tokens/not-a-uuid')).status).toBe(404);
    expect((await s.api('/api/mcp/tokens/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('requires the session token: an MCP token is not accepted on /api', async () => {
    const { secret } = await s.createToken({ name: 'not a session' });
    const res = await fetch(`${s.url}/api/mcp/tokens`, { headers: { authorization: `Bearer ${secret}` } });
    expect(res.status).toBe(401);
    expect((await fetch(`${s.url}/api/mcp/tokens`)).status).toBe(401);
  });

  it('lastUsedAt is written on success at most once a minute', async () => {
    const { id, secret } = await s.createToken({ name: 'usage' });
    expect((await s.api(`/api/mcp/tokens/${id}`)).body.lastUsedAt).toBeNull();
    await call(secret);
    const first = (await s.api(`/api/mcp/tokens/${id}`)).body.lastUsedAt;
    expect(first).not.toBeNull();
    await new Promise((r) => setTimeout(r, 20));
    await call(secret);
    expect((await s.api(`/api/mcp/tokens/${id}`)).body.lastUsedAt).toBe(first);
    await changeInDatabase(sql`update mcp_tokens set last_used_at = now() - interval '61 seconds' where id = ${id}::uuid`, id);
    await expect
      .poll(async () => {
        await call(secret);
        return Date.parse((await s.api(`/api/mcp/tokens/${id}`)).body.lastUsedAt);
      }, POLL)
      .toBeGreaterThan(Date.parse(first));
    // A failed authentication does not count as use.
    await changeInDatabase(sql`update mcp_tokens set last_used_at = null where id = ${id}::uuid`, id);
    await call(`${secret.slice(0, -1)}${secret.endsWith('a') ? 'b' : 'a'}`);
    expect((await s.api(`/api/mcp/tokens/${id}`)).body.lastUsedAt).toBeNull();
  });
});
