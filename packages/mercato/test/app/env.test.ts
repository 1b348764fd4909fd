import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRuntimeEnv, type RunMode } from '../../src/app/env.ts';
import { ConfigError } from '../../src/app/validate.ts';
import { thrown } from '../kit/index.ts';

const projectDir = '/srv/shop-app';
const KEY = 'a'.repeat(64);
const OLD_KEY = '0123456789abcdef'.repeat(4);

function load(env: NodeJS.ProcessEnv, mode: RunMode = 'dev') {
  return loadRuntimeEnv(env, { projectDir, mode });
}

describe('loadRuntimeEnv defaults', () => {
  it('fills every default in development', () => {
    const env = load({});
    expect(env).toEqual({
      nodeEnv: 'development',
      production: false,
      port: 3000,
      bindAddress: '127.0.0.1',
      dataDir: join(projectDir, '.mercato', 'db'),
      previousEncryptionKeys: [],
      logLevel: 'info',
      dbPoolSize: 10,
      migrateOnStart: true,
      http: {
        headersTimeoutMs: 15_000,
        requestTimeoutMs: 60_000,
        keepAliveTimeoutMs: 65_000,
        maxConnections: 2048,
        maxBodyBytesInFlight: 64 * 1024 * 1024,
      },
    });
  });

  it('defaults NODE_ENV to test in test mode', () => {
    expect(load({}, 'test').nodeEnv).toBe('test');
  });

  it('binds 127.0.0.1 in dev and test, 0.0.0.0 in start, worker, migrate and check', () => {
    expect(load({}, 'dev').bindAddress).toBe('127.0.0.1');
    expect(load({}, 'test').bindAddress).toBe('127.0.0.1');
    for (const mode of ['start', 'worker', 'migrate', 'check'] as const) expect(load({}, mode).bindAddress).toBe('0.0.0.0');
  });

  it('treats empty variables as unset', () => {
    const env = load({ PORT: '', DATABASE_URL: '', PLATFORM_ORIGIN: ' ', ENCRYPTION_KEY: '', LOG_LEVEL: '' });
    expect(env.port).toBe(3000);
    expect(env.databaseUrl).toBeUndefined();
    expect(env.platformOrigin).toBeUndefined();
    expect(env.encryptionKey).toBeUndefined();
    expect(env.logLevel).toBe('info');
  });
});

