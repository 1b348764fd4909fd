/**
 * Providers at run time: the read representation, health checks and connectors (the save pipeline is in save.ts).
 * Configs are encrypted as a whole, bound to (app, shop, provider).
 */
import type { FieldsMap, ProviderConnectors, ProviderDefinition, ProvidersMap } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import { InvalidInputError, NotFoundError, UpstreamError } from '../errors.ts';
import type { SecretColumn } from '../secrets/store.ts';
import type { Secrets } from '../secrets/types.ts';
import { SecretError } from '../secrets/types.ts';
import { notConfigured, undecryptable, withoutShop } from './errors.ts';
import { dashboardStatus, fieldMetadata, hasValue, isConfigured, isRequired, publicConfig } from './fields.ts';
import { scrub, scrubError, secretValues } from './scrub.ts';
import { type ProviderRow, getProviderRow, listProviderRows, recordCheck } from './store.ts';

/** A checker that takes longer than this is aborted and counts as a failed check. */
export const CHECKER_TIMEOUT_MS = 10_000;

export interface ProvidersDeps {
  db: Database;
  secrets: Secrets;
  providers: ProvidersMap;
  checkerTimeoutMs?: number;
}

export const ownerOf = (appHandle: string, shop: string, provider: string) => `provider:${appHandle}:${shop}:${provider}`;

/** Where saved configs are stored, for the start-up encryption of plaintext ones (secrets/plaintext.ts). */
export const PROVIDER_CONFIG_SECRETS: SecretColumn = {
  table: 'provider_configs',
  column: 'config',
  key: ['app_handle', 'shop', 'provider'],
  owner: (key) => ownerOf(key.app_handle!, key.shop!, key.provider!),
};

export { ProviderNotConfiguredError } from './errors.ts';

/** Why a stored config is unusable; never includes a value or a key. */
export const UNDECRYPTABLE_MESSAGE =
  'The saved config cannot be decrypted (was ENCRYPTION_KEY changed without keeping the old key in ENCRYPTION_KEY_PREVIOUS?). Save it again.';

export function definitionOf(deps: ProvidersDeps, name: string): ProviderDefinition {
  if (!Object.hasOwn(deps.providers, name)) throw new NotFoundError(`Provider "${name}" is not defined`);
  return deps.providers[name];
}

function decrypt(deps: ProvidersDeps, appHandle: string, shop: string, row: ProviderRow | undefined): Record<string, unknown> | undefined {
  return row ? deps.secrets.decrypt<Record<string, unknown>>(row.config, ownerOf(appHandle, shop, row.provider)) : undefined;
}

export async function loadSavedConfig(deps: ProvidersDeps, appHandle: string, shop: string, name: string) {
  return decrypt(deps, appHandle, shop, await getProviderRow(deps.db, appHandle, shop, name));
}

/** The saved config, or `undefined` when there is none or it cannot be decrypted (saving then starts afresh). */
export async function loadDecryptable(deps: ProvidersDeps, appHandle: string, shop: string, name: string) {
  try {
    return await loadSavedConfig(deps, appHandle, shop, name);
  } catch (error) {
    if (error instanceof SecretError) return undefined;
    throw error;
  }
}

/** GET /api/providers: definitions, public config, field metadata, last check, configured and the dashboard status. */
export async function listProviders(deps: ProvidersDeps, appHandle: string, shop: string) {
  const rows = new Map((await listProviderRows(deps.db, appHandle, shop)).map((r) => [r.provider, r]));
  return Object.entries(deps.providers).map(([name, def]) => {
    const row = rows.get(name);
    let saved: Record<string, unknown> | undefined;
    let configError: string | null = null;
    try {
      saved = decrypt(deps, appHandle, shop, row);
    } catch (error) {
      if (!(error instanceof SecretError)) throw error;
      configError = UNDECRYPTABLE_MESSAGE;
    }
    const configured = isConfigured(def.ui.fields, saved);
    return {
      name,
      description: def.description ?? null,
      fields: fieldMetadata(def.ui.fields, saved),
      config: publicConfig(def.ui.fields, saved),
      hasChecker: typeof def.checker === 'function',
      methods: Object.keys(def.methods ?? {}),
      lastCheckedAt: row?.lastCheckedAt ?? null,
      lastCheckOk: row?.lastCheckOk ?? null,
      configured,
      status: dashboardStatus(configured, row?.lastCheckOk ?? null),
      configError,
    };
  });
}

/** Thrown to answer the check endpoint's 500 `{ ok: false, error }`. */
export class CheckFailedError extends UpstreamError {
  constructor(message: string) {
    super(message, { ok: false });
  }
}

/**
 * Why a checker failed, in words a merchant can act on: the error's message, followed by its causes' when they add
 * something. `fetch` rejects with a bare "fetch failed" whose cause says what happened (`getaddrinfo ENOTFOUND crm.invalid`,
 * `connect ECONNREFUSED 127.0.0.1:9`, a TLS error): that cause is what the page shows.
 */
