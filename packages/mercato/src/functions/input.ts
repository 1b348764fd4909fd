/**
 * Request bodies of create and update: `config` (checked with the provider field-spec helpers: coercion, types,
 * required fields, validators) and the owner fields of the type (shapes only; the platform checks the rest and answers
 * userErrors). Problems are userErrors too, with `field` paths in the body's terms: `["config", "percent"]`,
 * `["title"]`, `["combinesWith", "orderDiscounts"]`.
 */
import type { DiscountMode, FunctionDefinition } from '../app/types.ts';
import {
  type FieldError,
  checkRequired,
  coerce,
  fieldMessage,
  hasValue,
  requiredMessage,
  runValidator,
  typeProblem,
} from '../providers/fields.ts';
import { type OwnerFieldSpec, ownerFieldsOf } from './kinds.ts';
import { FunctionInputError } from './errors.ts';
import { INSTANCE_NOT_AN_OBJECT, instanceBody } from './schemas.ts';
import type { UserError } from '../api/types.ts';

/** A refused field of a request (the API contract's, api/types.ts). */
export type { UserError } from '../api/types.ts';

export interface CombinesWith {
  orderDiscounts: boolean;
  productDiscounts: boolean;
  shippingDiscounts: boolean;
}

/** Owner field values in the body's shape; on an update only the given ones are set. */
export interface OwnerValues {
  mode?: DiscountMode;
  title?: string;
  code?: string;
  usageLimit?: number | null;
  appliesOncePerCustomer?: boolean;
  startsAt?: string;
  endsAt?: string | null;
  combinesWith?: Partial<CombinesWith>;
  enabled?: boolean;
  blockOnFailure?: boolean;
  deliveryMethodTypes?: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The body must be a JSON object (`config`, when present, is checked by parseConfig). */
export function bodyObject(body: unknown): Record<string, unknown> {
  const parsed = instanceBody.safeParse(body);
  if (!parsed.success) throw new FunctionInputError([{ field: null, message: INSTANCE_NOT_AN_OBJECT, code: 'INVALID' }], 'mercato');
  return parsed.data;
}

function coerceOwner(spec: OwnerFieldSpec, raw: unknown): { value?: unknown; problem?: string } {
  if (raw === null || raw === '') {
    if (spec.nullable) return { value: null };
    if (raw === '' && spec.type === 'text') return { value: '' };
    return { problem: 'must not be empty' };
  }
  switch (spec.type) {
    case 'text':
      return typeof raw === 'string' ? { value: raw } : { problem: 'must be a string' };
    case 'datetime': {
      if (typeof raw !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(raw) || Number.isNaN(Date.parse(raw)))
        return { problem: 'must be an ISO 8601 date-time (e.g. 2026-01-31T09:00:00Z)' };
      return { value: new Date(raw).toISOString() };
    }
    case 'number': {
      const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
      return typeof n === 'number' && Number.isInteger(n) ? { value: n } : { problem: 'must be an integer' };
    }
    case 'checkbox':
      if (typeof raw === 'boolean') return { value: raw };
      if (raw === 'true' || raw === 'false') return { value: raw === 'true' };
      return { problem: 'must be a boolean' };
    case 'select':
      return typeof raw === 'string' && spec.options?.some((o) => o.value === raw)
        ? { value: raw }
        : { problem: `must be one of ${spec.options?.map((o) => o.value).join(', ')}` };
    case 'multiselect': {
      const allowed = spec.options?.map((o) => o.value) ?? [];
      if (!Array.isArray(raw) || raw.length === 0 || raw.some((v) => typeof v !== 'string' || !allowed.includes(v)))
        return { problem: `must be a non-empty list of ${allowed.join(', ')}` };
      return { value: [...new Set(raw as string[])] };
    }
  }
}

/**
 * The owner fields of a body: shapes checked, values coerced. `mode` is the discount mode the body is for (fields of
 * the other mode are refused). Keys that are neither `config` nor an owner field of the type are refused too.
 */
export function parseOwner(
  def: FunctionDefinition,
  body: Record<string, unknown>,
  mode: DiscountMode | undefined,
): { values: OwnerValues; errors: UserError[] } {
  const specs = ownerFieldsOf(def);
  const errors: UserError[] = [];
  const values: Record<string, unknown> = {};
  const fail = (path: string[], message: string) => errors.push({ field: path, message, code: 'INVALID' });
  const topLevel = new Set(specs.map((s) => s.path[0]!));
  for (const key of Object.keys(body)) {
    if (key !== 'config' && !topLevel.has(key)) fail([key], fieldMessage(key, `is not a field of ${def.type} functions`));
  }
  for (const key of topLevel) {
    const nested = specs.filter((s) => s.path.length > 1 && s.path[0] === key);
    if (nested.length > 0 && body[key] !== undefined) {
      if (!isObject(body[key])) fail([key], fieldMessage(key, 'must be an object'));
      else
        for (const sub of Object.keys(body[key]))
          if (!nested.some((s) => s.path[1] === sub)) fail([key, sub], fieldMessage(`${key}.${sub}`, 'is not a field'));
    }
  }
  for (const spec of specs) {
    const parent = spec.path.length > 1 ? body[spec.path[0]!] : body;
    if (!isObject(parent) || !Object.hasOwn(parent, spec.path.at(-1)!) || parent[spec.path.at(-1)!] === undefined) continue;
    if (spec.modes && mode && !spec.modes.includes(mode)) {
      fail(spec.path, fieldMessage(spec.name, `only ${spec.modes.join(', ')} discounts have it`));
      continue;
    }
    const { value, problem } = coerceOwner(spec, parent[spec.path.at(-1)!]);
    if (problem) fail(spec.path, fieldMessage(spec.name, problem));
    else if (spec.path.length > 1) values[spec.path[0]!] = { ...(values[spec.path[0]!] as object), [spec.path[1]!]: value };
    else values[spec.name] = value;
  }
  return { values: values as OwnerValues, errors };
}

/** Create: the defaults of the omitted owner fields (`startsAt` "now" → the current time). */
export function withDefaults(def: FunctionDefinition, mode: DiscountMode | undefined, given: OwnerValues): OwnerValues {
  const out: Record<string, unknown> = { ...given };
  for (const spec of ownerFieldsOf(def)) {
    if (spec.default === undefined || (spec.modes && mode && !spec.modes.includes(mode))) continue;
    const value = spec.default === 'now' ? new Date().toISOString() : spec.default;
    if (spec.path.length > 1) {
      const group = { ...(out[spec.path[0]!] as object) } as Record<string, unknown>;
      if (group[spec.path[1]!] === undefined) group[spec.path[1]!] = value;
      out[spec.path[0]!] = group;
    } else if (out[spec.name] === undefined) out[spec.name] = Array.isArray(value) ? [...value] : value;
  }
  return out as OwnerValues;
}

/**
 * `config`: unknown keys refused, numbers and checkboxes coerced, types and required fields checked, then each field's
 * validator (its output is what is saved). Returns the configuration to store or the problems.
 */
export async function parseConfig(
  def: FunctionDefinition,
  raw: unknown,
): Promise<{ config: Record<string, unknown>; errors: UserError[] }> {
  const fields = def.fields;
  if (!isObject(raw))
    return {
      config: {},
      errors: [{ field: ['config'], message: 'Field "config" must be an object of configuration values', code: 'INVALID' }],
    };
  const problems: FieldError[] = [];
  for (const key of Object.keys(raw))
    if (!Object.hasOwn(fields, key))
      problems.push({ field: key, message: fieldMessage(key, 'is not a configuration field of this function') });
  const data = coerce(fields, raw, problems);
  for (const [name, spec] of Object.entries(fields)) {
    const problem = problems.some((e) => e.field === name) ? undefined : typeProblem(spec, data[name]);
    if (problem) problems.push({ field: name, message: fieldMessage(name, problem) });
  }
  checkRequired(fields, data, problems);
  for (const [name, spec] of Object.entries(fields)) {
    if (!spec.validate || problems.some((e) => e.field === name) || (!hasValue(data[name]) && spec.required === false)) continue;
    const parsed = await runValidator(spec.validate, data[name]);
    if (parsed.ok) data[name] = parsed.value;
    else problems.push({ field: name, message: fieldMessage(name, parsed.reason) });
  }
  const config: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) if (value !== undefined && value !== '') config[key] = value;
  const errors = problems.map((p) => ({
    field: ['config', p.field],
    message: p.message,
    code: p.message === requiredMessage(p.field) ? 'BLANK' : 'INVALID',
  }));
  return { config, errors };
}
