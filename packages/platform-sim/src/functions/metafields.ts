/**
 * Metafields on function instances, validated like the platform: `MetafieldInput` in create/update mutations and
 * `metafieldsSet`. The app-reserved namespace `$app` (and `$app:<suffix>`) stands for `app--<app id>` (and
 * `app--<app id>--<suffix>`), as on the platform: another app cannot read or write it.
 */
import { createHash } from 'node:crypto';

export interface MetafieldRecord {
  id: number;
  gid: string;
  /** The resolved namespace (`app--<id>` for `$app`). */
  namespace: string;
  key: string;
  type: string;
  value: string;
  createdAt: string;
  updatedAt: string;
  /** The owner's GID. */
  ownerId: string;
}

export interface SimUserError {
  field: string[] | null;
  message: string;
  code: string;
  elementIndex?: number;
}

export interface MetafieldInput {
  id?: string;
  namespace?: string;
  key?: string;
  type?: string;
  value?: string;
  description?: string;
}

/** The metafield types the simulator stores, with their value check. */
const VALUE_CHECKS: Record<string, (v: string) => string | undefined> = {
  json: (v) => {
    try {
      JSON.parse(v);
      return undefined;
    } catch {
      return 'Value is invalid JSON.';
    }
  },
  single_line_text_field: (v) => (/[\r\n]/.test(v) ? 'Value must be a single line of text.' : undefined),
  multi_line_text_field: () => undefined,
  number_integer: (v) => (/^-?\d+$/.test(v.trim()) ? undefined : 'Value must be an integer.'),
  number_decimal: (v) => (v.trim() !== '' && Number.isFinite(Number(v)) ? undefined : 'Value must be a decimal.'),
  boolean: (v) => (v === 'true' || v === 'false' ? undefined : 'Value must be true or false.'),
  date_time: (v) => (Number.isNaN(Date.parse(v)) ? 'Value must be in ISO 8601 date and time format.' : undefined),
};
export const METAFIELD_TYPES = Object.keys(VALUE_CHECKS);

const KEY_RE = /^[a-zA-Z0-9_-]+$/;
const NAMESPACE_RE = /^[a-zA-Z0-9_:-]+$/;

/** `$app` → `app--<id>`, `$app:x` → `app--<id>--x`; other namespaces unchanged. Omitted means `$app`. */
export function resolveNamespace(namespace: string | null | undefined, appId: number): string {
  const ns = namespace ?? '$app';
  if (ns === '$app') return `app--${appId}`;
  if (ns.startsWith('$app:')) return `app--${appId}--${ns.slice(5)}`;
  return ns;
}

/** Namespaces reserved by another app are neither readable nor writable. */
export function isForeignAppNamespace(resolved: string, appId: number): boolean {
  return /^app--\d+/.test(resolved) && !resolved.startsWith(`app--${appId}`);
}

export function compareDigest(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/**
 * Checks metafield inputs; returns the errors (fields under `prefix`, `code` mapped by `codeOf`) or the resolved
 * entries to apply. `existing` finds a stored metafield by resolved namespace and key (type may then be omitted).
 */
export function checkMetafieldInputs(
  inputs: unknown,
  appId: number,
  prefix: string[],
  existing: (namespace: string, key: string) => MetafieldRecord | undefined,
  codeOf: (code: string) => string = (c) => c,
): { errors: SimUserError[]; entries: Array<{ namespace: string; key: string; type: string; value: string }> } {
  const errors: SimUserError[] = [];
  const entries: Array<{ namespace: string; key: string; type: string; value: string }> = [];
  if (inputs === undefined || inputs === null) return { errors, entries };
  (inputs as MetafieldInput[]).forEach((input, i) => {
    const at = (field: string) => [...prefix, String(i), field];
    const fail = (field: string, code: string, message: string) => errors.push({ field: at(field), message, code: codeOf(code) });
    const namespace = resolveNamespace(input.namespace, appId);
    if (input.namespace !== undefined && input.namespace !== null) {
      if (input.namespace.length < 3) return fail('namespace', 'TOO_SHORT', 'Namespace is too short (minimum is 3 characters)');
      if (input.namespace.length > 255) return fail('namespace', 'TOO_LONG', 'Namespace is too long (maximum is 255 characters)');
      if (!NAMESPACE_RE.test(input.namespace.replace(/^\$app/, 'app')))
        return fail('namespace', 'INVALID', 'Namespace contains invalid characters');
    }
    if (isForeignAppNamespace(namespace, appId))
      return fail(
        'namespace',
        'APP_NOT_AUTHORIZED',
        'Access to this namespace and key on Metafields for this resource type is not allowed.',
      );
    const key = input.key ?? '';
    if (key === '') return fail('key', 'BLANK', "Key can't be blank");
    if (key.length < 2) return fail('key', 'TOO_SHORT', 'Key is too short (minimum is 2 characters)');
    if (key.length > 64) return fail('key', 'TOO_LONG', 'Key is too long (maximum is 64 characters)');
    if (!KEY_RE.test(key)) return fail('key', 'INVALID', 'Key contains one or more invalid characters.');
    const stored = existing(namespace, key);
    const type = input.type ?? stored?.type;
    if (!type) return fail('type', 'BLANK', "Type can't be blank");
    const check = VALUE_CHECKS[type];
    if (!check) return fail('type', 'INVALID_TYPE', `Type must be one of the following: ${METAFIELD_TYPES.join(', ')}.`);
    if (stored && input.type && stored.type !== input.type)
      return fail('type', 'INVALID_TYPE', `Type '${input.type}' does not match the existing type '${stored.type}'.`);
    if (typeof input.value !== 'string' || input.value === '') return fail('value', 'BLANK', "Value can't be blank.");
    const problem = check(input.value);
    if (problem) return fail('value', 'INVALID_VALUE', problem);
    entries.push({ namespace, key, type, value: input.value });
  });
  return { errors, entries };
}