export function checkFailureMessage(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    let texts: string[];
    if (current instanceof AggregateError && !current.message) {
      // one error per address tried (`localhost` is ::1 and 127.0.0.1), and no message of its own
      texts = current.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e)));
    } else if (current instanceof Error) {
      texts = [current.message || current.name];
    } else if (typeof current === 'object' && 'message' in current) {
      texts = [String((current as { message: unknown }).message)];
    } else {
      texts = [String(current)];
    }
    for (const text of texts) if (text && !parts.some((p) => p.includes(text))) parts.push(text);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ');
}

/** POST /api/providers/:name/check. */
export async function checkProvider(
  deps: ProvidersDeps,
  appHandle: string,
  shop: string,
  name: string,
): Promise<{ ok: boolean; lastCheckedAt: string | null }> {
  const def = definitionOf(deps, name);
  if (typeof def.checker !== 'function') throw new InvalidInputError(`Provider "${name}" has no checker`, { details: { ok: false } });
  let saved: Record<string, unknown> | undefined;
  try {
    saved = await loadSavedConfig(deps, appHandle, shop, name);
  } catch (error) {
    if (error instanceof SecretError) throw new CheckFailedError(UNDECRYPTABLE_MESSAGE); // the checker is not run, nothing recorded
    throw error;
  }
  // The spec runs the checker whether or not settings are saved (the admin's button waits for a save). When a checker
  // fails on settings that are not saved or not complete, its message says so: "Failed to parse URL from undefined/ping"
  // alone does not tell the merchant what to do.
  let unsavedHint = '';
  if (!saved) unsavedHint = ` (provider "${name}" has no saved settings for this shop: save them, then check again)`;
  else if (!isConfigured(def.ui.fields, saved)) {
    const missing = Object.entries(def.ui.fields as FieldsMap)
      .filter(([field, spec]) => isRequired(spec) && !hasValue(saved[field]))
      .map(([field]) => field);
    unsavedHint = ` (provider "${name}" is missing saved values: ${missing.join(', ')}; save them, then check again)`;
  }
  const timeoutMs = deps.checkerTimeoutMs ?? CHECKER_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`Checker timed out after ${timeoutMs} ms`)), timeoutMs);
  let ok: boolean;
  try {
    const result = await Promise.race([
      Promise.resolve().then(() => def.checker!({ config: (saved ?? {}) as any, signal: controller.signal })),
      new Promise<never>((_, reject) =>
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }),
      ),
    ]);
    ok = result === true;
  } catch (error) {
    await recordCheck(deps.db, appHandle, shop, name, false);
    const message = scrub(checkFailureMessage(error), secretValues(def.ui.fields, saved));
    throw new CheckFailedError(`${message || 'Checker failed'}${unsavedHint}`);
  } finally {
    clearTimeout(timer);
  }
  const recorded = await recordCheck(deps.db, appHandle, shop, name, ok);
  return { ok, lastCheckedAt: recorded?.lastCheckedAt ?? null };
}

/**
 * Connectors: `connectors(app, shop).<provider>.<method>(...args)` calls `methods[method](savedConfig, ...args)`. The saved
 * config is loaded at each call and never handed to the caller; the checker is never run implicitly.
 */
export function createConnectors(deps: ProvidersDeps, appHandle: string, shop: string | null): ProviderConnectors<ProvidersMap> {
  const out: Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>> = {};
  for (const [name, def] of Object.entries(deps.providers)) {
    const methods: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
    for (const [method, fn] of Object.entries(def.methods ?? {}) as Array<[string, (config: unknown, ...args: unknown[]) => unknown]>) {
      methods[method] = async (...args: unknown[]) => {
        // ProviderNotConfiguredError is not retryable: a run fails at once, with a message naming provider, shop and app
        if (!shop) throw withoutShop(name, appHandle);
        let saved: Record<string, unknown> | undefined;
        try {
          saved = await loadSavedConfig(deps, appHandle, shop, name);
        } catch (error) {
          if (!(error instanceof SecretError)) throw error;
          throw undecryptable(name, appHandle, shop);
        }
        if (!saved || !isConfigured(def.ui.fields, saved)) {
          // a saved config that misses a required value (a field added to the definition since) names the fields
          const missing = saved
            ? Object.entries(def.ui.fields as FieldsMap)
                .filter(([field, spec]) => isRequired(spec) && !hasValue(saved[field]))
                .map(([field]) => field)
            : [];
          throw notConfigured(name, appHandle, shop, missing);
        }
        try {
          return await fn(saved, ...args);
        } catch (error) {
          throw scrubError(error, secretValues(def.ui.fields, saved)); // its message and stack may quote a secret
        }
      };
    }
    out[name] = Object.freeze(methods);
  }
  // built from the definitions at run time: the one place the mapped type is asserted
  return Object.freeze(out) as ProviderConnectors<ProvidersMap>;
}
