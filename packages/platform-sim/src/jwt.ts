/** Session tokens (JWT, HS256) as the platform issues them: signing for tests and the checks token exchange makes. */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { SHOP_DOMAIN_RE } from './state.ts';

/** Clock skew tolerated on `exp` and `nbf`, in seconds. */
export const LEEWAY_SECONDS = 5;

export interface SessionClaims {
  iss: string;
  dest: string;
  aud: string;
  exp: number;
  nbf: number;
  iat?: number;
  sub?: string;
  jti?: string;
  sid?: string;
}

export type VerifyResult = { ok: true; claims: SessionClaims; shop: string } | { ok: false; reason: string };

function b64json(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Checks signature (HS256 with `secret`), `aud`, `exp`/`nbf` and that `iss` and `dest` name the same shop. */
export function verifySessionToken(token: string, expected: { apiKey: string; apiSecret: string }, now = Date.now() / 1000): VerifyResult {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((p) => /^[A-Za-z0-9_-]+$/.test(p))) return { ok: false, reason: 'malformed' };
  const header = b64json(parts[0]!);
  const payload = b64json(parts[1]!);
  if (!header || !payload) return { ok: false, reason: 'malformed' };
  if (header.alg !== 'HS256') return { ok: false, reason: 'algorithm' };
  const expectedSig = createHmac('sha256', expected.apiSecret).update(`${parts[0]}.${parts[1]}`).digest();
  const given = Buffer.from(parts[2]!, 'base64url');
  if (given.length !== expectedSig.length || !timingSafeEqual(given, expectedSig)) return { ok: false, reason: 'signature' };
  if (payload.aud !== expected.apiKey) return { ok: false, reason: 'audience' };
  const { exp, nbf } = payload;
  if (typeof exp !== 'number' || typeof nbf !== 'number') return { ok: false, reason: 'malformed' };
  if (now > exp + LEEWAY_SECONDS) return { ok: false, reason: 'expired' };
  if (now + LEEWAY_SECONDS < nbf) return { ok: false, reason: 'not_yet_valid' };
  const dest = typeof payload.dest === 'string' ? /^https:\/\/([^/]+)$/.exec(payload.dest)?.[1] : undefined;
  const iss = typeof payload.iss === 'string' ? /^https:\/\/([^/]+)\/admin$/.exec(payload.iss)?.[1] : undefined;
  if (!dest || dest !== iss || !SHOP_DOMAIN_RE.test(dest)) return { ok: false, reason: 'shop' };
  return { ok: true, claims: payload as unknown as SessionClaims, shop: dest };
}

/** Mints a session token like the platform's admin does for an embedded app (one minute by default). */
export function signSessionToken(options: { apiKey: string; apiSecret: string; shop: string; ttlSeconds?: number; now?: number; sub?: string }): string {
  const now = Math.floor(options.now ?? Date.now() / 1000);
  const claims: SessionClaims = {
    iss: `https://${options.shop}/admin`,
    dest: `https://${options.shop}`,
    aud: options.apiKey,
    exp: now + (options.ttlSeconds ?? 60),
    nbf: now,
    iat: now,
    jti: randomUUID(),
    sid: randomUUID(),
    sub: options.sub ?? '1',
  };
  const input = `${Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${createHmac('sha256', options.apiSecret).update(input).digest('base64url')}`;
}

/** The webhook signature: base64 HMAC-SHA256 of the raw body bytes with the app's secret. */
export function webhookHmac(body: string | Uint8Array, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('base64');
}
