/**
 * The built-in input validator of MCP tools. It supports exactly this subset of JSON Schema: `type` (object, array, string,
 * number, integer, boolean, null; one name or an array of names), `required`, `properties`, `additionalProperties`
 * (boolean or schema), `items` (one schema for every element), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`
 * (numbers) and `enum`. Annotations (`title`, `description`, `default`, `examples`, `$schema`, `$comment`) are ignored.
 * It is not a complete JSON Schema implementation: `schemaProblems` lists every other keyword so a definition cannot rely
 * on a constraint that would silently not be enforced.
 */

export type JsonSchema = Record<string, unknown>;
export interface ValidationIssue {
  /** JSON Pointer of the offending value (`` for the root). */
  path: string;
  /** The rule that failed, in words (`must be one of "open", "closed"`). */
  message: string;
  /** What the rule wants (`integer`, `one of "open", "closed"`, `>= 0`, `a value (required)`, `no such property`). */
  expected: string;
  /** What was given: a short JSON preview of a scalar (`"lost"`, `-1`), `object`, `array of 3`, or `nothing`. */
  received: string;
}

export const SCHEMA_TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'] as const;
const CONSTRAINTS = [
  'type',
  'required',
  'properties',
  'additionalProperties',
  'items',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'enum',
];
const ANNOTATIONS = ['title', 'description', 'default', 'examples', '$schema', '$comment'];
const MAX_ISSUES = 20;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const pointer = (path: string, key: string | number) => `${path}/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`;

/**
 * A property name the caller sent, as an error may repeat it: a plain name (up to 64 letters, digits and `_$.:@-`) as it
 * is, anything else (spaces, brackets, control characters: text a caller chose) as `(a property with an unusual name)`,
 * so an answer or an audit record never carries arbitrary input as if it were ours.
 */
export function shownKey(key: string): string {
  return /^[\w$.:@-]{1,64}$/.test(key) ? key : '(a property with an unusual name)';
}

/** A short, safe description of a value for `received`: scalars as (truncated) JSON, containers by kind. */
export function preview(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return `array of ${value.length}`;
  if (isObject(value)) return 'object';
  const json = JSON.stringify(value) ?? String(value);
  return json.length > 60 ? `${json.slice(0, 57)}...` : json;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function matchesType(value: unknown, type: string): boolean {
  switch (type) {
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'null':
      return value === null;
    default:
      return false;
  }
}

/** Structural equality of JSON values (object key order does not matter). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** Checks `value` against `schema`; an empty list means valid. At most 20 issues are reported. */
export function validate(schema: JsonSchema, value: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  check(schema, value, '', issues);
  return issues.slice(0, MAX_ISSUES);
}

function check(schema: JsonSchema, value: unknown, path: string, issues: ValidationIssue[]): void {
  if (issues.length >= MAX_ISSUES) return;
  const received = preview(value);
  /** `rule` is what is expected; the message is `must be <rule>` unless given. */
  const add = (expected: string, message = `must be ${expected}`) => issues.push({ path, message, expected, received });
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    if (!types.some((t) => matchesType(value, t))) {
      issues.push({
        path,
        message: `must be ${types.join(' or ')} (got ${typeOf(value)})`,
        expected: types.join(' or '),
        received: typeOf(value),
      });
      return;
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((option) => jsonEqual(option, value))) {
    add(`one of ${schema.enum.map((o) => JSON.stringify(o)).join(', ')}`);
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) add(`>= ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) add(`<= ${schema.maximum}`);
    if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum) add(`> ${schema.exclusiveMinimum}`);
    if (typeof schema.exclusiveMaximum === 'number' && value >= schema.exclusiveMaximum) add(`< ${schema.exclusiveMaximum}`);
  }
  if (Array.isArray(value) && isObject(schema.items)) {
    value.forEach((item, i) => check(schema.items as JsonSchema, item, pointer(path, i), issues));
  }
  if (isObject(value)) checkObject(schema, value, path, issues);
}

function checkObject(schema: JsonSchema, value: Record<string, unknown>, path: string, issues: ValidationIssue[]): void {
  const properties = isObject(schema.properties) ? schema.properties : {};
  if (Array.isArray(schema.required)) {
    for (const key of schema.required as string[]) {
      if (!Object.hasOwn(value, key)) {
        const type = isObject(properties[key]) ? (properties[key] as JsonSchema).type : undefined;
        const what = type === undefined ? 'a value' : Array.isArray(type) ? type.join(' or ') : String(type);
        issues.push({ path: pointer(path, key), message: 'is required', expected: `${what} (required)`, received: 'nothing' });
      }
    }
  }
  for (const [key, item] of Object.entries(value)) {
    if (Object.hasOwn(properties, key)) {
      if (isObject(properties[key])) check(properties[key] as JsonSchema, item, pointer(path, key), issues);
    } else if (schema.additionalProperties === false) {
      const allowed = Object.keys(properties);
      issues.push({
        path: pointer(path, shownKey(key)),
        message: 'is not an allowed property',
        expected: allowed.length > 0 ? `one of the properties ${allowed.join(', ')}` : 'no properties',
        received: `property "${shownKey(key)}"`,
      });
    } else if (isObject(schema.additionalProperties)) {
      check(schema.additionalProperties, item, pointer(path, key), issues);
    }
  }
}

/**
 * What in a schema the validator would not enforce or cannot read: unknown keywords, malformed values of known ones.
 * Paths are dotted from `at` (e.g. `inputSchema.properties.limit.minLength`). Empty = the schema is fully supported.
 */
export function schemaProblems(schema: unknown, at = 'inputSchema'): string[] {
  const problems: string[] = [];
  walk(schema, at, problems);
  return problems;
}

function walk(schema: unknown, at: string, problems: string[]): void {
  if (!isObject(schema)) {
    problems.push(`${at}: must be a schema object`);
    return;
  }
  for (const [key, value] of Object.entries(schema)) {
    const here = `${at}.${key}`;
    if (ANNOTATIONS.includes(key)) continue;
    if (!CONSTRAINTS.includes(key)) {
      problems.push(`${here}: unsupported keyword (the validator supports ${CONSTRAINTS.join(', ')})`);
      continue;
    }
    switch (key) {
      case 'type': {
        const types = Array.isArray(value) ? value : [value];
        if (types.length === 0 || !types.every((t) => (SCHEMA_TYPES as readonly unknown[]).includes(t))) {
          problems.push(`${here}: must be one of ${SCHEMA_TYPES.join(', ')} or an array of them`);
        }
        break;
      }
      case 'required':
        if (!Array.isArray(value) || !value.every((k) => typeof k === 'string'))
          problems.push(`${here}: must be an array of property names`);
        break;
      case 'properties':
        if (!isObject(value)) problems.push(`${here}: must be an object of schemas`);
        else for (const [name, sub] of Object.entries(value)) walk(sub, `${here}.${name}`, problems);
        break;
      case 'additionalProperties':
        if (typeof value !== 'boolean') walk(value, here, problems);
        break;
      case 'items':
        walk(value, here, problems);
        break;
      case 'enum':
        if (!Array.isArray(value) || value.length === 0) problems.push(`${here}: must be a non-empty array`);
        break;
      default:
        if (typeof value !== 'number' || !Number.isFinite(value)) problems.push(`${here}: must be a number`);
    }
  }
}
