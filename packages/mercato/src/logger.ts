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

export function createLogger(options: { level?: string; pretty?: boolean; name?: string; destination?: pino.DestinationStream } = {}): Logger {
  const base: pino.LoggerOptions = {
    name: options.name ?? 'mercato',
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
  };
  if (options.destination) return pino(base, options.destination);
  if (options.pretty) {
    return pino({ ...base, transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname', translateTime: 'HH:MM:ss.l' } } });
  }
  return pino(base);
}

/** A logger that discards everything (tests that do not look at logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
