/**
 * Platform session tokens (JWT, HS256). The rules are in docs/admin-api.md ("Authentication"): three base64url
 * parts, `alg` HS256 only, HMAC-SHA256 with the app's secret, `aud` one of our apps' API keys, `exp`/`nbf` with at
 * most SESSION_TOKEN_LEEWAY_SECONDS of leeway, a lifetime of at most MAX_SESSION_TOKEN_LIFETIME_SECONDS, `iss`/`dest`
 * the same shop. Verification is `jose` (jwtVerify with
 * the algorithm pinned; it checks the HMAC with WebCrypto's `subtle.verify`, a constant-time comparison); we only pick
 * the app's secret by `aud` first and map jose's errors to our 401 reasons. A token verified once is kept (by its exact
 * text) until it expires, so the requests that reuse it are not checked again (VERIFIED_TOKENS_CACHED).
 * Minting (tests, the dev admin preview) stays synchronous on node:crypto: jose signs asynchronously and refuses
 * the odd headers the tests craft on purpose.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify } from 'jose';
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

export type SessionTokenFailure = 'malformed' | 'algorithm' | 'audience' | 'signature' | 'expired' | 'not_yet_valid' | 'lifetime' | 'shop';

/**
 * The longest life a session token may claim: `exp` − `iat` (or − now, whichever is earlier). The platform's tokens
 * live one minute; a token claiming more than this was not made by it (docs/admin-api.md).
 */
export const MAX_SESSION_TOKEN_LIFETIME_SECONDS = 600;

