/** Field specs at run time: coercion, required checks, validators, and the public (password-free) view. */
import type { FieldSpec, FieldsMap, ProvidersMap } from '../app/types.ts';

export interface FieldError {
  field: string;
  message: string;
}

export const requiredMessage = (name: string) => `Field "${name}" is required`;
export const fieldMessage = (name: string, reason: string) => `Field "${name}": ${reason}`;
export const TRANSFORMER_MESSAGE = 'Provider transformer must return an object';

export const isRequired = (spec: FieldSpec) => spec.required !== false;

/** A value counts as present unless it is undefined, null or an empty string. */
export function hasValue(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

/**
 * Step 2: numbers (a non-empty string becomes a number; an empty one counts as missing) and checkboxes (string `true` →
 * true, any other string → false). A string that is not a number is reported in `errors` when given, otherwise left
 * as is for a later type check (providers check types after their transformer).
 */
export function coerce(fields: FieldsMap, data: Record<string, unknown>, errors?: FieldError[]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...data };
  for (const [name, spec] of Object.entries(fields)) {
    const value = out[name];
    if (spec.type === 'number' && typeof value === 'string') {
      if (value.trim() === '') out[name] = undefined;
      else {
        const n = Number(value);
        if (Number.isFinite(n)) out[name] = n;
        else errors?.push({ field: name, message: fieldMessage(name, 'must be a number') });
      }
    } else if (spec.type === 'checkbox' && typeof value === 'string') {
      out[name] = value === 'true';
    }
  }
  return out;
}

/** The type each saved value must have once coerced. */
export function typeProblem(spec: FieldSpec, value: unknown): string | undefined {
  if (!hasValue(value)) return undefined;
  switch (spec.type) {
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a number';
    case 'checkbox':
      return typeof value === 'boolean' ? undefined : 'must be a boolean';
    case 'select':
      if (typeof value !== 'string') return 'must be a string';
      return spec.options?.some((o) => o.value === value) ? undefined : `must be one of ${spec.options?.map((o) => o.value).join(', ')}`;
    default:
      return typeof value === 'string' ? undefined : 'must be a string';
  }
}

export function checkRequired(fields: FieldsMap, data: Record<string, unknown>, errors: FieldError[]) {
  for (const [name, spec] of Object.entries(fields)) {
    if (isRequired(spec) && !hasValue(data[name]) && !errors.some((e) => e.field === name)) {
      errors.push({ field: name, message: requiredMessage(name) });
    }
  }
}

/** True when every required field has a saved value. */
export function isConfigured(fields: FieldsMap, saved: Record<string, unknown> | undefined): boolean {
  if (!saved) return false;
  return Object.entries(fields).every(([name, spec]) => !isRequired(spec) || hasValue(saved[name]));
}

/** A secret field: its value is never shown back (`publicConfig`), scrubbed from messages, and needs a key at rest. */
export const isSecretField = (spec: FieldSpec) => spec.type === 'password';

/**
 * The secret fields of every provider of the app, as `provider.field`: without ENCRYPTION_KEY, `mercato start` and
 * `mercato worker` refuse to start when there is one (docs/secrets.md).
 */
export function secretFieldsOf(providers: ProvidersMap): string[] {
  return Object.entries(providers).flatMap(([name, def]) =>
    Object.entries((def.ui?.fields ?? {}) as FieldsMap)
      .filter(([, spec]) => isSecretField(spec))
      .map(([field]) => `${name}.${field}`),
  );
}

/** The saved values of declared non-password fields only: never a password, nor a key a transformer added. */
export function publicConfig(fields: FieldsMap, saved: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!saved) return out;
  for (const [name, spec] of Object.entries(fields)) {
    if (spec.type !== 'password' && Object.hasOwn(saved, name)) out[name] = saved[name];
  }
  return out;
}

export function fieldMetadata(fields: FieldsMap, saved: Record<string, unknown> | undefined) {
  return Object.entries(fields).map(([name, spec]) => ({
    name,
    type: spec.type,
    label: spec.label,
    required: isRequired(spec),
    ...(spec.description !== undefined ? { description: spec.description } : {}),
    ...(spec.placeholder !== undefined ? { placeholder: spec.placeholder } : {}),
    ...(spec.options !== undefined ? { options: spec.options.map((o) => ({ label: o.label, value: o.value })) } : {}),
    ...(spec.type === 'password' ? { hasValue: hasValue(saved?.[name]) } : {}),
  }));
}

/**
 * Runs a field validator: `safeParseAsync` when it has one (zod), otherwise `safeParse`. Returns the parsed value or the
 * reason (the first issue's message) it was refused.
 */
export async function runValidator(
  validate: unknown,
  value: unknown,
): Promise<{ ok: true; value: unknown } | { ok: false; reason: string }> {
  const v = validate as { safeParseAsync?: (x: unknown) => Promise<ParseResult>; safeParse?: (x: unknown) => ParseResult };
  let parsed: ParseResult;
  try {
    if (typeof v?.safeParseAsync === 'function') parsed = await v.safeParseAsync(value);
    else if (typeof v?.safeParse === 'function') parsed = await v.safeParse(value);
    else return { ok: false, reason: 'has a validator without safeParse or safeParseAsync' };
  } catch {
    return { ok: false, reason: 'could not be validated (its validator threw)' }; // its message may quote the value
  }
  if (parsed?.success === true) return { ok: true, value: parsed.data };
  const first = parsed?.error?.issues?.[0]?.message;
  return { ok: false, reason: typeof first === 'string' && first !== '' ? first : 'is invalid' };
}

interface ParseResult {
  success: boolean;
  data?: unknown;
  error?: { issues?: Array<{ message?: unknown }> };
}

export type DashboardStatus = 'Not configured' | 'Configured' | 'Connected' | 'Error';

export function dashboardStatus(configured: boolean, lastCheckOk: boolean | null): DashboardStatus {
  if (!configured) return 'Not configured';
  if (lastCheckOk === true) return 'Connected';
  if (lastCheckOk === false) return 'Error';
  return 'Configured';
}
