/**
 * Providers at run time: the read representation, the save pipeline (the spec's seven steps, in order), health
 * checks and connectors. Configs are encrypted as a whole, bound to (app, shop, provider).
 */
import type { ProviderDefinition, ProvidersMap } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import { BadRequestError, HttpError, NotFoundError } from '../http/errors.ts';
import type { Secrets } from '../secrets/types.ts';
import {
  type FieldError,
  TRANSFORMER_MESSAGE,
  checkRequired,
  coerce,
  dashboardStatus,
  fieldMessage,
  fieldMetadata,
  hasValue,
  isConfigured,
  publicConfig,
  scrub,
  secretValues,
  typeProblem,
} from './fields.ts';
import { type ProviderRow, getProviderRow, listProviderRows, recordCheck, upsertProviderConfig } from './store.ts';

/** A checker that takes longer than this is aborted and counts as a failed check. */
export const CHECKER_TIMEOUT_MS = 10_000;

export interface ProvidersDeps {
  db: Database;
  secrets: Secrets;
  providers: ProvidersMap;
  checkerTimeoutMs?: number;
}

export const ownerOf = (appHandle: string, shop: string, provider: string) => `provider:${appHandle}:${shop}:${provider}`;

export class ProviderNotConfiguredError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderNotConfiguredError';
  }
}

function definitionOf(deps: ProvidersDeps, name: string): ProviderDefinition {
  if (!Object.hasOwn(deps.providers, name)) throw new NotFoundError(`Provider "${name}" is not defined`);
  return deps.providers[name];
}

function decrypt(deps: ProvidersDeps, appHandle: string, shop: string, row: ProviderRow | undefined): Record<string, unknown> | undefined {
  return row ? deps.secrets.decrypt<Record<string, unknown>>(row.config, ownerOf(appHandle, shop, row.provider)) : undefined;
}

export async function loadSavedConfig(deps: ProvidersDeps, appHandle: string, shop: string, name: string) {
  return decrypt(deps, appHandle, shop, await getProviderRow(deps.db, appHandle, shop, name));
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
    } catch {
      configError = 'The saved config cannot be decrypted (was ENCRYPTION_KEY changed without keeping the old key in ENCRYPTION_KEY_PREVIOUS?). Save it again.';
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

function fail(errors: FieldError[]): never {
  throw new BadRequestError(errors[0].message, { field: errors[0].field, extra: { errors } });
}

/** PUT /api/providers/:name — the spec's save procedure, in order. Never runs the checker. */
export async function saveProviderConfig(deps: ProvidersDeps, appHandle: string, shop: string, name: string, body: unknown) {
  const def = definitionOf(deps, name);
  const fields = def.ui.fields;
  const submitted = (body as { config?: unknown } | null)?.config;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || typeof submitted !== 'object' || submitted === null || Array.isArray(submitted)) {
    throw new BadRequestError('Body must be a JSON object: { "config": { … } }', { field: 'config' });
  }
  const errors: FieldError[] = [];
  for (const key of Object.keys(submitted)) if (!Object.hasOwn(fields, key)) errors.push({ field: key, message: fieldMessage(key, 'is not a field of this provider') });
  if (errors.length) fail(errors);

  // 1. keep an existing password when the submitted value is missing or empty
  const existing = await loadSavedConfig(deps, appHandle, shop, name);
  const data: Record<string, unknown> = { ...(submitted as Record<string, unknown>) };
  for (const [field, spec] of Object.entries(fields)) {
    if (spec.type === 'password' && !hasValue(data[field]) && existing && hasValue(existing[field])) data[field] = existing[field];
  }
  // 2. coerce numbers and checkboxes (then the value types)
  const coerced = coerce(fields, data, errors);
  for (const [field, spec] of Object.entries(fields)) {
    const problem = errors.some((e) => e.field === field) ? undefined : typeProblem(spec, coerced[field]);
    if (problem) errors.push({ field, message: fieldMessage(field, problem) });
  }
  // 3. required fields
  checkRequired(fields, coerced, errors);
  if (errors.length) fail(errors);
  // 4-5. the transformer must give an object
  let result: Record<string, unknown> = coerced;
  if (def.transformer) {
    const transformed = await def.transformer({ data: coerced });
    if (typeof transformed !== 'object' || transformed === null || Array.isArray(transformed)) {
      throw new BadRequestError(TRANSFORMER_MESSAGE);
    }
    result = { ...(transformed as Record<string, unknown>) };
  }
  // 6. required fields again, then each field's validator; its output is what is saved
  checkRequired(fields, result, errors);
  for (const [field, spec] of Object.entries(fields)) {
    if (!spec.validate || errors.some((e) => e.field === field)) continue;
    if (!hasValue(result[field]) && spec.required === false) continue;
    const parsed = await spec.validate.safeParseAsync(result[field]);
    if (parsed.success) result[field] = parsed.data;
    else errors.push({ field, message: fieldMessage(field, parsed.error.issues[0]?.message ?? 'is invalid') });
  }
  if (errors.length) fail(errors);
  for (const key of Object.keys(result)) if (result[key] === undefined) delete result[key];
  // 7. encrypt and upsert for the current app and shop
  await upsertProviderConfig(deps.db, appHandle, shop, name, deps.secrets.encrypt(result, ownerOf(appHandle, shop, name)));
  const [view] = (await listProviders(deps, appHandle, shop)).filter((p) => p.name === name);
  return { ok: true as const, provider: view };
}

