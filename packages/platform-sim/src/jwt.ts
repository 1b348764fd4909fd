/** Session tokens (JWT, HS256) as the platform issues them, on `jose`: signing for tests and the checks token exchange makes. */
import { createHmac, randomUUID } from 'node:crypto';
import { SignJWT, errors, jwtVerify } from 'jose';
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

const encoder = new TextEncoder();

/** jose's errors → the reasons the simulator records (token exchange answers invalid_subject_token for all of them). */
function reasonOf(error: unknown): string {
  if (error instanceof errors.JOSEAlgNotAllowed) return 'algorithm';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'signature';
  if (error instanceof errors.JWTExpired) return 'expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return 'audience';
    if (error.claim === 'nbf' && error.reason === 'check_failed') return 'not_yet_valid';
  }
  return 'malformed';
}

/** Checks signature (HS256 with `secret`), `aud`, `exp`/`nbf` and that `iss` and `dest` name the same shop. */
export async function verifySessionToken(
  token: string,
  expected: { apiKey: string; apiSecret: string },
  now = Date.now() / 1000,
): Promise<VerifyResult> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, encoder.encode(expected.apiSecret), {
      algorithms: ['HS256'],
      audience: expected.apiKey,
      requiredClaims: ['exp', 'nbf'],
      clockTolerance: LEEWAY_SECONDS,
      currentDate: new Date(now * 1000),
    }));
  } catch (error) {
    return { ok: false, reason: reasonOf(error) };
  }
  // jose accepts an array aud that contains ours; the platform's is a single string
  if (payload.aud !== expected.apiKey) return { ok: false, reason: 'audience' };
  const dest = typeof payload.dest === 'string' ? /^https:\/\/([^/]+)$/.exec(payload.dest)?.[1] : undefined;
  const iss = typeof payload.iss === 'string' ? /^https:\/\/([^/]+)\/admin$/.exec(payload.iss)?.[1] : undefined;
  if (!dest || dest !== iss || !SHOP_DOMAIN_RE.test(dest)) return { ok: false, reason: 'shop' };
  return { ok: true, claims: payload as unknown as SessionClaims, shop: dest };
}

/** Mints a session token like the platform's admin does for an embedded app (one minute by default). */
export async function signSessionToken(options: {
  apiKey: string;
  apiSecret: string;
  shop: string;
  ttlSeconds?: number;
  now?: number;
  sub?: string;
}): Promise<string> {
  const now = Math.floor(options.now ?? Date.now() / 1000);
  return new SignJWT({ dest: `https://${options.shop}`, sid: randomUUID() })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(`https://${options.shop}/admin`)
    .setAudience(options.apiKey)
    .setExpirationTime(now + (options.ttlSeconds ?? 60))
    .setNotBefore(now)
    .setIssuedAt(now)
    .setJti(randomUUID())
    .setSubject(options.sub ?? '1')
    .sign(encoder.encode(options.apiSecret));
}

/** The webhook signature: base64 HMAC-SHA256 of the raw body bytes with the app's secret. */
export function webhookHmac(body: string | Uint8Array, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('base64');
}