describe('loadRuntimeEnv values', () => {
  it('reads every variable', () => {
    const env = load(
      {
        NODE_ENV: 'production',
        PORT: '8080',
        MERCATO_BIND_ADDRESS: '::',
        DATABASE_URL: 'postgresql://user:pw@db:5432/mercato',
        MERCATO_DATA_DIR: 'data/pg',
        PLATFORM_ORIGIN: 'http://127.0.0.1:4000/',
        ENCRYPTION_KEY: KEY.toUpperCase(),
        ENCRYPTION_KEY_PREVIOUS: `${OLD_KEY}, ${'b'.repeat(64)}`,
        LOG_LEVEL: 'DEBUG',
        MERCATO_DB_POOL_SIZE: '40',
        MERCATO_MIGRATE_ON_START: 'no',
        MERCATO_HTTP_HEADERS_TIMEOUT_MS: '5000',
        MERCATO_HTTP_REQUEST_TIMEOUT_MS: '30000',
        MERCATO_HTTP_KEEP_ALIVE_TIMEOUT_MS: '75000',
        MERCATO_HTTP_MAX_CONNECTIONS: '500',
        MERCATO_MAX_BODY_BYTES_IN_FLIGHT: '16777216',
      },
      'start',
    );
    expect(env).toEqual({
      nodeEnv: 'production',
      production: true,
      port: 8080,
      bindAddress: '::',
      databaseUrl: 'postgresql://user:pw@db:5432/mercato',
      dataDir: join(projectDir, 'data', 'pg'),
      platformOrigin: 'http://127.0.0.1:4000',
      encryptionKey: KEY,
      previousEncryptionKeys: [OLD_KEY, 'b'.repeat(64)],
      logLevel: 'debug',
      dbPoolSize: 40,
      migrateOnStart: false,
      http: {
        headersTimeoutMs: 5000,
        requestTimeoutMs: 30_000,
        keepAliveTimeoutMs: 75_000,
        maxConnections: 500,
        maxBodyBytesInFlight: 16_777_216,
      },
    });
  });

  it('refuses HTTP limits out of range, and a request timeout shorter than the headers timeout, naming each variable', () => {
    const error = thrown(
      () =>
        load({
          MERCATO_HTTP_HEADERS_TIMEOUT_MS: '10',
          MERCATO_HTTP_MAX_CONNECTIONS: 'lots',
          MERCATO_MAX_BODY_BYTES_IN_FLIGHT: '1000',
          MERCATO_HTTP_KEEP_ALIVE_TIMEOUT_MS: '-5',
        }),
      ConfigError,
    );
    expect(error.problems).toEqual([
      expect.stringMatching(/^MERCATO_HTTP_HEADERS_TIMEOUT_MS: "10" is not a duration in milliseconds \(an integer from 1000 to 3600000\)/),
      expect.stringMatching(/^MERCATO_HTTP_KEEP_ALIVE_TIMEOUT_MS: "-5"/),
      expect.stringMatching(/^MERCATO_HTTP_MAX_CONNECTIONS: "lots" is not a connection count/),
      expect.stringMatching(/^MERCATO_MAX_BODY_BYTES_IN_FLIGHT: "1000" is not a byte count/),
    ]);
    expect(thrown(() => load({ MERCATO_HTTP_HEADERS_TIMEOUT_MS: '70000' }), ConfigError).problems).toEqual([
      'MERCATO_HTTP_REQUEST_TIMEOUT_MS (60000) must not be shorter than MERCATO_HTTP_HEADERS_TIMEOUT_MS (70000)',
    ]);
  });

  it('accepts port 0 (any free port) and postgres:// URLs', () => {
    const env = load({ PORT: '0', DATABASE_URL: 'postgres://localhost/db' });
    expect(env.port).toBe(0);
    expect(env.databaseUrl).toBe('postgres://localhost/db');
  });

  it('keeps an absolute MERCATO_DATA_DIR', () => {
    expect(load({ MERCATO_DATA_DIR: '/var/lib/mercato' }).dataDir).toBe('/var/lib/mercato');
  });

  it('accepts host names and IPv6 in brackets as bind address', () => {
    expect(load({ MERCATO_BIND_ADDRESS: 'localhost' }).bindAddress).toBe('localhost');
    expect(load({ MERCATO_BIND_ADDRESS: '[::1]' }).bindAddress).toBe('::1');
  });

  it('accepts every pino level and silent', () => {
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      expect(load({ LOG_LEVEL: level }).logLevel).toBe(level);
  });

  it('drops empty and duplicate previous keys and the current key from ENCRYPTION_KEY_PREVIOUS', () => {
    const env = load({ ENCRYPTION_KEY: KEY, ENCRYPTION_KEY_PREVIOUS: `${OLD_KEY},,${OLD_KEY.toUpperCase()},${KEY}` });
    expect(env.previousEncryptionKeys).toEqual([OLD_KEY]);
  });

  it('allows a missing ENCRYPTION_KEY outside production, even in start mode', () => {
    expect(load({ NODE_ENV: 'development' }, 'start').encryptionKey).toBeUndefined();
  });
});

