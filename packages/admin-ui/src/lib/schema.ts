/**
 * The JSON-schema form model: which schemas get real fields, the editable draft of a value (numbers as the text typed,
 * enums as the chosen index), and draft → value with the validation errors keyed by path ("customer.email", "items.0").
 * A union of constants (`anyOf` of `const` / `enum` variants) is a select like an enum. Anything else the form cannot
 * render (anyOf of several types, records, tuples, …) is edited as raw JSON at that spot. `validateValue` checks a JSON
 * value (the run form's "Edit as JSON") with the same rules and messages as the form.
 */

export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema | JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number | boolean;
  exclusiveMaximum?: number | boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minItems?: number;
  maxItems?: number;
}

export type Kind = 'string' | 'number' | 'integer' | 'boolean' | 'enum' | 'object' | 'array' | 'raw';

export type Draft = string | boolean | Draft[] | { [key: string]: Draft };

export type Errors = Record<string, string>;

/**
 * `{ anyOf: [X, { type: 'null' }] }` and `type: ['x', 'null']` are X, nullable; `{ anyOf: [A, B, { type: 'null' }] }` is
 * `{ anyOf: [A, B] }`, nullable.
 */
export function unwrapNullable(schema: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants && variants.some((v) => v.type === 'null')) {
    const other = variants.filter((v) => v.type !== 'null');
    if (other.length === 1)
      return {
        schema: {
          ...other[0]!,
          title: schema.title ?? other[0]!.title,
          description: schema.description ?? other[0]!.description,
          default: schema.default ?? other[0]!.default,
        },
        nullable: true,
      };
    if (other.length > 1) return { schema: { ...schema, anyOf: other, oneOf: undefined }, nullable: true };
  }
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t) => t !== 'null');
    if (types.length === 1) return { schema: { ...schema, type: types[0] }, nullable: schema.type.includes('null') };
  }
  return { schema, nullable: false };
}

/** The values of a union whose every variant is a constant (`z.union([z.literal(1), z.literal(2)])`), else null. */
function unionConstants(schema: JsonSchema): unknown[] | null {
  const variants = schema.anyOf ?? schema.oneOf;
  if (!variants || variants.length === 0) return null;
  const values: unknown[] = [];
  for (const variant of variants) {
    if (variant.const !== undefined) values.push(variant.const);
    else if (Array.isArray(variant.enum) && variant.enum.length > 0) values.push(...variant.enum);
    else return null;
  }
  return values;
}

export function kindOf(raw: JsonSchema): Kind {
  const { schema } = unwrapNullable(raw);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return 'enum';
  if (schema.const !== undefined) return 'enum';
  if (unionConstants(schema)) return 'enum';
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'integer':
      return 'integer';
    case 'boolean':
      return 'boolean';
    case 'object':
      // A record (`additionalProperties` is a schema, no named properties) has no fixed fields: raw JSON.
      return typeof schema.additionalProperties === 'object' && Object.keys(schema.properties ?? {}).length === 0 ? 'raw' : 'object';
    case 'array':
      return schema.items && !Array.isArray(schema.items) ? 'array' : 'raw';
    default:
      return 'raw';
  }
}

export function enumValues(raw: JsonSchema): unknown[] {
  const { schema } = unwrapNullable(raw);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum;
  if (schema.const !== undefined) return [schema.const];
  return unionConstants(schema) ?? [];
}

/** True when the whole schema gets a form (a root object); otherwise the form is raw JSON only. */
export function hasForm(schema: JsonSchema | null | undefined): schema is JsonSchema {
  return !!schema && kindOf(schema) === 'object';
}

export function toDraft(raw: JsonSchema, value: unknown): Draft {
  const { schema } = unwrapNullable(raw);
  const kind = kindOf(schema);
  const v = value === undefined ? schema.default : value;
  switch (kind) {
    case 'string':
      return typeof v === 'string' ? v : '';
    case 'number':
    case 'integer':
      return typeof v === 'number' ? String(v) : '';
    case 'boolean':
      return v === true;
    case 'enum': {
      const i = enumValues(schema).findIndex((e) => JSON.stringify(e) === JSON.stringify(v));
      return i >= 0 ? String(i) : '';
    }
    case 'object': {
      const obj = v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
      const out: Record<string, Draft> = {};
      for (const [key, child] of Object.entries(schema.properties ?? {})) out[key] = toDraft(child, obj[key]);
      return out;
    }
    case 'array':
      return Array.isArray(v) ? v.map((item) => toDraft(schema.items as JsonSchema, item)) : [];
    default:
      return v === undefined ? '' : JSON.stringify(v, null, 2);
  }
}

