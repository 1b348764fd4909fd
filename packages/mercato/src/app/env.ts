/**
 * The process environment, read once at start-up. Names, defaults, validation and resolution order are listed in
 * docs/environment.md. Every problem is collected and reported together in one ConfigError; values of secret
 * variables (ENCRYPTION_KEY, ENCRYPTION_KEY_PREVIOUS, DATABASE_URL) never appear in a message.
 */
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { ConfigError } from './validate.ts';

export type RunMode = 'dev' | 'start' | 'worker' | 'migrate' | 'check' | 'test';

export interface RuntimeEnv {
  nodeEnv: string;
  /** NODE_ENV=production. */
  production: boolean;
  port: number;
  /** Interface to bind (HOST is the public URL, not this). Default 0.0.0.0 in start, 127.0.0.1 in dev. */
  bindAddress: string;
  /** PostgreSQL connection string; unset → embedded PGlite. */
  databaseUrl?: string;
  /** PGlite data directory (default `<project>/.mercato/db`). */
  dataDir: string;
  /** Origin every platform call goes to (the simulator in dev and tests); unset → the shop's own domain over HTTPS. */
  platformOrigin?: string;
  /** 64 hex characters. */
  encryptionKey?: string;
  /** Older keys, comma-separated, still accepted for decryption during a rotation. */
  previousEncryptionKeys: string[];
  logLevel: string;
  /** MERCATO_METRICS_TOKEN: the bearer token of `GET /metrics` (beats `metrics.token` of the config); unset → off unless the config sets one. */
  metricsToken?: string;
  /** MERCATO_METRICS_PORT: `mercato worker` serves /metrics, /healthz and /readyz on this port; unset → no such server. */
  metricsPort?: number;
  /** MERCATO_DB_POOL_SIZE: connections the process may open to PostgreSQL (default 10). */
  dbPoolSize: number;
  /** MERCATO_MIGRATE_ON_START: `false` leaves migrations to `mercato migrate`, and start-up refuses a database behind. */
  migrateOnStart: boolean;
  /** The HTTP server's limits (docs/environment.md, "HTTP server limits"). */
  http: HttpLimits;
}

/** The HTTP server's timeouts, connection cap and bound of request bodies in flight (docs/deploy.md). */
export interface HttpLimits {
  /** MERCATO_HTTP_HEADERS_TIMEOUT_MS: a request's headers must arrive within this long of its first byte (or of the connection). */
  headersTimeoutMs: number;
  /** MERCATO_HTTP_REQUEST_TIMEOUT_MS: a whole request (headers and body) must arrive within this long. */
  requestTimeoutMs: number;
  /** MERCATO_HTTP_KEEP_ALIVE_TIMEOUT_MS: an idle kept-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
  /** MERCATO_HTTP_MAX_CONNECTIONS: open connections at most; beyond it new ones are closed at once. */
  maxConnections: number;
  /** MERCATO_MAX_BODY_BYTES_IN_FLIGHT: webhook and route bodies being received at once, in bytes (http/inflight.ts). */
  maxBodyBytesInFlight: number;
}

/**
 * The defaults suit a container behind a reverse proxy or load balancer: headers within 15 s and a request within 60 s
 * (slow clients are the proxy's to absorb), idle connections kept 65 s (longer than the 60 s idle timeout of common
 * load balancers, so the proxy closes first and never reuses a connection this server is closing), 2,048 connections.
 */
export const DEFAULT_HTTP_LIMITS: Readonly<HttpLimits> = Object.freeze({
  headersTimeoutMs: 15_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 65_000,
  maxConnections: 2048,
  maxBodyBytesInFlight: 64 * 1024 * 1024,
});

