import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SESSION_TOKEN_LEEWAY_SECONDS, isShopDomain, signJwt, signSessionToken, verifySessionToken } from '../../src/http/session-token.ts';
import { DEFAULT_APP, SHOP, makeApp, makePlatform } from './helpers.ts';

const NOW = 1_800_000_000;
const platform = makePlatform([DEFAULT_APP]);

function claims(overrides: Record<string, unknown> = {}) {
  return {
    iss: `https://${SHOP}/admin`,
    dest: `https://${SHOP}`,
    aud: DEFAULT_APP.apiKey,
    exp: NOW + 60,
    nbf: NOW,
    iat: NOW,
    ...overrides,
  };
}

async function reason(token: string, now = NOW) {
  const result = await verifySessionToken(token, platform, now);
  return result.ok ? 'ok' : result.reason;
}

describe('signSessionToken / verifySessionToken', () => {
  it('round-trips and yields the tenant', async () => {
    const token = signSessionToken({ apiKey: DEFAULT_APP.apiKey, apiSecret: DEFAULT_APP.apiSecret, shop: SHOP, now: NOW, sub: '42' });
    const result = await verifySessionToken(token, platform, NOW + 1);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.tenant).toEqual({ appHandle: 'default', shop: SHOP, app: DEFAULT_APP });
    expect(result.claims).toMatchObject({
      aud: DEFAULT_APP.apiKey,
      sub: '42',
      iss: `https://${SHOP}/admin`,
      dest: `https://${SHOP}`,
      exp: NOW + 60,
      nbf: NOW,
    });
    const [header] = token.split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
  });

  it('applies at most the leeway to exp', async () => {
    const token = signJwt({ alg: 'HS256' }, claims(), DEFAULT_APP.apiSecret);
    expect(SESSION_TOKEN_LEEWAY_SECONDS).toBe(10);
    expect(await reason(token, NOW + 60 + SESSION_TOKEN_LEEWAY_SECONDS - 1)).toBe('ok');
    expect(await reason(token, NOW + 60 + SESSION_TOKEN_LEEWAY_SECONDS)).toBe('expired');
    expect(await reason(token, NOW + 3600)).toBe('expired');
  });

  it('applies at most the leeway to nbf', async () => {
    const token = signJwt({ alg: 'HS256' }, claims({ nbf: NOW + 100, exp: NOW + 200 }), DEFAULT_APP.apiSecret);
    expect(await reason(token, NOW + 100 - SESSION_TOKEN_LEEWAY_SECONDS)).toBe('ok');
    expect(await reason(token, NOW + 100 - SESSION_TOKEN_LEEWAY_SECONDS - 1)).toBe('not_yet_valid');
  });

  it('requires exp and nbf as numbers', async () => {
    const s = DEFAULT_APP.apiSecret;
    expect(await reason(signJwt({ alg: 'HS256' }, claims({ exp: undefined }), s))).toBe('malformed');
    expect(await reason(signJwt({ alg: 'HS256' }, claims({ nbf: undefined }), s))).toBe('malformed');
    expect(await reason(signJwt({ alg: 'HS256' }, claims({ exp: String(NOW + 60) }), s))).toBe('malformed');
    // jose checks every NumericDate claim it knows, iat included
    expect(await reason(signJwt({ alg: 'HS256' }, claims({ iat: 'yesterday' }), s))).toBe('malformed');
    expect(await reason(signJwt({ alg: 'HS256' }, claims({ iat: undefined }), s))).toBe('ok');
  });

  it('refuses other algorithms even with a matching HMAC', async () => {
    const s = DEFAULT_APP.apiSecret;
    expect(await reason(signJwt({ alg: 'none' }, claims(), s))).toBe('algorithm');
    expect(await reason(signJwt({ alg: 'hs256' }, claims(), s))).toBe('algorithm');
    expect(await reason(signJwt({ typ: 'JWT' }, claims(), s))).toBe('algorithm');
    const h = Buffer.from(JSON.stringify({ alg: 'HS512' })).toString('base64url');
    const p = Buffer.from(JSON.stringify(claims())).toString('base64url');
    const sig = createHmac('sha512', s).update(`${h}.${p}`).digest('base64url');
    expect(await reason(`${h}.${p}.${sig}`)).toBe('algorithm');
  });

  it('checks the signature with the secret of the app named by aud', async () => {
    const other = makeApp('other', 'key-other', 'secret-other');
    const multi = makePlatform([DEFAULT_APP, other]);
    const forOther = signJwt({ alg: 'HS256' }, claims({ aud: other.apiKey }), other.apiSecret);
    const r = await verifySessionToken(forOther, multi, NOW);
    expect(r.ok && r.tenant.appHandle).toBe('other');
    const wrongSecret = signJwt({ alg: 'HS256' }, claims({ aud: other.apiKey }), DEFAULT_APP.apiSecret);
    expect(await verifySessionToken(wrongSecret, multi, NOW)).toMatchObject({ ok: false, reason: 'signature' });
    expect(await reason(signJwt({ alg: 'HS256' }, claims({ aud: 'unknown' }), DEFAULT_APP.apiSecret))).toBe('audience');
    expect(await reason(signJwt({ alg: 'HS256' }, claims({ aud: [DEFAULT_APP.apiKey] }), DEFAULT_APP.apiSecret))).toBe('audience');
  });

  it('a token verified once is verified again when its app changed, and a variant of it is never taken for it', async () => {
    const token = signJwt({ alg: 'HS256' }, claims(), DEFAULT_APP.apiSecret);
    expect(await reason(token)).toBe('ok'); // now in the cache of verified tokens
    // the same key with another secret (a reload that rotated it): a new app object, so the cache is not used
    const rotated = makePlatform([makeApp('default', DEFAULT_APP.apiKey, 'secret-rotated-0002')]);
    expect(await verifySessionToken(token, rotated, NOW)).toMatchObject({ ok: false, reason: 'signature' });
    // the app named by aud is gone
    expect(await verifySessionToken(token, makePlatform([makeApp('other', 'key-other', 'secret-other')]), NOW)).toMatchObject({
      ok: false,
      reason: 'audience',
    });
    // variants of the cached text are checked on their own
    const [h, p, sig] = token.split('.');
    expect(await reason(`${h}.${p}.${sig!.slice(0, -1)}${sig!.endsWith('A') ? 'B' : 'A'}`)).toBe('signature');
    expect(await reason(`${h}.${Buffer.from(JSON.stringify(claims({ sub: 'x' }))).toString('base64url')}.${sig}`)).toBe('signature');
    expect(await reason(token)).toBe('ok');
  });

  it('rejects a tampered payload', async () => {
    const token = signJwt({ alg: 'HS256' }, claims(), DEFAULT_APP.apiSecret);
    const [h, , sig] = token.split('.');
    const forged = Buffer.from(
      JSON.stringify(claims({ dest: 'https://victim.myshopify.com', iss: 'https://victim.myshopify.com/admin' })),
    ).toString('base64url');
    expect(await reason(`${h}.${forged}.${sig}`)).toBe('signature');
    expect(await reason(`${token}x`)).toBe('signature');
    expect(await reason(token.slice(0, -1))).toBe('signature');
    expect(await reason(`${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`)).toBe('signature');
  });

  it('requires iss and dest to name the same shop domain', async () => {
    const s = DEFAULT_APP.apiSecret;
    const t = (o: Record<string, unknown>) => reason(signJwt({ alg: 'HS256' }, claims(o), s));
    expect(await t({ iss: 'https://other.myshopify.com/admin' })).toBe('shop');
    expect(await t({ dest: 'https://example.com', iss: 'https://example.com/admin' })).toBe('shop');
    expect(await t({ dest: `http://${SHOP}`, iss: `http://${SHOP}/admin` })).toBe('shop');
    expect(await t({ dest: `https://${SHOP}:444`, iss: `https://${SHOP}:444/admin` })).toBe('shop');
    expect(await t({ dest: `https://${SHOP}/` })).toBe('shop');
    expect(await t({ iss: `https://${SHOP}` })).toBe('shop');
    expect(await t({ dest: `https://user@${SHOP}` })).toBe('shop');
    expect(await t({ dest: undefined })).toBe('shop');
    // Case differences are normalised: the tenant shop is lowercase.
    const upper = await verifySessionToken(signJwt({ alg: 'HS256' }, claims({ dest: 'https://Demo-1.MyShopify.com' }), s), platform, NOW);
    expect(upper.ok && upper.tenant.shop).toBe(SHOP);
  });

  it('treats non-JWT strings as malformed', async () => {
    for (const token of [
      '',
      'abc',
      'a.b',
      'a.b.c.d',
      'shpat_0123456789abcdef0123456789abcdef',
      'a..c',
      'a.b.c',
      '!!.??.**',
      'mcp_AbC123.secretpart',
    ]) {
      expect(await reason(token), token).toBe('malformed');
    }
    const payloadArray = `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${Buffer.from('[1]').toString('base64url')}.abc`;
    expect(await reason(payloadArray)).toBe('malformed');
  });

  it('recognises shop domains', () => {
    expect(isShopDomain('demo-1.myshopify.com')).toBe(true);
    expect(isShopDomain('a.myshopify.com')).toBe(true);
    for (const bad of [
      'Demo.myshopify.com',
      '-x.myshopify.com',
      'x.myshopify.com.evil.com',
      'myshopify.com',
      'x.y.myshopify.com',
      'x_y.myshopify.com',
      'example.com',
      '',
    ]) {
      expect(isShopDomain(bad), bad).toBe(false);
    }
  });
});