function isEmptyDraft(draft: Draft): boolean {
  return draft === '' || (Array.isArray(draft) && draft.length === 0);
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const FORMAT_MESSAGES: Record<string, string> = {
  email: 'Must be an email address',
  uri: 'Must be a URL',
  url: 'Must be a URL',
  'date-time': 'Must be a date and time (ISO 8601)',
  date: 'Must be a date (YYYY-MM-DD)',
  time: 'Must be a time (HH:MM:SS)',
  uuid: 'Must be a UUID',
};

function checkString(schema: JsonSchema, text: string): string | null {
  if (schema.minLength !== undefined && text.length < schema.minLength) return `Must be at least ${schema.minLength} characters`;
  if (schema.maxLength !== undefined && text.length > schema.maxLength) return `Must be at most ${schema.maxLength} characters`;
  const formatMessage = schema.format ? FORMAT_MESSAGES[schema.format] : undefined;
  if (schema.format === 'email' && !EMAIL_RE.test(text)) return formatMessage!;
  if ((schema.format === 'uri' || schema.format === 'url') && !/^[a-z][a-z0-9+.-]*:/i.test(text)) return formatMessage!;
  if (schema.format === 'date-time' && Number.isNaN(Date.parse(text))) return formatMessage!;
  if (schema.pattern) {
    try {
      // A format's own pattern (zod adds one) fails with the format's words, not the regular expression.
      if (!new RegExp(schema.pattern, 'u').test(text)) return formatMessage ?? `Must match the pattern ${schema.pattern}`;
    } catch {
      /* a pattern JavaScript cannot compile: leave it to the server */
    }
  }
  return null;
}

function checkNumber(schema: JsonSchema, n: number, integer: boolean): string | null {
  if (integer && !Number.isInteger(n)) return 'Must be a whole number';
  const exMin =
    typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum : schema.exclusiveMinimum === true ? schema.minimum : undefined;
  const exMax =
    typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum : schema.exclusiveMaximum === true ? schema.maximum : undefined;
  if (exMin !== undefined && n <= exMin) return `Must be greater than ${exMin}`;
  if (exMax !== undefined && n >= exMax) return `Must be less than ${exMax}`;
  if (schema.minimum !== undefined && schema.exclusiveMinimum !== true && n < schema.minimum) return `Must be at least ${schema.minimum}`;
  if (schema.maximum !== undefined && schema.exclusiveMaximum !== true && n > schema.maximum) return `Must be at most ${schema.maximum}`;
  return null;
}

/**
 * The value of a draft, or undefined when the field is left empty (the caller decides whether that is allowed).
 * Problems are written into `errors` under `path`.
 */
export function fromDraft(raw: JsonSchema, draft: Draft, path: string, errors: Errors): unknown {
  const { schema } = unwrapNullable(raw);
  const kind = kindOf(schema);
  const fail = (message: string) => {
    errors[path || '$'] = message;
    return undefined;
  };
  switch (kind) {
    case 'string': {
      const text = draft as string;
      if (text === '') return undefined;
      const problem = checkString(schema, text);
      return problem ? fail(problem) : text;
    }
    case 'number':
    case 'integer': {
      const text = (draft as string).trim();
      if (text === '') return undefined;
      const n = Number(text);
      if (!Number.isFinite(n)) return fail('Must be a number');
      const problem = checkNumber(schema, n, kind === 'integer');
      return problem ? fail(problem) : n;
    }
    case 'boolean':
      return draft === true;
    case 'enum':
      return draft === '' ? undefined : enumValues(schema)[Number(draft)];
    case 'object': {
      const obj = (draft && typeof draft === 'object' && !Array.isArray(draft) ? draft : {}) as Record<string, Draft>;
      const out: Record<string, unknown> = {};
      const required = new Set(schema.required ?? []);
      for (const [key, child] of Object.entries(schema.properties ?? {})) {
        const childPath = path ? `${path}.${key}` : key;
        const childDraft = obj[key] ?? toDraft(child, undefined);
        const childKind = kindOf(child);
        if (
          childKind !== 'boolean' &&
          childKind !== 'object' &&
          isEmptyDraft(childDraft) &&
          !(childKind === 'array' && required.has(key))
        ) {
          if (required.has(key)) errors[childPath] = 'Required';
          continue;
        }
        const value = fromDraft(child, childDraft, childPath, errors);
        if (value !== undefined) out[key] = value;
        else if (required.has(key) && !errors[childPath]) errors[childPath] = 'Required';
      }
      return out;
    }
    case 'array': {
      const list = Array.isArray(draft) ? draft : [];
      const itemSchema = schema.items as JsonSchema;
      if (schema.minItems !== undefined && list.length < schema.minItems)
        fail(`Add at least ${schema.minItems} item${schema.minItems === 1 ? '' : 's'}`);
      if (schema.maxItems !== undefined && list.length > schema.maxItems) fail(`At most ${schema.maxItems} items`);
      return list.map((item, i) => {
        const itemPath = `${path}.${i}`;
        const value = fromDraft(itemSchema, item, itemPath, errors);
        if (value === undefined && !errors[itemPath] && kindOf(itemSchema) !== 'boolean') errors[itemPath] = 'Required';
        return value;
      });
    }
    default: {
      const text = typeof draft === 'string' ? draft.trim() : '';
      if (text === '') return undefined;
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        return fail(`Not valid JSON: ${(error as Error).message}`);
      }
    }
  }
}