/** An integer variable within [min, max] (a problem naming it otherwise); `fallback` when unset. */
function parseIntegerVar(
  env: NodeJS.ProcessEnv,
  name: string,
  min: number,
  max: number,
  fallback: number,
  unit: string,
  problems: string[],
): number {
  const raw = read(env, name);
  if (raw === undefined) return fallback;
  const n = /^\d{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
  if (Number.isSafeInteger(n) && n >= min && n <= max) return n;
  problems.push(`${name}: ${JSON.stringify(raw)} is not ${unit} (an integer from ${min} to ${max})`);
  return fallback;
}

function parseHttpLimits(env: NodeJS.ProcessEnv, problems: string[]): HttpLimits {
  const d = DEFAULT_HTTP_LIMITS;
  const ms = 'a duration in milliseconds';
  const limits: HttpLimits = {
    headersTimeoutMs: parseIntegerVar(env, 'MERCATO_HTTP_HEADERS_TIMEOUT_MS', 1000, 3_600_000, d.headersTimeoutMs, ms, problems),
    requestTimeoutMs: parseIntegerVar(env, 'MERCATO_HTTP_REQUEST_TIMEOUT_MS', 1000, 3_600_000, d.requestTimeoutMs, ms, problems),
    keepAliveTimeoutMs: parseIntegerVar(env, 'MERCATO_HTTP_KEEP_ALIVE_TIMEOUT_MS', 1000, 3_600_000, d.keepAliveTimeoutMs, ms, problems),
    maxConnections: parseIntegerVar(env, 'MERCATO_HTTP_MAX_CONNECTIONS', 16, 1_000_000, d.maxConnections, 'a connection count', problems),
    maxBodyBytesInFlight: parseIntegerVar(
      env,
      'MERCATO_MAX_BODY_BYTES_IN_FLIGHT',
      1024 * 1024,
      2 ** 40,
      d.maxBodyBytesInFlight,
      'a byte count',
      problems,
    ),
  };
  // Node checks the request timeout against the headers timeout: a request cannot have less time than its headers
  if (limits.requestTimeoutMs < limits.headersTimeoutMs)
    problems.push(
      `MERCATO_HTTP_REQUEST_TIMEOUT_MS (${limits.requestTimeoutMs}) must not be shorter than MERCATO_HTTP_HEADERS_TIMEOUT_MS (${limits.headersTimeoutMs})`,
    );
  return limits;
}

export const DEFAULT_DB_POOL_SIZE = 10;
/** More connections than this from one process is a typo, not a plan (PostgreSQL's default max_connections is 100). */
export const MAX_DB_POOL_SIZE = 1000;

export const DEFAULT_PORT = 3000;
export const DEFAULT_LOG_LEVEL = 'info';

/** The levels pino accepts (`silent` turns logging off). */
export const LOG_LEVELS: readonly string[] = [...Object.keys(pino.levels.values), 'silent'];

/** How to make a key, said by every message about a missing ENCRYPTION_KEY. */
export const MAKE_KEY_HINT =
  'set it to 64 hex characters (32 bytes), for example the output of `openssl rand -hex 32`, the same value in every process, and keep it across deployments';

const ENCRYPTION_KEY_PATTERN = /^[0-9a-fA-F]{64}$/;
const HOSTNAME_PATTERN = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** A variable's value, with surrounding whitespace removed; empty counts as unset. */
function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/**
 * The first set variable of `names` (the names of one value: Mercato's own and the platform CLI's, docs/environment.md,
 * "Names from the platform's CLI"), with its name. Every other set one must hold the same value (compared after
 * `normalise`): one that differs is a problem naming both, never their values (one of them may be a secret).
 */
export function readAliased(
  env: NodeJS.ProcessEnv,
  names: readonly string[],
  problems: string[],
  normalise: (value: string) => string = (value) => value,
): { name: string; value: string } | undefined {
  let first: { name: string; value: string } | undefined;
  for (const name of names) {
    const value = read(env, name);
    if (value === undefined) continue;
    if (first === undefined) first = { name, value };
    else if (normalise(value) !== normalise(first.value))
      problems.push(
        `${first.name} and ${name} are both set and disagree: they name the same value (set one of them, or give both the same value)`,
      );
  }
  return first;
}

/** The names of the HTTP port: Mercato's and the platform CLI's (`shopify app dev` sets both to the port it proxies to). */
export const PORT_VARIABLES = ['PORT', 'BACKEND_PORT'] as const;

/** True when `value` is exactly 64 hexadecimal characters (a 32-byte AES-256 key). */
export function isEncryptionKey(value: string): boolean {
  return ENCRYPTION_KEY_PATTERN.test(value);
}

function parsePort(raw: string | undefined, problems: string[], name = 'PORT'): number {
  if (raw === undefined) return DEFAULT_PORT;
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(port) || port > 65535) {
    problems.push(`${name}: ${JSON.stringify(raw)} is not a port number (an integer from 0 to 65535)`);
    return DEFAULT_PORT;
  }
  return port;
}

function parseNamedPort(name: string, raw: string, problems: string[]): number | undefined {
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
  if (Number.isInteger(port) && port <= 65535) return port;
  problems.push(`${name}: ${JSON.stringify(raw)} is not a port number (an integer from 0 to 65535)`);
  return undefined;
}

