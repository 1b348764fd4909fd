/**
 * The one formatter from a zod check to an InvalidInputError: every capability declares its request bodies and query
 * strings as zod schemas (`schemas.ts` in its folder) and parses them with parseInput. The answer is
 * `{ error: "<field>: <rule>", field, issues }` — the first issue names the field and the rule, `issues` lists them all
 * (`{ path, message, code }`). An unknown key is `"<key>: unknown field"` (or `unknown query parameter` for queries).
 */
import type { z } from 'zod';
import { type InputIssue, InvalidInputError } from './errors.ts';

export interface ParseInputOptions {
  /** Prefixed to every path (`retryPolicy` → `retryPolicy.maxAttempts`). */
  prefix?: string;
  /** What an unknown key is called in the message: `field` (bodies, default) or `query parameter`. */
  unknownKey?: 'field' | 'query parameter';
  /** The message when the value is not an object at all (default: `body: must be a JSON object`). */
  notAnObject?: string;
}

type Issue = z.core.$ZodIssue;

const pathOf = (prefix: string | undefined, path: ReadonlyArray<PropertyKey>) =>
  [prefix, ...path.map(String)].filter((p) => p !== undefined && p !== '').join('.');

/** The issues as answers carry them: one entry per problem (an unknown key counts once per key). */
export function issuesOf(issues: readonly Issue[], options: ParseInputOptions = {}): InputIssue[] {
  return issues.flatMap((issue): InputIssue[] => {
    if (issue.code === 'unrecognized_keys') {
      const what = options.unknownKey ?? 'field';
      return issue.keys.map((key) => ({
        path: pathOf(options.prefix, [...issue.path, key]),
        message: `unknown ${what}`,
        code: issue.code,
      }));
    }
    return [{ path: pathOf(options.prefix, issue.path), message: issue.message, code: issue.code }];
  });
}

/** Parses `value` with `schema`; throws InvalidInputError naming the first field at fault and listing every issue. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, options: ParseInputOptions = {}): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw inputError(result.error.issues, options);
}

/** The InvalidInputError of a failed check (for callers that ran safeParse themselves). */
export function inputError(issues: readonly Issue[], options: ParseInputOptions = {}): InvalidInputError {
  const listed = issuesOf(issues, options);
  const first: InputIssue = listed[0] ?? { path: options.prefix ?? '', message: 'invalid input', code: 'custom' };
  if (first.path === '' && first.code === 'invalid_type') {
    return new InvalidInputError(options.notAnObject ?? 'body: must be a JSON object', { field: 'body', issues: listed });
  }
  const message = first.path ? `${first.path}: ${first.message}` : first.message;
  return new InvalidInputError(message, { ...(first.path ? { field: first.path } : {}), issues: listed });
}