const TYPE_MESSAGES: Record<Exclude<Kind, 'enum' | 'raw'>, string> = {
  string: 'Must be text',
  number: 'Must be a number',
  integer: 'Must be a number',
  boolean: 'Must be true or false',
  object: 'Must be an object',
  array: 'Must be a list',
};

/**
 * Checks a JSON value against the schema with the form's rules and messages (required fields, types, bounds, lengths,
 * patterns, formats, enums, item counts); problems are written into `errors` under their paths, as `fromDraft` does.
 * Used by "Edit as JSON", so both modes refuse the same inputs before anything is sent.
 */
export function validateValue(raw: JsonSchema, value: unknown, path: string, errors: Errors): void {
  const { schema, nullable } = unwrapNullable(raw);
  const kind = kindOf(schema);
  const fail = (message: string) => {
    errors[path || '$'] = message;
  };
  if (value === null && nullable) return;
  switch (kind) {
    case 'string': {
      if (typeof value !== 'string') return fail(TYPE_MESSAGES.string);
      const problem = checkString(schema, value);
      if (problem) fail(problem);
      return;
    }
    case 'number':
    case 'integer': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return fail(TYPE_MESSAGES[kind]);
      const problem = checkNumber(schema, value, kind === 'integer');
      if (problem) fail(problem);
      return;
    }
    case 'boolean':
      if (typeof value !== 'boolean') fail(TYPE_MESSAGES.boolean);
      return;
    case 'enum': {
      const values = enumValues(schema);
      if (!values.some((v) => JSON.stringify(v) === JSON.stringify(value)))
        fail(`Must be one of ${values.map((v) => JSON.stringify(v)).join(', ')}`);
      return;
    }
    case 'object': {
      if (!value || typeof value !== 'object' || Array.isArray(value)) return fail(TYPE_MESSAGES.object);
      const obj = value as Record<string, unknown>;
      const properties = schema.properties ?? {};
      const required = new Set(schema.required ?? []);
      for (const [key, child] of Object.entries(properties)) {
        const childPath = path ? `${path}.${key}` : key;
        if (obj[key] === undefined) {
          if (required.has(key)) errors[childPath] = 'Required';
          continue;
        }
        validateValue(child, obj[key], childPath, errors);
      }
      if (schema.additionalProperties === false) {
        for (const key of Object.keys(obj))
          if (!Object.hasOwn(properties, key)) errors[path ? `${path}.${key}` : key] = 'Not a field of this input';
      }
      return;
    }
    case 'array': {
      if (!Array.isArray(value)) return fail(TYPE_MESSAGES.array);
      if (schema.minItems !== undefined && value.length < schema.minItems)
        fail(`Add at least ${schema.minItems} item${schema.minItems === 1 ? '' : 's'}`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems) fail(`At most ${schema.maxItems} items`);
      value.forEach((item, i) => {
        const itemPath = `${path}.${i}`;
        if (item === undefined || item === null) {
          if (!(item === null && unwrapNullable(schema.items as JsonSchema).nullable)) errors[itemPath] = 'Required';
          return;
        }
        validateValue(schema.items as JsonSchema, item, itemPath, errors);
      });
      return;
    }
    default:
      return;
  }
}

export function humanize(key: string): string {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Maps the server's validation issues (zod: `{ path: [...], message }`) to form paths. */
export function issuesToErrors(issues: unknown): Errors {
  const errors: Errors = {};
  if (!Array.isArray(issues)) return errors;
  for (const issue of issues) {
    if (!issue || typeof issue !== 'object') continue;
    const { path, message } = issue as { path?: unknown; message?: unknown };
    const key = Array.isArray(path) ? path.map(String).join('.') : typeof path === 'string' ? path.replace(/^input\.?/, '') : '';
    if (typeof message === 'string') errors[key || '$'] ??= message;
  }
  return errors;
}
