/** Keeping provider secrets out of error messages, stacks, run errors and log lines. */
import type { FieldsMap } from '../app/types.ts';

/** Shorter strings are not scrubbed: replacing them would mangle messages without protecting anything worth hiding. */
const MIN_SECRET_LENGTH = 4;
const REDACTED = '[redacted]';

function collectStrings(value: unknown, out: Set<string>, depth = 0) {
  if (typeof value === 'string') {
    if (value.length >= MIN_SECRET_LENGTH) out.add(value);
  } else if (typeof value === 'number' || typeof value === 'bigint') {
    collectStrings(String(value), out, depth);
  } else if (typeof value === 'object' && value !== null && depth < 5) {
    for (const item of Object.values(value)) collectStrings(item, out, depth + 1);
  }
}

/**
 * Every secret value of a config: password fields, and every value under a key that is not a declared non-password
 * field (what a transformer adds, such as a derived session token). Longest first, so a secret containing another is
 * replaced whole.
 */
export function secretValues(fields: FieldsMap, saved: Record<string, unknown> | undefined): string[] {
  if (!saved) return [];
  const out = new Set<string>();
  for (const [name, value] of Object.entries(saved)) {
    const spec = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (!spec || spec.type === 'password') collectStrings(value, out);
  }
  return [...out].sort((a, b) => b.length - a.length);
}

export function scrub(message: string, secrets: string[]): string {
  let out = message;
  for (const s of secrets) out = out.split(s).join(REDACTED);
  return out;
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * The thrown value with every secret replaced in its message, stack and cause chain. An Error keeps its identity (class,
 * name, own properties) when it can be updated in place; a string stays a string; anything else becomes an Error.
 */
export function scrubError(error: unknown, secrets: string[], depth = 0): unknown {
  if (secrets.length === 0) return error;
  if (typeof error === 'string') return scrub(error, secrets);
  if (!(error instanceof Error)) return new Error(scrub(safeString(error), secrets));
  const message = scrub(error.message, secrets);
  const stack = error.stack === undefined ? undefined : scrub(error.stack, secrets);
  const cause = 'cause' in error && depth < 5 ? scrubError(error.cause, secrets, depth + 1) : undefined;
  try {
    error.message = message;
    if (stack !== undefined) error.stack = stack;
    if ('cause' in error) error.cause = cause;
    if (error.message === message && error.stack === stack) return error;
  } catch {
    // frozen or read-only: fall through to a copy
  }
  const copy = new Error(message, cause === undefined ? undefined : { cause });
  copy.name = error.name;
  copy.stack = stack;
  return copy;
}