/** The `error` of the 401 body for each failure. */
export const SESSION_TOKEN_ERRORS: Readonly<Record<SessionTokenFailure, string>> = Object.freeze({
  malformed: 'Malformed session token',
  algorithm: 'Unsupported session token algorithm',
  audience: 'Session token audience is not an app of this service',
  signature: 'Invalid session token signature',
  expired: 'Session token expired',
  not_yet_valid: 'Session token not yet valid',
  lifetime: `Session token lifetime is over ${MAX_SESSION_TOKEN_LIFETIME_SECONDS} s`,
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
  { ok: true; tenant: SessionTenant; claims: SessionTokenClaims } | { ok: false; reason: SessionTokenFailure; error: string };

const BASE64URL_RE = /^[A-Za-z0-9_-]+$/;
/** An HMAC-SHA256 digest (32 bytes) in unpadded base64url. */
const HS256_SIGNATURE_LENGTH = 43;
const DEST_RE = /^https:\/\/([^/?#@:\s]+)$/;
const ISS_RE = /^https:\/\/([^/?#@:\s]+)\/admin$/;
const encoder = new TextEncoder();

function fail(reason: SessionTokenFailure): SessionTokenResult {
  return { ok: false, reason, error: SESSION_TOKEN_ERRORS[reason] };
}

function hmac(secret: string, signingInput: string): string {
  return createHmac('sha256', secret).update(signingInput).digest('base64url');
}

/** `https://<host>` or `https://<host>/admin` → the lowercase host when it is a shop domain. */
function shopOf(value: unknown, re: RegExp): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = re.exec(value);
  if (!match) return undefined;
  const host = match[1]!.toLowerCase();
  return isShopDomain(host) ? host : undefined;
}

/** jose's verification errors → our reasons (anything unexpected is a malformed token). */
function failureOf(error: unknown): SessionTokenFailure {
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'signature';
  if (error instanceof errors.JOSEAlgNotAllowed) return 'algorithm';
  if (error instanceof errors.JWTExpired) return 'expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf' && error.reason === 'check_failed') return 'not_yet_valid';
    if (error.claim === 'aud') return 'audience';
  }
  return 'malformed';
}

/**
 * Verifies a session token against the platform's apps. `now` is in seconds (defaults to the clock).
 * Never rejects: every failure is a `{ ok: false, reason }`.
 */
export async function verifySessionToken(
  token: string,
  platform: Pick<ResolvedPlatform, 'byApiKey'>,
  now: number = Date.now() / 1000,
): Promise<SessionTokenResult> {
  if (token.length === 0 || token.length > MAX_SESSION_TOKEN_LENGTH) return fail('malformed');
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((p) => BASE64URL_RE.test(p))) return fail('malformed');
  // Unverified reads, only to refuse early and to pick the app whose secret signs the token.
  let header: Record<string, unknown>;
  let payload: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(token);
    payload = decodeJwt(token);
  } catch {
    return fail('malformed');
  }
  if (header.alg !== 'HS256') return fail('algorithm');
  const aud = payload.aud;
  if (typeof aud !== 'string' || aud.length === 0) return fail('audience');
  const app: ResolvedApp | undefined = platform.byApiKey(aud);
  if (!app) return fail('audience');
  // A digest of another length cannot match (and may not even decode); the answer is the same as for a wrong one.
  if (parts[2]!.length !== HS256_SIGNATURE_LENGTH) return fail('signature');

  const known = verified.get(token);
  if (known) {
    // the same text, signature included, verified before with this app's key: only the clock is checked again (as
    // jose checks it), so the cache never extends a token's life; an expired one is verified again (and refused)
    const at = Math.floor(now);
    if (known.app === app && known.exp > at - SESSION_TOKEN_LEEWAY_SECONDS && known.nbf <= at + SESSION_TOKEN_LEEWAY_SECONDS) {
      return known.result;
    }
    verified.delete(token);
  }

  let claims: Record<string, unknown>;
  try {
    ({ payload: claims } = await jwtVerify(token, await verifyKeyOf(app), {
      algorithms: ['HS256'],
      audience: app.apiKey,
      requiredClaims: ['exp', 'nbf'],
      clockTolerance: SESSION_TOKEN_LEEWAY_SECONDS,
      currentDate: new Date(now * 1000),
    }));
  } catch (error) {
    return fail(failureOf(error));
  }

  // Claims are trusted only from here on.
  const issued = typeof claims.iat === 'number' && Number.isFinite(claims.iat) ? Math.min(claims.iat, now) : now;
  if ((claims.exp as number) - issued > MAX_SESSION_TOKEN_LIFETIME_SECONDS) return fail('lifetime');
  const issShop = shopOf(claims.iss, ISS_RE);
  const destShop = shopOf(claims.dest, DEST_RE);
  if (!issShop || !destShop || issShop !== destShop) return fail('shop');

  const result: SessionTokenResult = {
    ok: true,
    tenant: { appHandle: app.handle, shop: destShop, app },
    claims: claims as SessionTokenClaims,
  };
  remember(token, app, result);
  return result;
}

/**
 * Tokens verified in this process, by their exact text (signature included), at most VERIFIED_TOKENS_CACHED (the
 * oldest is dropped first). The embedded admin sends the same token with every request for up to its minute of life,
 * and checking its HMAC again each time was the largest single cost of an /api request (bench:frontdoor). A hit still
 * checks `exp`/`nbf` against the clock and that `aud` still names the same app object (a reload that changed the
 * app's secret makes a new one, so its tokens are verified again); only successes are kept.
 */
export const VERIFIED_TOKENS_CACHED = 10_000;
const verified = new Map<string, { app: ResolvedApp; exp: number; nbf: number; result: SessionTokenResult }>();

function remember(token: string, app: ResolvedApp, result: SessionTokenResult & { ok: true }) {
  if (verified.size >= VERIFIED_TOKENS_CACHED) verified.delete(verified.keys().next().value!);
  verified.set(token, { app, exp: result.claims.exp, nbf: result.claims.nbf, result });
}

/** The app's secret as a WebCrypto HMAC key, imported once per app object (jose would import raw bytes on every call). */
const verifyKeys = new WeakMap<ResolvedApp, Promise<CryptoKey>>();

function verifyKeyOf(app: ResolvedApp): Promise<CryptoKey> {
  let key = verifyKeys.get(app);
  if (!key) {
    key = crypto.subtle.importKey('raw', encoder.encode(app.apiSecret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
    verifyKeys.set(app, key);
  }
  return key;
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
