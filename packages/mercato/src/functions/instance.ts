/**
 * A live function instance as the API answers it, the configuration metafield, and the translation of the
 * platform's userErrors into the body's field paths.
 */
import type { FunctionType } from '../app/types.ts';
import type { OwnerValues, UserError } from './input.ts';

/** Where each instance keeps its configuration: an app-owned JSON metafield (the function's input query reads it). */
export const CONFIG_METAFIELD = Object.freeze({ namespace: '$app', key: 'function-configuration', type: 'json' });

/** The GraphQL selection of the configuration metafield on an instance. */
export const CONFIG_SELECTION = `config: metafield(namespace: "${CONFIG_METAFIELD.namespace}", key: "${CONFIG_METAFIELD.key}") { id value }`;

/** Instances listed at most (spec, Limits). */
export const MAX_INSTANCES = 50;

export interface FunctionInstance {
  /** The platform's GID (`gid://shopify/CartTransform/1001`); URL-encode it in paths. */
  id: string;
  handle: string;
  type: FunctionType;
  /** The platform's id of the function the instance runs. */
  functionId: string | null;
  /** The owner fields' current values, in the request body's shape (a PUT body can start from them). */
  owner: OwnerValues;
  /** Discounts: `ACTIVE`, `SCHEDULED` or `EXPIRED`; null for other types. */
  status: 'ACTIVE' | 'SCHEDULED' | 'EXPIRED' | null;
  /** The stored configuration; null when the instance has none (or it is not a JSON object, see configError). */
  config: Record<string, unknown> | null;
  configError: string | null;
  /** The GID of the configuration metafield, if any. */
  metafieldId: string | null;
}

export interface PlatformUserError {
  field?: string[] | null;
  message: string;
  code?: string | null;
}

/** The `metafields` input that stores a configuration. */
export function configMetafields(config: Record<string, unknown>) {
  return [{ ...CONFIG_METAFIELD, value: JSON.stringify(config) }];
}

/** Reads the configuration metafield selected as `config { id value }`. */
export function readConfig(
  mf: { id?: string; value?: string } | null | undefined,
): Pick<FunctionInstance, 'config' | 'configError' | 'metafieldId'> {
  if (!mf || typeof mf.value !== 'string') return { config: null, configError: null, metafieldId: null };
  try {
    const value: unknown = JSON.parse(mf.value);
    if (typeof value === 'object' && value !== null && !Array.isArray(value))
      return { config: value as Record<string, unknown>, configError: null, metafieldId: mf.id ?? null };
    return { config: null, configError: 'The configuration metafield does not hold a JSON object', metafieldId: mf.id ?? null };
  } catch {
    return { config: null, configError: 'The configuration metafield does not hold valid JSON', metafieldId: mf.id ?? null };
  }
}

const RENAMED: Record<string, string> = { enable: 'enabled' };
const NOT_FORM_FIELDS = new Set(['functionId', 'functionHandle', 'id']);

/**
 * The platform's field path in the body's terms: the input argument's name is dropped (`automaticAppDiscount.title`
 * → `title`), metafields are the configuration (`metafields.0.value` → `config`), the function identifiers and the
 * id are no form field (null), `enable` is `enabled`.
 */
export function bodyField(field: string[] | null | undefined, inputArgs: readonly string[]): string[] | null {
  if (!field || field.length === 0) return null;
  const rest = inputArgs.includes(field[0]!) ? field.slice(1) : [...field];
  if (rest.length === 0 || NOT_FORM_FIELDS.has(rest[0]!)) return null;
  if (rest[0] === 'metafields') return ['config'];
  return [RENAMED[rest[0]!] ?? rest[0]!, ...rest.slice(1)];
}

export function toUserErrors(errors: readonly PlatformUserError[], inputArgs: readonly string[]): UserError[] {
  return errors.map((e) => ({
    field: bodyField(e.field, inputArgs),
    message: e.message,
    code: e.code ?? null,
    platformField: e.field ?? null,
  }));
}
