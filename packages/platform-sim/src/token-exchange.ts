/**
 * `POST /admin/oauth/access_token` with the token-exchange grant: a session token (ID token) of an embedded app in,
 * an offline access token out. Refusals are 400 `{ error, error_description }` like the platform's.
 */
import type { Context } from 'hono';
import { verifySessionToken } from './jwt.ts';
import { SHOP_DOMAIN_RE, type SimState } from './state.ts';

export const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const SUBJECT_ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
export const OFFLINE_TOKEN = 'urn:shopify:params:oauth:token-type:offline-access-token';
export const ONLINE_TOKEN = 'urn:shopify:params:oauth:token-type:online-access-token';

const INVALID_SUBJECT = 'Token exchange cannot be performed due to an invalid subject token.';

async function readParams(c: Context): Promise<Record<string, string>> {
  const type = c.req.header('content-type') ?? '';
  const text = await c.req.text();
  if (type.includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(text));
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
    return Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
  } catch {
    return Object.fromEntries(new URLSearchParams(text));
  }
}

/** The shop named by the Host header when it is a shop domain (requests sent to `https://<shop>`). */
function hostShop(c: Context): string | undefined {
  const host = (c.req.header('host') ?? '').replace(/:\d+$/, '').toLowerCase();
  return SHOP_DOMAIN_RE.test(host) ? host : undefined;
}

export async function tokenExchange(c: Context, state: SimState): Promise<Response> {
  const record = { at: new Date().toISOString(), apiKey: null as string | null, shop: null as string | null };
  const refuse = (error: string, description: string, status: 400 | 401 = 400) => {
    state.tokenExchanges.push({ ...record, status, error });
    return c.json({ error, error_description: description }, status);
  };
  await state.passHold('token');
  const fault = state.takeFault('token');
  if (fault) {
    state.tokenExchanges.push({ ...record, status: fault.status, error: 'fault' });
    return new Response(fault.body === undefined ? null : JSON.stringify(fault.body), {
      status: fault.status,
      headers: { 'content-type': 'application/json', ...fault.headers },
    });
  }
  const params = await readParams(c);
  const app = params.client_id ? state.apps.get(params.client_id) : undefined;
  if (!app || params.client_secret !== app.apiSecret)
    return refuse('invalid_client', 'Client authentication failed: unknown client_id or wrong client_secret.', 401);
  record.apiKey = app.apiKey;
  if (params.grant_type !== GRANT_TOKEN_EXCHANGE) return refuse('unsupported_grant_type', `grant_type must be ${GRANT_TOKEN_EXCHANGE}.`);
  if (params.subject_token_type !== SUBJECT_ID_TOKEN)
    return refuse('invalid_subject_token_type', `subject_token_type must be ${SUBJECT_ID_TOKEN}.`);
  const requested = params.requested_token_type ?? OFFLINE_TOKEN;
  if (requested !== OFFLINE_TOKEN) {
    return refuse(
      'invalid_request',
      requested === ONLINE_TOKEN ? 'The simulator issues offline access tokens only.' : 'Unknown requested_token_type.',
    );
  }
  if (!params.subject_token) return refuse('invalid_subject_token', INVALID_SUBJECT);
  const verified = await verifySessionToken(params.subject_token, app);
  if (!verified.ok) return refuse('invalid_subject_token', INVALID_SUBJECT);
  record.shop = verified.shop;
  const host = hostShop(c);
  if ((host && host !== verified.shop) || !state.shops.has(verified.shop)) return refuse('invalid_subject_token', INVALID_SUBJECT);
  const issued = state.install(app.apiKey, verified.shop);
  state.tokenExchanges.push({ ...record, status: 200 });
  return c.json({ access_token: issued.token, scope: issued.scopes });
}