describe('loadRuntimeEnv errors', () => {
  it('reads the port from BACKEND_PORT too (the platform CLI sets it); PORT and BACKEND_PORT that disagree name both', () => {
    expect(load({ BACKEND_PORT: '4321' }).port).toBe(4321);
    expect(load({ PORT: '4321', BACKEND_PORT: '04321' }).port).toBe(4321);
    expect(thrown(() => load({ PORT: '4321', BACKEND_PORT: '4322' }), ConfigError).problems).toEqual([
      expect.stringMatching(/^PORT and BACKEND_PORT are both set and disagree/),
    ]);
    expect(thrown(() => load({ BACKEND_PORT: 'x' }), ConfigError).problems).toEqual([
      expect.stringMatching(/^BACKEND_PORT: "x" is not a port number/),
    ]);
  });

  it.each(['abc', '-1', '65536', '30.5', '3000x'])('rejects PORT=%s', (port) => {
    const error = thrown(() => load({ PORT: port }), ConfigError);
    expect(error.problems).toEqual([expect.stringMatching(/^PORT: .* is not a port number/)]);
  });

  it('rejects a malformed bind address', () => {
    expect(thrown(() => load({ MERCATO_BIND_ADDRESS: 'not an address!' }), ConfigError).problems[0]).toMatch(/^MERCATO_BIND_ADDRESS:/);
  });

  it.each(['mysql://u:hunter2@db/x', 'hunter2-not-a-url', 'http://db:5432/x'])('rejects DATABASE_URL=%s without echoing it', (url) => {
    const error = thrown(() => load({ DATABASE_URL: url }), ConfigError);
    expect(error.problems).toEqual([expect.stringMatching(/^DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\//)]);
    expect(error.message).not.toContain('hunter2');
  });

  it.each(['ftp://sim:4000', 'http://sim:4000/admin', 'http://sim:4000?x=1', 'sim:4000', 'http://u:p@sim:4000'])(
    'rejects PLATFORM_ORIGIN=%s',
    (origin) => {
      expect(thrown(() => load({ PLATFORM_ORIGIN: origin }), ConfigError).problems[0]).toMatch(
        /^PLATFORM_ORIGIN: .* is not an http\(s\) origin/,
      );
    },
  );

  it.each([
    ['too short', 'a'.repeat(63)],
    ['too long', 'a'.repeat(65)],
    ['not hex', `${'a'.repeat(63)}g`],
  ])('rejects an ENCRYPTION_KEY that is %s, without echoing it', (_label, key) => {
    const error = thrown(() => load({ ENCRYPTION_KEY: key }), ConfigError);
    expect(error.problems).toEqual([expect.stringMatching(/^ENCRYPTION_KEY: must be exactly 64 hex characters/)]);
    expect(error.message).not.toContain(key);
  });

  it('refuses a missing ENCRYPTION_KEY when NODE_ENV=production', () => {
    const error = thrown(() => load({ NODE_ENV: 'production' }, 'start'), ConfigError);
    expect(error.problems).toEqual([expect.stringMatching(/^ENCRYPTION_KEY is required in production/)]);
  });

  it('rejects a malformed ENCRYPTION_KEY_PREVIOUS entry by position, without echoing it', () => {
    const bad = 'f'.repeat(40);
    const error = thrown(() => load({ ENCRYPTION_KEY: KEY, ENCRYPTION_KEY_PREVIOUS: `${OLD_KEY},${bad}` }), ConfigError);
    expect(error.problems).toEqual(['ENCRYPTION_KEY_PREVIOUS: entry 2 must be exactly 64 hex characters (32 bytes)']);
    expect(error.message).not.toContain(bad);
    expect(error.message).not.toContain(OLD_KEY);
  });

  it('rejects ENCRYPTION_KEY_PREVIOUS without ENCRYPTION_KEY', () => {
    expect(thrown(() => load({ ENCRYPTION_KEY_PREVIOUS: OLD_KEY }), ConfigError).problems[0]).toMatch(
      /^ENCRYPTION_KEY_PREVIOUS: is set but ENCRYPTION_KEY is not/,
    );
  });

  it('rejects an unknown LOG_LEVEL', () => {
    expect(thrown(() => load({ LOG_LEVEL: 'verbose' }), ConfigError).problems[0]).toMatch(/^LOG_LEVEL: "verbose" is not a log level/);
  });

  it('reports every problem together', () => {
    const error = thrown(
      () => load({ NODE_ENV: 'production', PORT: 'x', DATABASE_URL: 'mysql://x', PLATFORM_ORIGIN: 'nope', LOG_LEVEL: 'loud' }, 'start'),
      ConfigError,
    );
    expect(error.problems.map((problem) => problem.split(/[: ]/)[0])).toEqual([
      'PORT',
      'DATABASE_URL',
      'PLATFORM_ORIGIN',
      'ENCRYPTION_KEY',
      'LOG_LEVEL',
    ]);
    expect(error.message).toContain('5 problems');
  });
});

describe('metrics variables', () => {
  it('MERCATO_METRICS_TOKEN and MERCATO_METRICS_PORT are read (trimmed); unset or empty is absent', () => {
    expect(load({ MERCATO_METRICS_TOKEN: '  tok-1  ', MERCATO_METRICS_PORT: '9464' }, 'worker')).toMatchObject({
      metricsToken: 'tok-1',
      metricsPort: 9464,
    });
    const none = load({ MERCATO_METRICS_TOKEN: ' ', MERCATO_METRICS_PORT: '' }, 'worker');
    expect('metricsToken' in none || 'metricsPort' in none).toBe(false);
  });

  it.each(['abc', '-1', '65536', '9464x'])('rejects MERCATO_METRICS_PORT=%s, and never echoes the token', (port) => {
    const error = thrown(() => load({ MERCATO_METRICS_PORT: port, MERCATO_METRICS_TOKEN: 'secret-token-value' }, 'worker'), ConfigError);
    expect(error.problems).toEqual([
      expect.stringMatching(/^MERCATO_METRICS_PORT: .* is not a port number \(an integer from 0 to 65535\)$/),
    ]);
    expect(error.message).not.toContain('secret-token-value');
  });
});
