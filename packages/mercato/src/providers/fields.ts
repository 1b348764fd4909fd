/** Field specs at run time: coercion, required checks, validators, and the public (password-free) view. */
import type { FieldSpec, FieldsMap } from '../app/types.ts';

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

/** Step 2: numbers (a non-empty string becomes a number) and checkboxes (string `true` → true, any other string → false). */
export function coerce(fields: FieldsMap, data: Record<string, unknown>, errors: FieldError[]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...data };
  for (const [name, spec] of Object.entries(fields)) {
    const value = out[name];
    if (spec.type === 'number' && typeof value === 'string') {
      if (value.trim() === '') out[name] = undefined;
      else {
        const n = Number(value);
        if (Number.isFinite(n)) out[name] = n;
        else errors.push({ field: name, message: fieldMessage(name, 'must be a number') });
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

/** Saved config without password values. */
export function publicConfig(fields: FieldsMap, saved: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!saved) return out;
  for (const [name, value] of Object.entries(saved)) {
    if (fields[name]?.type === 'password') continue;
    out[name] = value;
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

/** Every password value of a config, to scrub them from error messages. */
export function secretValues(fields: FieldsMap, saved: Record<string, unknown> | undefined): string[] {
  if (!saved) return [];
  return Object.entries(fields)
    .filter(([name, spec]) => spec.type === 'password' && typeof saved[name] === 'string' && (saved[name] as string).length >= 4)
    .map(([name]) => saved[name] as string);
}

export function scrub(message: string, secrets: string[]): string {
  let out = message;
  for (const s of secrets) out = out.split(s).join('[redacted]');
  return out;
}

export type DashboardStatus = 'Not configured' | 'Configured' | 'Connected' | 'Error';

export function dashboardStatus(configured: boolean, lastCheckOk: boolean | null): DashboardStatus {
  if (!configured) return 'Not configured';
  if (lastCheckOk === true) return 'Connected';
  if (lastCheckOk === false) return 'Error';
  return 'Configured';
}
