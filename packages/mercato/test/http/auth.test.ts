import { createHmac, createSign, generateKeyPairSync, randomBytes } from 'node:crypto';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RETRY_INVALID_SESSION_HEADER } from '../../src/http/auth.ts';
import { MAX_SESSION_TOKEN_LIFETIME_SECONDS, signJwt } from '../../src/http/session-token.ts';
import type { ApiEnv, ApiRouteGroup } from '../../src/http/types.ts';
import { DEFAULT_APP, SHOP, bearer, makeApp, makePlatform, startTestServer, tokenFor } from './helpers.ts';

const OTHER_APP = makeApp('wholesale', 'key-wholesale-0002', 'secret-wholesale-0002');

function whoamiGroup(): ApiRouteGroup {
  const app = new Hono<ApiEnv>();
  app.get('/', (c) => {
    const t = c.get('tenant');
    return c.json({ appHandle: t.appHandle, shop: t.shop, apiKey: t.app.apiKey });
  });
  return { prefix: '/api/whoami', app };
}

const nowS = () => Math.floor(Date.now() / 1000);
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

function claims(overrides: Record<string, unknown> = {}) {
  const now = nowS();
  return {
    iss: `https://${SHOP}/admin`,
    dest: `https://${SHOP}`,
    aud: DEFAULT_APP.apiKey,
    exp: now + 60,
    nbf: now,
    iat: now,
    ...overrides,
  };
}