/** Thrown to answer the check endpoint's 500 `{ ok: false, error }`. */
export class CheckFailedError extends HttpError {
  constructor(message: string) {
    super(500, message, { extra: { ok: false } });
  }
}

/** POST /api/providers/:name/check. */
export async function checkProvider(deps: ProvidersDeps, appHandle: string, shop: string, name: string): Promise<{ ok: boolean; lastCheckedAt: string | null }> {
  const def = definitionOf(deps, name);
  if (typeof def.checker !== 'function') throw new BadRequestError(`Provider "${name}" has no checker`, { extra: { ok: false } });
  const saved = await loadSavedConfig(deps, appHandle, shop, name);
  const timeoutMs = deps.checkerTimeoutMs ?? CHECKER_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`Checker timed out after ${timeoutMs} ms`)), timeoutMs);
  let ok: boolean;
  try {
    const result = await Promise.race([
      Promise.resolve().then(() => def.checker!({ config: (saved ?? {}) as any, signal: controller.signal })),
      new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true })),
    ]);
    ok = result === true;
  } catch (error) {
    const recorded = await recordCheck(deps.db, appHandle, shop, name, false);
    const message = scrub(error instanceof Error ? error.message : String(error), secretValues(def.ui.fields, saved));
    void recorded;
    throw new CheckFailedError(message || 'Checker failed');
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
export function createConnectors(deps: ProvidersDeps, appHandle: string, shop: string | null): Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>> {
  const out: Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>> = {};
  for (const [name, def] of Object.entries(deps.providers)) {
    const methods: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
    for (const [method, fn] of Object.entries(def.methods ?? {}) as Array<[string, (config: unknown, ...args: unknown[]) => unknown]>) {
      methods[method] = async (...args: unknown[]) => {
        if (!shop) throw new ProviderNotConfiguredError(`Provider "${name}" cannot be used without a shop: provider configs are saved per shop (this is a global run)`);
        const saved = await loadSavedConfig(deps, appHandle, shop, name);
        if (!saved || !isConfigured(def.ui.fields, saved)) {
          throw new ProviderNotConfiguredError(`Provider "${name}" is not configured for ${shop}: save its settings in the admin (Providers page) first`);
        }
        return fn(saved, ...args);
      };
    }
    out[name] = Object.freeze(methods);
  }
  return Object.freeze(out);
}
