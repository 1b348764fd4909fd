/**
 * Platform session tokens (JWT, HS256) with node:crypto only. The rules are in docs/admin-api.md
 * ("Authentication"): three base64url parts, `alg` HS256 only, HMAC-SHA256 with the app's secret, `aud` one of
 * our apps' API keys, `exp`/`nbf` with at most SESSION_TOKEN_LEEWAY_SECONDS of leeway, `iss`/`dest` the same shop.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { isShopDomain } from '../app/shop.ts';
import type { ResolvedApp, ResolvedPlatform } from '../app/platform.ts';
import type { SessionTenant } from './types.ts';

/** Clock skew tolerated on `exp` and `nbf`, in seconds. */
export const SESSION_TOKEN_LEEWAY_SECONDS = 10;
/** Longer tokens are refused as malformed before any decoding. */
export const MAX_SESSION_TOKEN_LENGTH = 8192;
/** Lifetime of tokens minted by signSessionToken() unless told otherwise (the platform's own is one minute). */
export const DEFAULT_SESSION_TOKEN_TTL_SECONDS = 60;

export { SHOP_DOMAIN_RE, isShopDomain } from '../app/shop.ts';

export type SessionTokenFailure = 'malformed' | 'algorithm' | 'audience' | 'signature' | 'expired' | 'not_yet_valid' | 'shop';

/** The `error` of the 401 body for each failure. */
export const SESSION_TOKEN_ERRORS: Readonly<Record<SessionTokenFailure, string>> = Object.freeze({
  malformed: 'Malformed session token',
  algorithm: 'Unsupported session token algorithm',
  audience: 'Session token audience is not an app of this service',
  signature: 'Invalid session token signature',
  expired: 'Session token expired',
  not_yet_valid: 'Session token not yet valid',
  shop: 'Session token issuer and destination must be the same shop',
});

export interface SessionTokenClaims {
  iss: string;
  dest: string;
  aud: string;
  exp: number;
  nbf: number;
  iat?: number;
  sub?: string;
  jti?: string;
  sid?: string;
  [claim: string]: unknown;
}

export type SessionTokenResult =
  | { ok: true; tenant: SessionTenant; claims: SessionTokenClaims }
  | { ok: false; reason: SessionTokenFailure; error: string };

const BASE64URL_RE = /^[A-Za-z0-9_-]+$/;
const DEST_RE = /^https:\/\/([^/?#@:\s]+)$/;
const ISS_RE = /^https:\/\/([^/?#@:\s]+)\/admin$/;

function fail(reason: SessionTokenFailure): SessionTokenResult {
  return { ok: false, reason, error: SESSION_TOKEN_ERRORS[reason] };
}

function decodeJsonObject(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    return value as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function hmac(secret: string, signingInput: string): string {
  return createHmac('sha256', secret).update(signingInput).digest('base64url');
}

/** Constant-time comparison of two base64url signatures (lengths are public: a digest always has the same one). */
function sameSignature(expected: string, given: string): boolean {
  const a = Buffer.from(expected, 'utf8');
  const b = Buffer.from(given, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `https://<host>` or `https://<host>/admin` → the lowercase host when it is a shop domain. */
function shopOf(value: unknown, re: RegExp): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = re.exec(value);
  if (!match) return undefined;
  const host = match[1]!.toLowerCase();
  return isShopDomain(host) ? host : undefined;
}

/**
 * Verifies a session token against the platform's apps. `now` is in seconds (defaults to the clock).
 * Never throws: every failure is a `{ ok: false, reason }`.
 */
export function verifySessionToken(token: string, platform: Pick<ResolvedPlatform, 'byApiKey'>, now: number = Date.now() / 1000): SessionTokenResult {
  if (token.length === 0 || token.length > MAX_SESSION_TOKEN_LENGTH) return fail('malformed');
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((p) => BASE64URL_RE.test(p))) return fail('malformed');
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = decodeJsonObject(headerPart);
  const payload = decodeJsonObject(payloadPart);
  if (!header || !payload) return fail('malformed');
  if (header.alg !== 'HS256') return fail('algorithm');

  const aud = payload.aud;
  if (typeof aud !== 'string' || aud.length === 0) return fail('audience');
  const app: ResolvedApp | undefined = platform.byApiKey(aud);
  if (!app) return fail('audience');
  if (!sameSignature(hmac(app.apiSecret, `${headerPart}.${payloadPart}`), signaturePart)) return fail('signature');

  // Claims are trusted only from here on.
  const { exp, nbf } = payload;
  if (typeof exp !== 'number' || !Number.isFinite(exp) || typeof nbf !== 'number' || !Number.isFinite(nbf)) return fail('malformed');
  if (now >= exp + SESSION_TOKEN_LEEWAY_SECONDS) return fail('expired');
  if (now + SESSION_TOKEN_LEEWAY_SECONDS < nbf) return fail('not_yet_valid');

  const issShop = shopOf(payload.iss, ISS_RE);
  const destShop = shopOf(payload.dest, DEST_RE);
  if (!issShop || !destShop || issShop !== destShop) return fail('shop');

  return { ok: true, tenant: { appHandle: app.handle, shop: destShop, app }, claims: payload as SessionTokenClaims };
}

export interface SignSessionTokenOptions {
  apiKey: string;
  apiSecret: string;
  /** A shop domain such as `demo-1.myshopify.com`. */
  shop: string;
  ttlSeconds?: number;
  /** Seconds since the epoch (defaults to the clock). */
  now?: number;
  /** The platform user id; omitted when not given. */
  sub?: string;
}

/** Mints a session token the way the platform does (the dev admin preview and the tests use it). */
export function signSessionToken(options: SignSessionTokenOptions): string {
  const now = Math.floor(options.now ?? Date.now() / 1000);
  const ttl = options.ttlSeconds ?? DEFAULT_SESSION_TOKEN_TTL_SECONDS;
  const claims: SessionTokenClaims = {
    iss: `https://${options.shop}/admin`,
    dest: `https://${options.shop}`,
    aud: options.apiKey,
    exp: now + ttl,
    nbf: now,
    iat: now,
    jti: randomUUID(),
    sid: randomUUID(),
  };
  if (options.sub !== undefined) claims.sub = options.sub;
  return signJwt({ alg: 'HS256', typ: 'JWT' }, claims, options.apiSecret);
}

/** Encodes and signs (HMAC-SHA256) any header and payload; exported for tests that craft odd tokens. */
export function signJwt(header: Record<string, unknown>, payload: Record<string, unknown>, secret: string): string {
  const signingInput = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return `${signingInput}.${hmac(secret, signingInput)}`;
}
