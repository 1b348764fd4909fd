import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LEEWAY_SECONDS, signSessionToken, verifySessionToken } from '../src/jwt.ts';

const APP = { apiKey: 'key-1', apiSecret: 'secret-1' };
const SHOP = 'alpha.myshopify.com';
const NOW = 1_800_000_000;
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const hs256 = (header: unknown, payload: unknown, secret = APP.apiSecret) => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
};
const claims = (o: Record<string, unknown> = {}) => ({
  iss: `https://${SHOP}/admin`,
  dest: `https://${SHOP}`,
  aud: APP.apiKey,
  exp: NOW + 60,
  nbf: NOW,
  ...o,
});
const reason = async (token: string, now = NOW) => {
  const r = await verifySessionToken(token, APP, now);
  return r.ok ? 'ok' : r.reason;
};

describe('simulator session tokens (jose)', () => {
  it('signs the platform claims and verifies them', async () => {
    const token = await signSessionToken({ ...APP, shop: SHOP, now: NOW, sub: '7' });
    const [header] = token.split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    const r = await verifySessionToken(token, APP, NOW + 1);
    expect(r).toMatchObject({
      ok: true,
      shop: SHOP,
      claims: { iss: `https://${SHOP}/admin`, dest: `https://${SHOP}`, aud: APP.apiKey, exp: NOW + 60, nbf: NOW, iat: NOW, sub: '7' },
    });
    expect(r.ok && typeof r.claims.jti === 'string' && typeof r.claims.sid === 'string').toBe(true);
  });

  it('names the reason of each refusal', async () => {
    expect(await reason('not-a-jwt')).toBe('malformed');
    expect(await reason(hs256({ alg: 'none' }, claims()))).toBe('algorithm');
    expect(await reason(hs256({ alg: 'HS256' }, claims(), 'other-secret'))).toBe('signature');
    expect(await reason(hs256({ alg: 'HS256' }, claims({ aud: 'other' })))).toBe('audience');
    expect(await reason(hs256({ alg: 'HS256' }, claims({ aud: [APP.apiKey, 'other'] })))).toBe('audience');
    expect(await reason(hs256({ alg: 'HS256' }, claims({ exp: undefined })))).toBe('malformed');
    expect(await reason(hs256({ alg: 'HS256' }, claims()), NOW + 60 + LEEWAY_SECONDS - 1)).toBe('ok');
    expect(await reason(hs256({ alg: 'HS256' }, claims()), NOW + 60 + LEEWAY_SECONDS)).toBe('expired');
    expect(await reason(hs256({ alg: 'HS256' }, claims()), NOW - LEEWAY_SECONDS - 1)).toBe('not_yet_valid');
    expect(await reason(hs256({ alg: 'HS256' }, claims({ iss: 'https://beta.myshopify.com/admin' })))).toBe('shop');
    expect(await reason(hs256({ alg: 'HS256' }, claims({ dest: 'https://example.com', iss: 'https://example.com/admin' })))).toBe('shop');
  });
});
