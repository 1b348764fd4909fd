/**
 * Telling "the database cannot be reached right now" apart from every other failure, so the HTTP layer can answer 503
 * with `Retry-After` (retry later) instead of a 500 (a bug). See docs/security.md, "While the database is unreachable".
 *
 * An error counts as unavailability when it, its `cause` chain or one of the errors of an AggregateError is:
 * - a network error of the socket to the server (ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE, EHOSTUNREACH, …);
 * - a PostgreSQL error of class 08 (connection exception), 57P01/57P02/57P03 (the server shuts down, crashed or is
 *   starting) or 53300 (too many connections);
 * - one of node-postgres' own connection messages ("Connection terminated…", the pool's connect time-out, a client
 *   that lost its connection, a pool already ended while the process stops).
 * Anything else — a constraint violation, a syntax error, a serialization failure — is not.
 */

/** Seconds a client is asked to wait before retrying (`Retry-After`). The pool reconnects as soon as the server answers. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/** Node's socket error codes that mean the server could not be reached or the connection was lost. */
const NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** SQLSTATEs outside class 08 that mean "not now": admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections. */
const UNAVAILABLE_SQLSTATES: ReadonlySet<string> = new Set(['57P01', '57P02', '57P03', '53300']);

/** node-postgres and pg-pool messages of a lost or impossible connection (they carry no code). */
const DRIVER_MESSAGES: readonly RegExp[] = [
  /^Connection terminated\b/, // "Connection terminated", "… unexpectedly", "… due to connection timeout"
  /^timeout exceeded when trying to connect$/,
  /^Client has encountered a connection error and is not queryable$/,
  /^Client was closed and is not queryable$/,
  /^Cannot use a pool after calling end on the pool$/,
  /^Query read timeout$/,
];

const SQLSTATE_RE = /^[0-9A-Z]{5}$/;
const MAX_DEPTH = 8;

/** Why `error` means the database is unreachable (`code` or message of the error that says so), or undefined when it does not. */
export function databaseUnavailableReason(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  const visit = (e: unknown, depth: number): string | undefined => {
    if (typeof e !== 'object' || e === null || seen.has(e) || depth > MAX_DEPTH) return undefined;
    seen.add(e);
    const { code, message, cause, errors } = e as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string') {
      if (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code)) return code;
      if (SQLSTATE_RE.test(code) && code.startsWith('08')) return code;
    }
    if (typeof message === 'string' && DRIVER_MESSAGES.some((re) => re.test(message))) return message;
    const inner = visit(cause, depth + 1);
    if (inner) return inner;
    if (Array.isArray(errors)) {
      for (const item of errors) {
        const found = visit(item, depth + 1);
        if (found) return found;
      }
    }
    return undefined;
  };
  return visit(error, 0);
}

/** True when `error` says the database cannot be reached right now (see the file comment). */
export function isDatabaseUnavailable(error: unknown): boolean {
  return databaseUnavailableReason(error) !== undefined;
}
