/**
 * Small helpers shared by the validation rules: a problem collector that prefixes each message with its path,
 * path building, and descriptions of offending values. Rules never throw; they add problems and go on.
 */
import { z } from 'zod';

export class Problems {
  readonly list: string[] = [];

  add(path: string, message: string): void {
    this.list.push(`${path}: ${message}`);
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `flows` + `syncOrders` → `flows.syncOrders` (`''` + `crons` → `crons`); keys that are not identifiers use brackets: `webhooks["orders/create"]`. */
export function at(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  if (!IDENTIFIER.test(key)) return `${path}[${JSON.stringify(key)}]`;
  return path === '' ? key : `${path}.${key}`;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function isFunction(value: unknown): value is (...args: any[]) => unknown {
  return typeof value === 'function';
}

export function isSchema(value: unknown): boolean {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as any).safeParse === 'function';
}

export function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim().length > 0;
}

export function isPositiveFinite(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

export function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/** A short description of a value for `(got …)` suffixes. Never prints function bodies or whole objects. */
export function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return 'an object';
}

export function got(value: unknown): string {
  return `(got ${describe(value)})`;
}

/** Reports each key of `obj` outside `allowed`, suggesting the closest allowed key for likely typos. */
export function checkKnownKeys(
  problems: Problems,
  path: string,
  obj: Record<string, unknown>,
  allowed: readonly string[],
  what: string,
): void {
  for (const key of Object.keys(obj)) {
    if (allowed.includes(key)) continue;
    const hint = closest(key, allowed);
    problems.add(at(path, key), `unknown ${what}${hint ? ` (did you mean "${hint}"?)` : ''}; allowed: ${allowed.join(', ')}`);
  }
}

function closest(key: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = distance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return bestDistance <= Math.max(1, Math.floor(key.length / 3)) ? best : undefined;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}

/** Runs a schema's synchronous `safeParse` and returns the issues as `[path, message]` pairs (path relative to `base`). */
export function schemaIssues(schema: unknown, value: unknown, base: string): Array<[string, string]> | 'async' | Error {
  let result: any;
  try {
    result = (schema as any).safeParse(value);
  } catch (error) {
    if (error instanceof z.core.$ZodAsyncError) return 'async';
    return error instanceof Error ? error : new Error(String(error));
  }
  if (result?.success) return [];
  const issues: any[] = Array.isArray(result?.error?.issues) ? result.error.issues : [];
  if (issues.length === 0) return [[base, 'is rejected by the schema']];
  return issues.map((issue) => {
    let path = base;
    for (const segment of Array.isArray(issue.path) ? issue.path : []) {
      path = at(path, typeof segment === 'number' ? segment : String(segment));
    }
    return [path, String(issue.message ?? 'invalid')];
  });
}
