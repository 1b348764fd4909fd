/**
 * The encryption key in every mode, with the real `mercato` command (docs/secrets.md, "The key"):
 * - `dev` without ENCRYPTION_KEY generates a key into its data folder (mode 0600) once, says so in one line, reuses it,
 *   never prints it, and encrypts with it; plaintext left by an older version is encrypted at the next start;
 * - `start` and `worker` refuse to start without a key when a provider of the app has a secret field (exit 1, a message
 *   that says how to make a key), and start without one when no provider has one.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/db/engine.ts';
import { migrate } from '../../src/db/migrate.ts';
import { silentLogger } from '../../src/logger.ts';
import { createSecrets, keyId } from '../../src/secrets/index.ts';
import { SHOP } from '../kit/index.ts';
import { dumpDatabase, findSecrets } from '../secrets/dump.ts';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../../bin/mercato.js');
const MINIMAL = resolve(here, '../fixtures/minimal-app');
// inside the workspace, so the app resolves `mercato` from its node_modules (test-artifacts/ is git-ignored)
const ROOT = resolve(here, `../../../../test-artifacts/encryption-key-${randomBytes(4).toString('hex')}`);
const DATA = mkdtempSync(join(tmpdir(), 'mercato-encryption-key-'));
const children: ChildProcess[] = [];

/** An app whose provider has a secret field. */
const SECRET_APP = join(ROOT, 'secret-app');
mkdirSync(SECRET_APP, { recursive: true });
writeFileSync(
  join(SECRET_APP, 'service.config.ts'),
  `import { defineApp, defineProvider } from 'mercato';
import { z } from 'zod';

const vault = defineProvider({
  name: 'vault',
  ui: { fields: { url: { type: 'text', label: 'URL' }, apiKey: { type: 'password', label: 'API key' } } },
  methods: {},
});
const app = defineApp({ providers: { vault } });

export default app.defineConfig({
  flows: { hello: app.defineFlow({ name: 'hello', input: z.object({}), run: () => 'hi' }) },
});
`,
);

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(ROOT, { recursive: true, force: true });
  rmSync(DATA, { recursive: true, force: true });
});

vi.setConfig({ testTimeout: 120_000 });

function env(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, MERCATO_SIM_PORT: '0', ...extra };
  for (const [k, v] of Object.entries(out)) if (v === undefined) delete out[k];
  return out;
}

const freshDir = (name: string) => join(mkdtempSync(join(DATA, `${name}-`)), 'db');

