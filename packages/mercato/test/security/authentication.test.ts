/**
 * Authentication cases, all over real HTTP against the whole app (two apps, buildApp): the complete list of refused
 * session tokens and MCP tokens with the answer each gets (docs/admin-api.md "401 responses", docs/mcp.md "Errors").
 * Nothing a refused request carries may change the database. Narrower tests of the same rules stay next to their code:
 * the verifier's reasons at the leeway boundaries (test/http/session-token.test.ts), the 401 headers on a bare server
 * (test/http/auth.test.ts), token lifecycle and cache (test/mcp/tokens.test.ts), hashing keys (test/mcp/secret.test.ts).
 */
import { createHmac, createSign, generateKeyPairSync, randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { RETRY_INVALID_SESSION_HEADER } from '../../src/http/auth.ts';
import { MAX_SESSION_TOKEN_LENGTH, SESSION_TOKEN_LEEWAY_SECONDS, signJwt } from '../../src/http/session-token.ts';
import { TOKENS_CHANNEL } from '../../src/mcp/auth-cache.ts';
import { APPS, OTHER_SHOP, SHOP, type SecurityEnv, dumpDatabase, dumpDiff, sessionToken, startSecurityEnv } from './fixture.ts';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const nowS = () => Math.floor(Date.now() / 1000);
const SECRET: string = APPS.main.apiSecret;
const claims = (overrides: Record<string, unknown> = {}) => {
  const now = nowS();
  return { iss: `https://${SHOP}/admin`, dest: `https://${SHOP}`, aud: APPS.main.apiKey, exp: now + 60, nbf: now, iat: now, ...overrides };
};
const hs256 = (overrides: Record<string, unknown> = {}, secret = SECRET) =>
  signJwt({ alg: 'HS256', typ: 'JWT' }, claims(overrides), secret);
const without = (key: string) => {
  const c: Record<string, unknown> = claims();
  delete c[key];
  return signJwt({ alg: 'HS256', typ: 'JWT' }, c, SECRET);
};

const ERR = {
  malformed: 'Malformed session token',
  algorithm: 'Unsupported session token algorithm',
  audience: 'Session token audience is not an app of this service',
  signature: 'Invalid session token signature',
  expired: 'Session token expired',
  notYet: 'Session token not yet valid',
  shop: 'Session token issuer and destination must be the same shop',
};
const LEEWAY = SESSION_TOKEN_LEEWAY_SECONDS;

/** Every refused session token: [case, token, the 401's error]. */
const SESSION_TOKEN_CASES: Array<[string, () => string, string]> = [
  // algorithm
  ['alg none, empty signature part', () => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.`, ERR.malformed],
  ['alg none, with an HMAC made with the app secret', () => signJwt({ alg: 'none' }, claims(), SECRET), ERR.algorithm],
  ['alg NONE', () => signJwt({ alg: 'NONE' }, claims(), SECRET), ERR.algorithm],
  ['alg hs256 (case differs)', () => signJwt({ alg: 'hs256' }, claims(), SECRET), ERR.algorithm],
  ['no alg', () => signJwt({ typ: 'JWT' }, claims(), SECRET), ERR.algorithm],
  [
    'HS512 signed with the app secret',
    () => {
      const input = `${b64({ alg: 'HS512', typ: 'JWT' })}.${b64(claims())}`;
      return `${input}.${createHmac('sha512', SECRET).update(input).digest('base64url')}`;
    },
    ERR.algorithm,
  ],
  [
    'RS256 header with an RSA signature',
    () => {
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const input = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64(claims())}`;
      return `${input}.${createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')}`;
    },
    ERR.algorithm,
  ],
  ['RS256 header with an HMAC made with the app secret (key confusion)', () => signJwt({ alg: 'RS256' }, claims(), SECRET), ERR.algorithm],
  // signature
  ['signed with another secret', () => hs256({}, 'not-the-secret'), ERR.signature],
  ['signed with an empty secret', () => hs256({}, ''), ERR.signature],
  ["signed with the other app's secret", () => hs256({}, APPS.second.apiSecret), ERR.signature],
  [
    'payload changed after signing (dest and iss moved to another shop)',
    () => {
      const [h, , s] = hs256().split('.');
      return `${h}.${b64(claims({ dest: `https://${OTHER_SHOP}`, iss: `https://${OTHER_SHOP}/admin` }))}.${s}`;
    },
    ERR.signature,
  ],
  ['signature one character short', () => hs256().slice(0, -1), ERR.signature],
  [
    'signature with one character changed',
    () => {
      const t = hs256();
      return `${t.slice(0, -2)}${t.at(-2) === 'A' ? 'B' : 'A'}${t.at(-1)}`;
    },
    ERR.signature,
  ],
  // lifetime
  ['expired beyond the leeway', () => hs256({ exp: nowS() - LEEWAY - 5, nbf: nowS() - 120 }), ERR.expired],
  ['expired a day ago', () => hs256({ exp: nowS() - 86_400, nbf: nowS() - 86_460 }), ERR.expired],
  ['nbf in the future beyond the leeway', () => hs256({ nbf: nowS() + LEEWAY + 5, exp: nowS() + 120 }), ERR.notYet],
  ['exp missing', () => without('exp'), ERR.malformed],
  ['nbf missing', () => without('nbf'), ERR.malformed],
  ['exp as a string', () => hs256({ exp: String(nowS() + 60) }), ERR.malformed],
  // audience
  ["another app's aud, signed with this app's secret", () => hs256({ aud: APPS.second.apiKey }), ERR.signature],
  ['aud of no app of ours', () => hs256({ aud: 'someone-elses-key' }), ERR.audience],
  ['aud as an array', () => hs256({ aud: [APPS.main.apiKey] }), ERR.audience],
  ['aud missing', () => without('aud'), ERR.audience],
  // shop
  ['dest missing', () => without('dest'), ERR.shop],
  ['iss missing', () => without('iss'), ERR.shop],
  ['iss naming another shop than dest', () => hs256({ iss: `https://${OTHER_SHOP}/admin` }), ERR.shop],
  ['dest and iss not a shop domain', () => hs256({ dest: 'https://evil.example', iss: 'https://evil.example/admin' }), ERR.shop],
  ['dest with a port', () => hs256({ dest: `https://${SHOP}:444`, iss: `https://${SHOP}:444/admin` }), ERR.shop],
  ['dest over http', () => hs256({ dest: `http://${SHOP}`, iss: `http://${SHOP}/admin` }), ERR.shop],
  ['dest with a path', () => hs256({ dest: `https://${SHOP}/admin` }), ERR.shop],
  ['dest with user info', () => hs256({ dest: `https://user@${SHOP}` }), ERR.shop],
  // not a session token at all
  ['garbage', () => 'garbage', ERR.malformed],
  ['empty parts', () => '..', ERR.malformed],
  ['four parts', () => `${hs256()}.x`, ERR.malformed],
  ['Latin-1 bytes', () => 'Ã©Ã¿.Ã.Ã', ERR.malformed],
  ['base64url parts that are not JSON', () => 'bm90.anNvbg.c2ln', ERR.malformed],
  ['a JSON array as payload', () => `${b64({ alg: 'HS256' })}.${b64([1])}.${'A'.repeat(43)}`, ERR.malformed],
  [
    `very long (${MAX_SESSION_TOKEN_LENGTH + 1} characters)`,
    () => `${hs256()}${'A'.repeat(MAX_SESSION_TOKEN_LENGTH)}`.slice(0, MAX_SESSION_TOKEN_LENGTH + 1),
    ERR.malformed,
  ],
  ['a valid token padded past the limit (about 11,000 characters)', () => hs256({ pad: 'x'.repeat(8_000) }), ERR.malformed],
  ['a platform access token', () => `shpat_${randomBytes(16).toString('hex')}`, ERR.malformed],
  ['an MCP token', () => `mcp_${randomBytes(16).toString('hex')}_${'a'.repeat(43)}`, ERR.malformed],
];

