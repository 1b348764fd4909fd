import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  SESSION_TOKEN_LEEWAY_SECONDS,
  isShopDomain,
  signJwt,
  signSessionToken,
  verifySessionToken,
} from '../../src/http/session-token.ts';
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

function reason(token: string, now = NOW) {
  const result = verifySessionToken(token, platform, now);
  return result.ok ? 'ok' : result.reason;
}

describe('signSessionToken / verifySessionToken', () => {
  it('round-trips and yields the tenant', () => {
    const token = signSessionToken({ apiKey: DEFAULT_APP.apiKey, apiSecret: DEFAULT_APP.apiSecret, shop: SHOP, now: NOW, sub: '42' });
    const result = verifySessionToken(token, platform, NOW + 1);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.tenant).toEqual({ appHandle: 'default', shop: SHOP, app: DEFAULT_APP });
    expect(result.claims).toMatchObject({ aud: DEFAULT_APP.apiKey, sub: '42', iss: `https://${SHOP}/admin`, dest: `https://${SHOP}`, exp: NOW + 60, nbf: NOW });
    const [header] = token.split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
  });

  it('applies at most the leeway to exp', () => {
    const token = signJwt({ alg: 'HS256' }, claims(), DEFAULT_APP.apiSecret);
    expect(SESSION_TOKEN_LEEWAY_SECONDS).toBe(10);
    expect(reason(token, NOW + 60 + SESSION_TOKEN_LEEWAY_SECONDS - 1)).toBe('ok');
    expect(reason(token, NOW + 60 + SESSION_TOKEN_LEEWAY_SECONDS)).toBe('expired');
    expect(reason(token, NOW + 3600)).toBe('expired');
  });

  it('applies at most the leeway to nbf', () => {
    const token = signJwt({ alg: 'HS256' }, claims({ nbf: NOW + 100, exp: NOW + 200 }), DEFAULT_APP.apiSecret);
    expect(reason(token, NOW + 100 - SESSION_TOKEN_LEEWAY_SECONDS)).toBe('ok');
    expect(reason(token, NOW + 100 - SESSION_TOKEN_LEEWAY_SECONDS - 1)).toBe('not_yet_valid');
  });

  it('requires exp and nbf as numbers', () => {
    const s = DEFAULT_APP.apiSecret;
    expect(reason(signJwt({ alg: 'HS256' }, claims({ exp: undefined }), s))).toBe('malformed');
    expect(reason(signJwt({ alg: 'HS256' }, claims({ nbf: undefined }), s))).toBe('malformed');
    expect(reason(signJwt({ alg: 'HS256' }, claims({ exp: String(NOW + 60) }), s))).toBe('malformed');
  });

  it('refuses other algorithms even with a matching HMAC', () => {
    const s = DEFAULT_APP.apiSecret;
    expect(reason(signJwt({ alg: 'none' }, claims(), s))).toBe('algorithm');
    expect(reason(signJwt({ alg: 'hs256' }, claims(), s))).toBe('algorithm');
    expect(reason(signJwt({ typ: 'JWT' }, claims(), s))).toBe('algorithm');
    const h = Buffer.from(JSON.stringify({ alg: 'HS512' })).toString('base64url');
    const p = Buffer.from(JSON.stringify(claims())).toString('base64url');
    const sig = createHmac('sha512', s).update(`${h}.${p}`).digest('base64url');
    expect(reason(`${h}.${p}.${sig}`)).toBe('algorithm');
  });

  it('checks the signature with the secret of the app named by aud', () => {
    const other = makeApp('other', 'key-other', 'secret-other');
    const multi = makePlatform([DEFAULT_APP, other]);
    const forOther = signJwt({ alg: 'HS256' }, claims({ aud: other.apiKey }), other.apiSecret);
    const r = verifySessionToken(forOther, multi, NOW);
    expect(r.ok && r.tenant.appHandle).toBe('other');
    const wrongSecret = signJwt({ alg: 'HS256' }, claims({ aud: other.apiKey }), DEFAULT_APP.apiSecret);
    expect(verifySessionToken(wrongSecret, multi, NOW)).toMatchObject({ ok: false, reason: 'signature' });
    expect(reason(signJwt({ alg: 'HS256' }, claims({ aud: 'unknown' }), DEFAULT_APP.apiSecret))).toBe('audience');
    expect(reason(signJwt({ alg: 'HS256' }, claims({ aud: [DEFAULT_APP.apiKey] }), DEFAULT_APP.apiSecret))).toBe('audience');
  });

  it('rejects a tampered payload', () => {
    const token = signJwt({ alg: 'HS256' }, claims(), DEFAULT_APP.apiSecret);
    const [h, , sig] = token.split('.');
    const forged = Buffer.from(JSON.stringify(claims({ dest: 'https://victim.myshopify.com', iss: 'https://victim.myshopify.com/admin' }))).toString('base64url');
    expect(reason(`${h}.${forged}.${sig}`)).toBe('signature');
    expect(reason(`${token}x`)).toBe('signature');
  });

  it('requires iss and dest to name the same shop domain', () => {
    const s = DEFAULT_APP.apiSecret;
    const t = (o: Record<string, unknown>) => reason(signJwt({ alg: 'HS256' }, claims(o), s));
    expect(t({ iss: 'https://other.myshopify.com/admin' })).toBe('shop');
    expect(t({ dest: 'https://example.com', iss: 'https://example.com/admin' })).toBe('shop');
    expect(t({ dest: `http://${SHOP}`, iss: `http://${SHOP}/admin` })).toBe('shop');
    expect(t({ dest: `https://${SHOP}:444`, iss: `https://${SHOP}:444/admin` })).toBe('shop');
    expect(t({ dest: `https://${SHOP}/` })).toBe('shop');
    expect(t({ iss: `https://${SHOP}` })).toBe('shop');
    expect(t({ dest: `https://user@${SHOP}` })).toBe('shop');
    expect(t({ dest: undefined })).toBe('shop');
    // Case differences are normalised: the tenant shop is lowercase.
    const upper = verifySessionToken(signJwt({ alg: 'HS256' }, claims({ dest: 'https://Demo-1.MyShopify.com' }), s), platform, NOW);
    expect(upper.ok && upper.tenant.shop).toBe(SHOP);
  });

  it('treats non-JWT strings as malformed', () => {
    for (const token of ['', 'abc', 'a.b', 'a.b.c.d', 'shpat_0123456789abcdef0123456789abcdef', 'a..c', 'a.b.c', '!!.??.**', 'mcp_AbC123.secretpart']) {
      expect(reason(token), token).toBe('malformed');
    }
    const payloadArray = `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${Buffer.from('[1]').toString('base64url')}.abc`;
    expect(reason(payloadArray)).toBe('malformed');
  });

  it('recognises shop domains', () => {
    expect(isShopDomain('demo-1.myshopify.com')).toBe(true);
    expect(isShopDomain('a.myshopify.com')).toBe(true);
    for (const bad of ['Demo.myshopify.com', '-x.myshopify.com', 'x.myshopify.com.evil.com', 'myshopify.com', 'x.y.myshopify.com', 'x_y.myshopify.com', 'example.com', '']) {
      expect(isShopDomain(bad), bad).toBe(false);
    }
  });
});