function parsePoolSize(raw: string | undefined, problems: string[]): number {
  if (raw === undefined) return DEFAULT_DB_POOL_SIZE;
  const n = /^\d{1,4}$/.test(raw) ? Number(raw) : Number.NaN;
  if (Number.isInteger(n) && n >= 1 && n <= MAX_DB_POOL_SIZE) return n;
  problems.push(`MERCATO_DB_POOL_SIZE: ${JSON.stringify(raw)} is not a connection count (an integer from 1 to ${MAX_DB_POOL_SIZE})`);
  return DEFAULT_DB_POOL_SIZE;
}

function parseBoolean(name: string, raw: string | undefined, fallback: boolean, problems: string[]): boolean {
  if (raw === undefined) return fallback;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  problems.push(`${name}: ${JSON.stringify(raw)} is not true or false`);
  return fallback;
}

function parseBindAddress(raw: string | undefined, mode: RunMode, problems: string[]): string {
  const fallback = mode === 'dev' || mode === 'test' ? '127.0.0.1' : '0.0.0.0';
  if (raw === undefined) return fallback;
  const bare = raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw;
  if (isIP(bare) === 0 && !HOSTNAME_PATTERN.test(bare)) {
    problems.push(`MERCATO_BIND_ADDRESS: ${JSON.stringify(raw)} is neither an IP address nor a host name`);
    return fallback;
  }
  return bare;
}

function parseDatabaseUrl(raw: string | undefined, problems: string[]): string | undefined {
  if (raw === undefined) return undefined;
  let protocol: string | undefined;
  try {
    protocol = new URL(raw).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    // The value may hold a password: never echo it.
    problems.push('DATABASE_URL: must be a postgres:// or postgresql:// connection string (unset it to use the embedded database)');
    return undefined;
  }
  return raw;
}