describeEngines('authentication', (get) => {
  let env: SecurityEnv;
  beforeAll(async () => {
    env = await startSecurityEnv(get().db);
  }, 120_000);
  afterAll(() => env?.close());

  const raw = (path: string, init: RequestInit = {}) => fetch(`${env.url}${path}`, init);
  async function expect401(res: Response, error: string, label: string) {
    const text = await res.text();
    expect(res.status, `${label}: ${text}`).toBe(401);
    expect(res.headers.get(RETRY_INVALID_SESSION_HEADER), label).toBe('1');
    expect(JSON.parse(text), label).toEqual({ error });
  }

  it('control: a valid token of each app is accepted, also at the edges of the leeway', async () => {
    for (const token of [
      sessionToken('main', SHOP),
      sessionToken('second', SHOP),
      hs256({ exp: nowS() - LEEWAY + 3 }),
      hs256({ nbf: nowS() + LEEWAY - 3 }),
    ]) {
      const res = await raw('/api/runs', { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
    }
  });

  it(`${SESSION_TOKEN_CASES.length} refused session tokens: 401 with the reason, on a read and on a write, nothing changed`, async () => {
    const before = await dumpDatabase(get().db);
    for (const [label, make, error] of SESSION_TOKEN_CASES) {
      const token = make();
      const headers = { authorization: `Bearer ${token}` };
      await expect401(await raw('/api/runs', { headers }), error, `GET ${label}`);
      await expect401(
        await raw('/api/flows/noisy/run', {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ input: { note: 'x' } }),
        }),
        error,
        `POST ${label}`,
      );
    }
    expect(dumpDiff(before, await dumpDatabase(get().db)).map((r) => r.text)).toEqual([]);
  });

  it('401 without a bearer session token: no header, empty, another scheme, no token after Bearer', async () => {
    await expect401(await raw('/api/runs'), 'Missing session token', 'no header');
    await expect401(await raw('/api/runs', { headers: { authorization: ' ' } }), 'Missing session token', 'blank');
    const scheme = 'Authorization must be "Bearer <session token>"';
    await expect401(await raw('/api/runs', { headers: { authorization: 'Basic dXNlcjpwYXNz' } }), scheme, 'Basic');
    await expect401(await raw('/api/runs', { headers: { authorization: 'Bearer' } }), scheme, 'Bearer alone');
    await expect401(await raw('/api/runs', { headers: { authorization: sessionToken('main', SHOP) } }), scheme, 'token without scheme');
  });

  it("a token longer than the HTTP server's header limit never reaches the app: Node answers 431", async () => {
    const res = await raw('/api/runs', { headers: { authorization: `Bearer ${hs256({ pad: 'x'.repeat(20_000) })}` } });
    expect(res.status).toBe(431);
  });

  // --- MCP tokens --------------------------------------------------------------------------------

  const mcp = async (secret: string | undefined, method = 'ping', params: Record<string, unknown> = {}) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (secret !== undefined) headers.authorization = secret.startsWith('Basic ') ? secret : `Bearer ${secret}`;
    const res = await raw('/mcp', { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };
  const create = async (body: Record<string, unknown>, shop = SHOP) => {
    const res = await env.call(sessionToken('main', shop), 'POST', '/api/mcp/tokens', body);
    expect(res.status).toBe(201);
    return { id: res.body.token.id as string, secret: res.body.secret as string };
  };
  const admin = (method: string, path: string, body?: unknown) => env.call(sessionToken('main', SHOP), method, path, body);
  const INVALID = 'Unknown or invalid MCP token';

  it('control: a valid MCP token answers', async () => {
    expect((await mcp(env.seed.mcpSecret)).status).toBe(200);
  });

  it('401 with WWW-Authenticate for missing, malformed, unknown and wrong MCP secrets', async () => {
    const { secret } = await create({ name: 'auth cases' });
    const other = await create({ name: 'other shop' }, OTHER_SHOP);
    const flip = (s: string) => `${s.slice(0, -1)}${s.endsWith('a') ? 'b' : 'a'}`;
    const cases: Array<[string, string | undefined, string]> = [
      ['no Authorization', undefined, 'Missing bearer token'],
      ['another scheme', 'Basic dXNlcjpwYXNz', 'Authorization must be "Bearer <MCP token>"'],
      ['garbage', 'garbage', 'Malformed MCP token'],
      ['no mcp_ prefix', secret.slice(4), 'Malformed MCP token'],
      ['truncated', secret.slice(0, -1), 'Malformed MCP token'],
      ['a session token', sessionToken('main', SHOP), 'Malformed MCP token'],
      ['random part changed', flip(secret), INVALID],
      ["another token's id with this random part", `${other.secret.slice(0, 37)}${secret.slice(37)}`, INVALID],
      ['a well-formed secret of no token', `mcp_${randomBytes(16).toString('hex')}_${secret.slice(37)}`, INVALID],
    ];
    for (const [label, value, error] of cases) {
      const res = await mcp(value);
      expect(res.status, label).toBe(401);
      expect(res.body, label).toEqual({ error });
      expect(res.headers.get('www-authenticate'), label).toBe('Bearer realm="mcp", error="invalid_token"');
    }
    expect((await mcp(secret)).status).toBe(200);
  });

  it('rotated: the old secret is 401 at once, the new one works', async () => {
    const { id, secret } = await create({ name: 'rotate' });
    const rotated = await admin('POST', `/api/mcp/tokens/${id}/rotate`);
    expect(rotated.status).toBe(200);
    expect(await mcp(secret)).toMatchObject({ status: 401, body: { error: INVALID } });
    expect((await mcp(rotated.body.secret)).status).toBe(200);
  });

  it('disabled, revoked and expired tokens: 403 with the reason', async () => {
    const disabled = await create({ name: 'disabled' });
    expect((await admin('PATCH', `/api/mcp/tokens/${disabled.id}`, { status: 'disabled' })).status).toBe(200);
    expect(await mcp(disabled.secret)).toMatchObject({ status: 403, body: { error: 'MCP token is disabled' } });

    const revoked = await create({ name: 'revoked' });
    expect((await admin('POST', `/api/mcp/tokens/${revoked.id}/revoke`)).status).toBe(200);
    expect(await mcp(revoked.secret)).toMatchObject({ status: 403, body: { error: 'MCP token is revoked' } });

    const expired = await create({ name: 'expired' });
    expect((await mcp(expired.secret)).status).toBe(200);
    // As another process would: in SQL, then the cache's NOTIFY (a cached row is re-read within 2 s anyway).
    await get().db.query(sql`update mcp_tokens set expires_at = now() - interval '1 second' where id = ${expired.id}::uuid`);
    await get().db.notify(TOKENS_CHANNEL, expired.id);
    await expect.poll(async () => (await mcp(expired.secret)).status, { timeout: 3000, interval: 20 }).toBe(403);
    expect((await mcp(expired.secret)).body).toEqual({ error: 'MCP token has expired' });
  });

  it('too few permissions: -32003 naming the missing ones, for tools and resources; the capability is not listed', async () => {
    const readOnly = await create({ name: 'read only', permissions: ['read_logs'] });
    const run = await mcp(readOnly.secret, 'tools/call', { name: 'service.flows.run', arguments: { flow: 'noisy', input: { note: 'x' } } });
    expect(run.status).toBe(200);
    expect(run.body.error).toMatchObject({ code: -32003, data: { requiredPermissions: ['run_flows'], missingPermissions: ['run_flows'] } });
    const recent = await mcp(readOnly.secret, 'resources/read', { uri: 'service://runs/recent' });
    expect(recent.body.error).toMatchObject({ code: -32003, data: { missingPermissions: ['read_flows'] } });
    const tools = (await mcp(readOnly.secret, 'tools/list')).body.result.tools.map((t: any) => t.name);
    expect(tools).toContain('service.logs.search');
    expect(tools).not.toContain('service.flows.run');
  });

  it("a token of another shop reaches nothing of this shop's (the full list is the MCP half of tenant-matrix.test.ts)", async () => {
    const foreign = await create({ name: 'foreign', permissions: ['read_logs', 'platform_admin_graphql'] }, OTHER_SHOP);
    const logs = await mcp(foreign.secret, 'tools/call', { name: 'service.logs.search', arguments: { runId: env.seed.runId } });
    expect(logs.body.error).toMatchObject({ code: -32602 });
    const gql = await mcp(foreign.secret, 'tools/call', {
      name: 'service.admin.graphql',
      arguments: { shop: SHOP, query: '{ shop { name } }' },
    });
    expect(gql.body.error).toMatchObject({ code: -32003 });
  });

  it('an MCP token is no session token: /api answers 401', async () => {
    await expect401(
      await raw('/api/mcp/tokens', { headers: { authorization: `Bearer ${env.seed.mcpSecret}` } }),
      ERR.malformed,
      'MCP token on /api',
    );
  });
});
