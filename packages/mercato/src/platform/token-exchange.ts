/**
 * Token exchange: a shop's session token (an ID token) for an offline access token, at
 * `POST <platform>/admin/oauth/access_token` with the token-exchange grant.
 */
import type { ResolvedApp } from '../app/platform.ts';
import { tokenExchangeUrl } from './origin.ts';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
export const OFFLINE_ACCESS_TOKEN_TYPE = 'urn:shopify:params:oauth:token-type:offline-access-token';

/** The platform refused the exchange or could not be reached. Never carries a token. */
export class TokenExchangeError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
    /** The OAuth error code the platform answered (`invalid_subject_token`, ...). */
    readonly code: string | null,
  ) {
    super(message);
    this.name = 'TokenExchangeError';
  }
}

export interface ExchangedToken {
  accessToken: string;
  scopes: string | null;
}

export interface ExchangeOptions {
  app: Pick<ResolvedApp, 'apiKey' | 'apiSecret'>;
  shop: string;
  sessionToken: string;
  platformOrigin?: string;
  /** Default 10 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export async function exchangeSessionToken(options: ExchangeOptions): Promise<ExchangedToken> {
  const url = tokenExchangeUrl(options.shop, options.platformOrigin);
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 10_000);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        client_id: options.app.apiKey,
        client_secret: options.app.apiSecret,
        grant_type: TOKEN_EXCHANGE_GRANT,
        subject_token: options.sessionToken,
        subject_token_type: ID_TOKEN_TYPE,
        requested_token_type: OFFLINE_ACCESS_TOKEN_TYPE,
        // a non-expiring offline token, as the platform's own library asks by default (test/platform/official-libraries.test.ts)
        expiring: '0',
      }),
      signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
    throw new TokenExchangeError(`Token exchange with ${new URL(url).origin} failed: ${cause}`, null, null);
  }
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null) body = parsed as Record<string, unknown>;
  } catch {
    body = {};
  }
  if (!res.ok) {
    const code = typeof body.error === 'string' ? body.error : null;
    const description = typeof body.error_description === 'string' ? `: ${body.error_description}` : '';
    throw new TokenExchangeError(`Token exchange refused with HTTP ${res.status}${code ? ` ${code}` : ''}${description}`, res.status, code);
  }
  if (typeof body.access_token !== 'string' || body.access_token === '')
    throw new TokenExchangeError('Token exchange answered without an access_token', res.status, null);
  return { accessToken: body.access_token, scopes: typeof body.scope === 'string' ? body.scope : null };
}