function parsePlatformOrigin(raw: string | undefined, problems: string[]): string | undefined {
  if (raw === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  const valid =
    url !== undefined &&
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.username === '' &&
    url.password === '' &&
    url.pathname === '/' &&
    url.search === '' &&
    url.hash === '';
  if (!valid) {
    problems.push(
      `PLATFORM_ORIGIN: ${JSON.stringify(raw)} is not an http(s) origin (scheme, host and optional port, no path), for example http://127.0.0.1:4000`,
    );
    return undefined;
  }
  return url!.origin;
}

function parseEncryptionKeys(
  env: NodeJS.ProcessEnv,
  production: boolean,
  problems: string[],
): { encryptionKey?: string; previousEncryptionKeys: string[] } {
  const key = read(env, 'ENCRYPTION_KEY');
  let encryptionKey: string | undefined;
  if (key === undefined) {
    if (production) {
      problems.push(`ENCRYPTION_KEY is required in production (NODE_ENV=production): ${MAKE_KEY_HINT}`);
    }
  } else if (!isEncryptionKey(key)) {
    problems.push(
      `ENCRYPTION_KEY: must be exactly 64 hex characters (32 bytes); the value given has ${key.length} characters${/^[0-9a-fA-F]*$/.test(key) ? '' : ' and is not hexadecimal'}`,
    );
  } else {
    encryptionKey = key.toLowerCase();
  }

  const previousEncryptionKeys: string[] = [];
  const previousRaw = read(env, 'ENCRYPTION_KEY_PREVIOUS');
  if (previousRaw !== undefined) {
    const parts = previousRaw.split(',').map((part) => part.trim());
    parts.forEach((part, index) => {
      if (part === '') return;
      if (!isEncryptionKey(part)) {
        problems.push(`ENCRYPTION_KEY_PREVIOUS: entry ${index + 1} must be exactly 64 hex characters (32 bytes)`);
        return;
      }
      const normalised = part.toLowerCase();
      if (normalised !== encryptionKey && !previousEncryptionKeys.includes(normalised)) previousEncryptionKeys.push(normalised);
    });
    if (key === undefined && previousEncryptionKeys.length > 0) {
      problems.push(
        'ENCRYPTION_KEY_PREVIOUS: is set but ENCRYPTION_KEY is not; previous keys are only used during a rotation to a new ENCRYPTION_KEY',
      );
    }
  }
  return { encryptionKey, previousEncryptionKeys };
}

function parseLogLevel(raw: string | undefined, problems: string[]): string {
  if (raw === undefined) return DEFAULT_LOG_LEVEL;
  const level = raw.toLowerCase();
  if (!LOG_LEVELS.includes(level)) {
    problems.push(`LOG_LEVEL: ${JSON.stringify(raw)} is not a log level (one of ${LOG_LEVELS.join(', ')})`);
    return DEFAULT_LOG_LEVEL;
  }
  return level;
}

/**
 * The rule of `mercato start` and `mercato worker` outside production (docs/secrets.md): without ENCRYPTION_KEY they
 * refuse to start as soon as a provider of the app has a secret field (`secretFields`, as `provider.field`), because
 * those values would be stored unencrypted. Returns that problem, or undefined. A key that is set but malformed, and a
 * missing key under NODE_ENV=production, are reported by loadRuntimeEnv instead; `dev` makes its own key.
 */
export function missingKeyProblem(env: NodeJS.ProcessEnv, options: { mode: RunMode; secretFields: readonly string[] }): string | undefined {
  if (options.mode !== 'start' && options.mode !== 'worker') return undefined;
  if (read(env, 'ENCRYPTION_KEY') !== undefined || read(env, 'NODE_ENV') === 'production') return undefined;
  if (options.secretFields.length === 0) return undefined;
  const shown =
    options.secretFields.slice(0, 5).join(', ') + (options.secretFields.length > 5 ? `, +${options.secretFields.length - 5} more` : '');
  return `ENCRYPTION_KEY is required by \`mercato ${options.mode}\` because providers of this app have secret fields (${shown}), which must not be stored unencrypted: ${MAKE_KEY_HINT}`;
}

/**
 * The database variables: DATABASE_URL (trimmed, must be postgres:// or postgresql://; unset → embedded PGlite) and
 * MERCATO_DATA_DIR (project-relative, default `.mercato/db`). Shared by loadRuntimeEnv and `mercato migrate`.
 */
export function readDatabaseEnv(env: NodeJS.ProcessEnv, projectDir: string, problems: string[]): { databaseUrl?: string; dataDir: string } {
  const databaseUrl = parseDatabaseUrl(read(env, 'DATABASE_URL'), problems);
  const dataDirRaw = read(env, 'MERCATO_DATA_DIR');
  const dataDir = dataDirRaw === undefined ? join(projectDir, '.mercato', 'db') : resolve(projectDir, dataDirRaw);
  return databaseUrl === undefined ? { dataDir } : { databaseUrl, dataDir };
}

/**
 * Read and validate the environment once at start-up. Throws ConfigError listing every problem.
 * Platform credentials (PLATFORM_API_KEY, HOST, ...) are resolved by resolvePlatform() in ./platform.ts.
 */
export function loadRuntimeEnv(env: NodeJS.ProcessEnv, options: { projectDir: string; mode: RunMode }): RuntimeEnv {
  const problems: string[] = [];
  const nodeEnv = read(env, 'NODE_ENV') ?? (options.mode === 'test' ? 'test' : 'development');
  const production = nodeEnv === 'production';
  const portVariable = readAliased(env, PORT_VARIABLES, problems, (v) => String(Number(v)));
  const port = parsePort(portVariable?.value, problems, portVariable?.name);
  const bindAddress = parseBindAddress(read(env, 'MERCATO_BIND_ADDRESS'), options.mode, problems);
  const { databaseUrl, dataDir } = readDatabaseEnv(env, options.projectDir, problems);
  const platformOrigin = parsePlatformOrigin(read(env, 'PLATFORM_ORIGIN'), problems);
  const keys = parseEncryptionKeys(env, production, problems);
  const logLevel = parseLogLevel(read(env, 'LOG_LEVEL'), problems);
  const metricsToken = read(env, 'MERCATO_METRICS_TOKEN');
  const metricsPortRaw = read(env, 'MERCATO_METRICS_PORT');
  const metricsPort = metricsPortRaw === undefined ? undefined : parseNamedPort('MERCATO_METRICS_PORT', metricsPortRaw, problems);
  const dbPoolSize = parsePoolSize(read(env, 'MERCATO_DB_POOL_SIZE'), problems);
  const migrateOnStart = parseBoolean('MERCATO_MIGRATE_ON_START', read(env, 'MERCATO_MIGRATE_ON_START'), true, problems);
  const http = parseHttpLimits(env, problems);
  if (problems.length > 0) throw new ConfigError(problems);

  const result: RuntimeEnv = {
    nodeEnv,
    production,
    port,
    bindAddress,
    dataDir,
    previousEncryptionKeys: keys.previousEncryptionKeys,
    logLevel,
    dbPoolSize,
    migrateOnStart,
    http,
  };
  if (databaseUrl !== undefined) result.databaseUrl = databaseUrl;
  if (platformOrigin !== undefined) result.platformOrigin = platformOrigin;
  if (keys.encryptionKey !== undefined) result.encryptionKey = keys.encryptionKey;
  if (metricsToken !== undefined) result.metricsToken = metricsToken;
  if (metricsPort !== undefined) result.metricsPort = metricsPort;
  return result;
}