function run(args: string[], cwd: string, environment: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, env: environment, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Starts a serving command; `ready` resolves with its output once `until` matches it. */
function serve(args: string[], cwd: string, environment: NodeJS.ProcessEnv, until: RegExp) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: environment, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const ready = new Promise<string>((resolveReady, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (until.test(output)) resolveReady(output);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited with ${code}:\n${output}`)));
  });
  const stop = async () => {
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    return output;
  };
  return { ready, stop, output: () => output };
}

/** `mercato dev` on the secret app; ready once its banner (the last line before the notes is `worker:`) is out. */
async function dev(dataDir: string | undefined, extra: Record<string, string> = {}) {
  const s = serve(
    ['dev', '--port', '0', '--no-watch'],
    SECRET_APP,
    env({ MERCATO_DATA_DIR: dataDir, ...extra }),
    /worker: +in-process.*\n/,
  );
  const output = await s.ready;
  const url = /listening on (http:\/\/\S+)/.exec(output)![1]!;
  const token = async () => {
    const res = await fetch(`${url}/__mercato/preview/session-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ shop: SHOP }),
    });
    return ((await res.json()) as { token: string }).token;
  };
  const api = async (method: string, path: string, json?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${await token()}`, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  // notes follow the banner in the same write or the next one
  await new Promise((r) => setTimeout(r, 200));
  return { ...s, api };
}

/** Reads the PGlite database `dev` left (after it stopped). */
async function withDatabase<T>(dataDir: string, fn: (db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>): Promise<T> {
  const db = await openDatabase({ dataDir });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const generatedLine =
  /^note: generated an encryption key for stored secrets in (.+); keep it with the data folder \(see docs\/secrets\.md\)$/gm;

describe('mercato dev without ENCRYPTION_KEY', () => {
  it('generates a key into its data folder (mode 0600) once, says so in one line, reuses it, never prints it', async () => {
    const dataDir = freshDir('generate');
    const keyFile = join(dataDir, 'encryption-key');
    const password = `pw-${randomBytes(12).toString('hex')}`;

    const first = await dev(dataDir);
    expect(existsSync(keyFile)).toBe(true);
    const key = readFileSync(keyFile, 'utf8');
    expect(key).toMatch(/^[0-9a-f]{64}\n$/);
    if (process.platform !== 'win32') expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    const saved = await first.api('PUT', '/api/providers/vault', { config: { url: 'https://vault.example', apiKey: password } });
    expect(saved.status).toBe(200);
    const firstOutput = await first.stop();
    expect([...firstOutput.matchAll(generatedLine)].map((m) => m[1])).toEqual([keyFile]);
    expect(firstOutput).not.toContain('ENCRYPTION_KEY is not set');

    const second = await dev(dataDir);
    const providers = await second.api('GET', '/api/providers');
    expect(providers.body.providers[0]).toMatchObject({
      name: 'vault',
      configured: true,
      configError: null,
      config: { url: 'https://vault.example' },
    });
    const secondOutput = await second.stop();
    expect(secondOutput).not.toMatch(/generated an encryption key/);
    expect(readFileSync(keyFile, 'utf8')).toBe(key);

    for (const output of [firstOutput, secondOutput]) {
      expect(output).not.toContain(key.trim());
      expect(output.toLowerCase()).not.toContain(key.trim().slice(0, 16));
      expect(output).not.toContain(password);
    }
    await withDatabase(dataDir, async (db) => {
      const [row] = await db.query<{ config: any }>(sql`select config from provider_configs`);
      expect(row!.config).toMatchObject({ v: 1, kid: keyId(key.trim()) });
      const dump = await dumpDatabase(db);
      expect(dump.rows.provider_configs).toBe(1);
      expect(findSecrets(dump.haystacks, { password, key: key.trim() })).toEqual([]);
    });
  });

  it('names the key file relative to the project when it is inside it (the default data folder)', async () => {
    const s = await dev(undefined);
    const output = await s.stop();
    expect([...output.matchAll(generatedLine)].map((m) => m[1])).toEqual(['.mercato/db/encryption-key']);
    expect(readFileSync(join(SECRET_APP, '.mercato', 'db', 'encryption-key'), 'utf8')).toMatch(/^[0-9a-f]{64}\n$/);
  });

  it('encrypts at the next start what an older version stored as plaintext, and loses nothing', async () => {
    const dataDir = freshDir('plaintext');
    const password = `pw-${randomBytes(12).toString('hex')}`;
    const oldToken = `shpat_${randomBytes(16).toString('hex')}`;
    const config = { url: 'https://vault.example', apiKey: password };
    // the database as a dev without a key left it: v0 values
    await withDatabase(dataDir, async (db) => {
      await migrate(db);
      await db.query(sql`insert into provider_configs (app_handle, shop, provider, config)
        values ('default', ${SHOP}, 'vault', ${JSON.stringify({ v: 0, plain: config })}::jsonb)`);
      await db.query(sql`insert into installations (app_handle, shop, access_token, scopes, status)
        values ('default', 'old-shop.myshopify.com', ${JSON.stringify({ v: 0, plain: oldToken })}::jsonb, 'read_products', 'active')`);
    });
    expect(existsSync(join(dataDir, 'encryption-key'))).toBe(false);

    const s = await dev(dataDir);
    const providers = await s.api('GET', '/api/providers');
    expect(providers.body.providers[0]).toMatchObject({ configured: true, configError: null, config: { url: 'https://vault.example' } });
    const output = await s.stop();
    expect(output).toMatch(generatedLine);
    expect(output).toContain('note: encrypted 2 stored secret(s) that an earlier version had written without a key');

    const key = readFileSync(join(dataDir, 'encryption-key'), 'utf8').trim();
    const secrets = createSecrets({ key, production: false, logger: silentLogger() });
    await withDatabase(dataDir, async (db) => {
      const [provider] = await db.query<{ config: any }>(sql`select config from provider_configs`);
      expect(provider!.config).toMatchObject({ v: 1, kid: keyId(key) });
      expect(secrets.decrypt(provider!.config, `provider:default:${SHOP}:vault`)).toEqual(config);
      const [installation] = await db.query<{ token: any }>(
        sql`select access_token as token from installations where shop = 'old-shop.myshopify.com'`,
      );
      expect(installation!.token).toMatchObject({ v: 1, kid: keyId(key) });
      expect(secrets.decrypt(installation!.token, 'installation:default:old-shop.myshopify.com')).toBe(oldToken);
      const dump = await dumpDatabase(db);
      expect(findSecrets(dump.haystacks, { password, oldToken, key })).toEqual([]);
    });
  });

  it('with ENCRYPTION_KEY set, uses it and makes no key file', async () => {
    const dataDir = freshDir('own-key');
    const key = randomBytes(32).toString('hex');
    const s = await dev(dataDir, { ENCRYPTION_KEY: key });
    expect((await s.api('PUT', '/api/providers/vault', { config: { url: 'https://v.example', apiKey: 'k' } })).status).toBe(200);
    const output = await s.stop();
    expect(output).not.toMatch(/encryption key/);
    expect(existsSync(join(dataDir, 'encryption-key'))).toBe(false);
    await withDatabase(dataDir, async (db) => {
      const [row] = await db.query<{ config: any }>(sql`select config from provider_configs`);
      expect(row!.config).toMatchObject({ v: 1, kid: keyId(key) });
    });
  });

  it('a key file that does not hold a key stops dev with a clear message that does not echo it', () => {
    const dataDir = freshDir('bad-file');
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, 'encryption-key'), 'hunter2-not-a-key\n');
    const r = run(['dev', '--port', '0', '--no-watch'], SECRET_APP, env({ MERCATO_DATA_DIR: dataDir }));
    expect(r.code).toBe(1);
    expect(r.err).toContain(`${join(dataDir, 'encryption-key')} does not hold an encryption key (64 hex characters)`);
    expect(r.err).not.toContain('hunter2');
    expect(r.err).not.toMatch(/^\s+at /m);
    expect(readFileSync(join(dataDir, 'encryption-key'), 'utf8')).toBe('hunter2-not-a-key\n');
  });
});

describe('mercato start and mercato worker without ENCRYPTION_KEY', () => {
  const platform = { PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's' };

  it.each(['start', 'worker'])(
    '%s refuses when a provider has a secret field: exit 1, how to make a key, before opening the database',
    (command) => {
      const dataDir = freshDir(`refuse-${command}`);
      const r = run(
        [command, ...(command === 'start' ? ['--port', '0'] : [])],
        SECRET_APP,
        env({ ...platform, MERCATO_DATA_DIR: dataDir }),
      );
      expect(r.code).toBe(1);
      expect(r.err).toContain(`mercato ${command}: Invalid Mercato configuration (1 problem):`);
      expect(r.err).toContain(
        `ENCRYPTION_KEY is required by \`mercato ${command}\` because providers of this app have secret fields (vault.apiKey)`,
      );
      expect(r.err).toContain('`openssl rand -hex 32`');
      expect(r.err).not.toMatch(/^\s+at /m);
      expect(r.out).toBe('');
      expect(existsSync(dataDir)).toBe(false);
    },
  );

  it('the refusal lists the other problems of the environment with it; production gives its own rule', () => {
    const both = run(['start'], SECRET_APP, env({ PLATFORM_API_KEY: 'k', LOG_LEVEL: 'loud', MERCATO_DATA_DIR: freshDir('both') }));
    expect(both.code).toBe(1);
    expect(both.err).toContain('ENCRYPTION_KEY is required by `mercato start`');
    expect(both.err).toContain('LOG_LEVEL: "loud" is not a log level');
    expect(both.err).toContain('PLATFORM_API_SECRET');
    for (const cwd of [SECRET_APP, MINIMAL]) {
      const production = run(['worker'], cwd, env({ ...platform, NODE_ENV: 'production', MERCATO_DATA_DIR: freshDir('production') }));
      expect(production.code, cwd).toBe(1);
      expect(production.err, cwd).toContain('ENCRYPTION_KEY is required in production (NODE_ENV=production)');
      expect(production.err, cwd).toContain('`openssl rand -hex 32`');
    }
  });

  it('start and worker run without a key when no provider has a secret field (with one warning), and with a key otherwise', async () => {
    const key = randomBytes(32).toString('hex');
    for (const [cwd, extra] of [
      [MINIMAL, {}],
      [SECRET_APP, { ENCRYPTION_KEY: key }],
    ] as const) {
      const dataDir = freshDir('serve');
      const start = serve(['start', '--port', '0'], cwd, env({ ...platform, ...extra, MERCATO_DATA_DIR: dataDir }), /listening on/);
      await start.ready;
      const startOutput = await start.stop();
      const worker = serve(['worker'], cwd, env({ ...platform, ...extra, MERCATO_DATA_DIR: dataDir }), /concurrency \d+/);
      await worker.ready;
      const workerOutput = await worker.stop();
      for (const output of [startOutput, workerOutput]) {
        // the warning that what is stored (the access tokens of installations) is plaintext: only without a key
        expect(output.includes('ENCRYPTION_KEY is not set: secrets are stored as plaintext'), cwd).toBe(cwd === MINIMAL);
        expect(output).not.toContain(key);
      }
    }
  });
});
