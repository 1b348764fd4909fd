/** Errors of provider connectors (flows, routes and custom pages call them). */

export type ProviderNotConfiguredReason = 'not-configured' | 'undecryptable' | 'no-shop';

/**
 * A connector was called for a tenant that has no usable saved config of the provider: nothing saved, a required
 * field without a value, a saved config that cannot be decrypted, or a global run (no shop). Waiting does not fix it,
 * so it is not retryable: a run that throws it fails at once, whatever its retry policy (docs/flows.md, Retries).
 */
export class ProviderNotConfiguredError extends Error {
  readonly retryable = false;
  constructor(
    message: string,
    readonly provider: string,
    readonly appHandle: string,
    readonly shop: string | null,
    readonly reason: ProviderNotConfiguredReason,
  ) {
    super(message);
    this.name = 'ProviderNotConfiguredError';
  }
}

/** Where a merchant (or a script with a session token of the shop) saves the provider's settings. */
const howToConfigure = (provider: string, again = '') =>
  `save its settings${again} in the admin (Providers page) or with PUT /api/providers/${provider}`;

export function notConfigured(provider: string, appHandle: string, shop: string, missing: readonly string[]): ProviderNotConfiguredError {
  const detail =
    missing.length === 0 ? '' : ` (required field${missing.length > 1 ? 's' : ''} without a saved value: ${missing.join(', ')})`;
  return new ProviderNotConfiguredError(
    `Provider "${provider}" is not configured for shop ${shop} (app ${appHandle})${detail}: ${howToConfigure(provider)}`,
    provider,
    appHandle,
    shop,
    'not-configured',
  );
}

export function undecryptable(provider: string, appHandle: string, shop: string): ProviderNotConfiguredError {
  return new ProviderNotConfiguredError(
    `Provider "${provider}" is not usable for shop ${shop} (app ${appHandle}): its saved config cannot be decrypted (was ENCRYPTION_KEY changed without keeping the old key in ENCRYPTION_KEY_PREVIOUS?); ${howToConfigure(provider, ' again')}`,
    provider,
    appHandle,
    shop,
    'undecryptable',
  );
}

export function withoutShop(provider: string, appHandle: string): ProviderNotConfiguredError {
  return new ProviderNotConfiguredError(
    `Provider "${provider}" cannot be used without a shop (app ${appHandle}, global run): provider settings are saved per shop; dispatch the run for a shop, or use ctx.dispatchFlow({ shop }) from this run`,
    provider,
    appHandle,
    null,
    'no-shop',
  );
}
