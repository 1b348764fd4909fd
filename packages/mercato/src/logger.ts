import pino, { type Logger } from 'pino';

export type { Logger };

/** Paths that must never reach a log line. */
export const REDACT_PATHS = [
  'password',
  '*.password',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'accessToken',
  '*.accessToken',
  'apiSecret',
  '*.apiSecret',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'config',
  '*.config',
  'encryptionKey',
  '*.encryptionKey',
];

/**
 * Fields of database errors that carry query parameters or the values of a failing statement (PGlite and drizzle errors
 * carry `params`; `detail` quotes the failing row or key; `where` and `internalQuery` quote PL/pgSQL context): they can hold flow inputs or provider configs.
 */
export const DB_ERROR_FIELDS = ['params', 'parameters', 'queryParams', 'queryOptions', 'where', 'internalQuery', 'detail'];
const PARAMS_IN_MESSAGE = /(\n|^)params: [\s\S]*$/; // drizzle: "Failed query: <sql>\nparams: <values>"

function scrubError(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null || depth > 6) return value;
  if (Array.isArray(value)) return value.map((v) => scrubError(v, depth + 1));
  const copy: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (DB_ERROR_FIELDS.includes(key)) copy[key] = '[redacted]';
    else if ((key === 'message' || key === 'stack') && typeof child === 'string')
      copy[key] = child.replace(PARAMS_IN_MESSAGE, '$1params: [redacted]');
    else copy[key] = scrubError(child, depth + 1);
  }
  return copy;
}

/** pino's error serializer, then database parameters are removed (a copy; causes and nested errors included). */
export function serializeLoggedError(error: unknown): unknown {
  return scrubError(error instanceof Error ? pino.stdSerializers.err(error) : error, 0);
}

export function createLogger(
  options: { level?: string; pretty?: boolean; name?: string; destination?: pino.DestinationStream } = {},
): Logger {
  const base: pino.LoggerOptions = {
    name: options.name ?? 'mercato',
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: serializeLoggedError, error: serializeLoggedError },
  };
  if (options.destination) return pino(base, options.destination);
  if (options.pretty) {
    // colours only on a terminal (and never with NO_COLOR): piped output stays plain text
    const colorize = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
    return pino({
      ...base,
      transport: { target: 'pino-pretty', options: { colorize, ignore: 'pid,hostname', translateTime: 'HH:MM:ss.l' } },
    });
  }
  return pino(base);
}

/** A logger that discards everything (tests that do not look at logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