describe('session-token authentication over HTTP', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    server = await startTestServer({ platform: makePlatform([DEFAULT_APP, OTHER_APP]), groups: [whoamiGroup()] });
  });
  afterAll(async () => {
    await server.close();
  });

  const whoami = (headers: Record<string, string> = {}) => fetch(`${server.url}/api/whoami`, { headers });

  async function expect401(res: Response, error: string) {
    expect(res.status).toBe(401);
    expect(res.headers.get(RETRY_INVALID_SESSION_HEADER)).toBe('1');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ error });
  }

  it('accepts a valid token and scopes the request to its app and shop', async () => {
    const res = await whoami(bearer(tokenFor()));
    expect(res.status).toBe(200);
    expect(res.headers.get(RETRY_INVALID_SESSION_HEADER)).toBeNull();
    expect(await res.json()).toEqual({ appHandle: 'default', shop: SHOP, apiKey: DEFAULT_APP.apiKey });
  });

  it('selects the app by aud in multi-app mode', async () => {
    const res = await whoami(bearer(tokenFor(OTHER_APP, 'other-shop.myshopify.com')));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ appHandle: 'wholesale', shop: 'other-shop.myshopify.com', apiKey: OTHER_APP.apiKey });
    // aud names the other app but the token is signed with the default app's secret.
    await expect401(
      await whoami(bearer(signJwt({ alg: 'HS256' }, claims({ aud: OTHER_APP.apiKey }), DEFAULT_APP.apiSecret))),
      'Invalid session token signature',
    );
  });

  it('401 without an Authorization header', async () => {
    await expect401(await whoami(), 'Missing session token');
    await expect401(await whoami({ authorization: '' }), 'Missing session token');
  });

  it('401 for a scheme other than Bearer', async () => {
    await expect401(
      await whoami({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }),
      'Authorization must be "Bearer <session token>"',
    );
    await expect401(await whoami({ authorization: tokenFor() }), 'Authorization must be "Bearer <session token>"');
    await expect401(await whoami({ authorization: 'Bearer' }), 'Authorization must be "Bearer <session token>"');
  });

  it('401 for malformed tokens', async () => {
    for (const token of ['abc', 'a.b', 'a.b.c.d', `${b64({ alg: 'HS256' })}.not-json.c2ln`, `${b64({ alg: 'HS256' })}.${b64(claims())}.`]) {
      await expect401(await whoami(bearer(token)), 'Malformed session token');
    }
  });

  it('401 for a bad signature', async () => {
    await expect401(await whoami(bearer(signJwt({ alg: 'HS256' }, claims(), 'not-the-secret'))), 'Invalid session token signature');
  });

  it('401 for alg none, with or without a signature part', async () => {
    await expect401(await whoami(bearer(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.`)), 'Malformed session token');
    await expect401(await whoami(bearer(signJwt({ alg: 'none' }, claims(), DEFAULT_APP.apiSecret))), 'Unsupported session token algorithm');
  });

  it('401 for HS512 and RS256', async () => {
    const input512 = `${b64({ alg: 'HS512', typ: 'JWT' })}.${b64(claims())}`;
    const hs512 = `${input512}.${createHmac('sha512', DEFAULT_APP.apiSecret).update(input512).digest('base64url')}`;
    await expect401(await whoami(bearer(hs512)), 'Unsupported session token algorithm');
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const inputRs = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64(claims())}`;
    const rs256 = `${inputRs}.${createSign('RSA-SHA256').update(inputRs).sign(privateKey).toString('base64url')}`;
    await expect401(await whoami(bearer(rs256)), 'Unsupported session token algorithm');
  });

  it('401 for an aud that is no app of ours', async () => {
    await expect401(
      await whoami(bearer(signJwt({ alg: 'HS256' }, claims({ aud: 'someone-else' }), DEFAULT_APP.apiSecret))),
      'Session token audience is not an app of this service',
    );
  });

  it('401 when expired beyond the leeway; accepted within it', async () => {
    const now = nowS();
    await expect401(await whoami(bearer(tokenFor(DEFAULT_APP, SHOP, { now: now - 100, ttlSeconds: 60 }))), 'Session token expired');
    const res = await whoami(bearer(tokenFor(DEFAULT_APP, SHOP, { now: now - 63, ttlSeconds: 60 })));
    expect(res.status).toBe(200);
  });

  it('401 when nbf is in the future beyond the leeway; accepted within it', async () => {
    const now = nowS();
    await expect401(
      await whoami(bearer(signJwt({ alg: 'HS256' }, claims({ nbf: now + 60, exp: now + 120 }), DEFAULT_APP.apiSecret))),
      'Session token not yet valid',
    );
    const res = await whoami(bearer(signJwt({ alg: 'HS256' }, claims({ nbf: now + 3 }), DEFAULT_APP.apiSecret)));
    expect(res.status).toBe(200);
  });

  it('401 for a lifetime (exp − iat, or − now) over the bound, such as exp 1e308; a minute or ten are accepted', async () => {
    const now = nowS();
    const lifetime = `Session token lifetime is over ${MAX_SESSION_TOKEN_LIFETIME_SECONDS} s`;
    await expect401(await whoami(bearer(signJwt({ alg: 'HS256' }, claims({ exp: 1e308 }), DEFAULT_APP.apiSecret))), lifetime);
    await expect401(
      await whoami(bearer(signJwt({ alg: 'HS256' }, claims({ iat: now, exp: now + 3600 }), DEFAULT_APP.apiSecret))),
      lifetime,
    );
    // without iat, from now; an iat in the future does not shorten it
    await expect401(
      await whoami(bearer(signJwt({ alg: 'HS256' }, claims({ iat: undefined, exp: now + 700 }), DEFAULT_APP.apiSecret))),
      lifetime,
    );
    await expect401(
      await whoami(bearer(signJwt({ alg: 'HS256' }, claims({ iat: now + 500, exp: now + 700 }), DEFAULT_APP.apiSecret))),
      lifetime,
    );
    expect((await whoami(bearer(signJwt({ alg: 'HS256' }, claims({ iat: now, exp: now + 60 }), DEFAULT_APP.apiSecret)))).status).toBe(200);
    expect(
      (
        await whoami(
          bearer(signJwt({ alg: 'HS256' }, claims({ iat: now, exp: now + MAX_SESSION_TOKEN_LIFETIME_SECONDS }), DEFAULT_APP.apiSecret)),
        )
      ).status,
    ).toBe(200);
  });

  it('401 when iss and dest differ or dest is not a shop', async () => {
    const sign = (o: Record<string, unknown>) => bearer(signJwt({ alg: 'HS256' }, claims(o), DEFAULT_APP.apiSecret));
    const error = 'Session token issuer and destination must be the same shop';
    await expect401(await whoami(sign({ iss: 'https://other.myshopify.com/admin' })), error);
    await expect401(await whoami(sign({ dest: 'https://evil.example.com', iss: 'https://evil.example.com/admin' })), error);
    await expect401(await whoami(sign({ dest: 'https://localhost', iss: 'https://localhost/admin' })), error);
  });

  it('401 for a platform access token and for an MCP-like opaque token', async () => {
    await expect401(await whoami(bearer(`shpat_${randomBytes(16).toString('hex')}`)), 'Malformed session token');
    await expect401(
      await whoami(bearer(`mcp_${randomBytes(6).toString('hex')}_${randomBytes(24).toString('base64url')}`)),
      'Malformed session token',
    );
  });

  it('authenticates before answering 404 for unknown /api paths', async () => {
    await expect401(await fetch(`${server.url}/api/nothing-here`), 'Missing session token');
    await expect401(await fetch(`${server.url}/api`), 'Missing session token');
    const res = await fetch(`${server.url}/api/nothing-here`, { headers: bearer(tokenFor()) });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'Not found' });
  });
});
