/** Start-up (createRuntime, as `mercato dev`/`start`/`worker` run it): environment and platform problems are reported together. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { resolveStartup } from '../../src/app/startup.ts';
import { ConfigError } from '../../src/app/validate.ts';
import { createTestDatabase, testEngines } from '../../src/db/testing.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createRuntime } from '../../src/runtime.ts';

const app = defineApp();
const instance = app.defineConfig({ flows: { a: app.defineFlow({ name: 'a', input: z.object({}), run: () => 1 }) } });
const projectDir = () => mkdtempSync(join(tmpdir(), 'mercato-startup-'));

describe('start-up configuration problems', () => {
  it('createRuntime reports environment and platform problems in one ConfigError, before opening a database', async () => {
    const dir = projectDir();
    const error = await createRuntime({
      instance,
      projectDir: dir,
      mode: 'start',
      env: { NODE_ENV: 'production', PORT: 'eighty', PLATFORM_API_SECRET: 's' },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'PORT: "eighty" is not a port number (an integer from 0 to 65535)',
      expect.stringMatching(/^ENCRYPTION_KEY is required in production/),
      expect.stringMatching(/^PLATFORM_API_KEY: required in single-app mode/),
    ]);
  });

  it('resolveStartup returns the environment and the platform when both are valid', () => {
    const { env, platform } = resolveStartup(
      undefined,
      { PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's', PORT: '4000' },
      { projectDir: projectDir(), mode: 'check' },
    );
    expect(env.port).toBe(4000);
    expect(platform.apps.map((a) => a.apiKey)).toEqual(['k']);
  });

  it('MERCATO_DB_POOL_SIZE and MERCATO_MIGRATE_ON_START: defaults, values, and problems named', () => {
    const base = { PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's' };
    const read = (extra: Record<string, string>) =>
      resolveStartup(undefined, { ...base, ...extra }, { projectDir: projectDir(), mode: 'check' }).env;
    expect(read({})).toMatchObject({ dbPoolSize: 10, migrateOnStart: true });
    expect(read({ MERCATO_DB_POOL_SIZE: '25', MERCATO_MIGRATE_ON_START: 'false' })).toMatchObject({
      dbPoolSize: 25,
      migrateOnStart: false,
    });
    expect(read({ MERCATO_MIGRATE_ON_START: ' 0 ' }).migrateOnStart).toBe(false);
    const error = (() => {
      try {
        read({ MERCATO_DB_POOL_SIZE: '0', MERCATO_MIGRATE_ON_START: 'maybe' });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'MERCATO_DB_POOL_SIZE: "0" is not a connection count (an integer from 1 to 1000)',
      'MERCATO_MIGRATE_ON_START: "maybe" is not true or false',
    ]);
  });

  for (const kind of testEngines()) {
    it(`MERCATO_MIGRATE_ON_START=false refuses a database that lacks migrations, naming them, and starts once migrated (${kind})`, async () => {
      const database = await createTestDatabase(kind, { migrate: false });
      try {
        const start = () =>
          createRuntime({
            instance,
            projectDir: projectDir(),
            mode: 'worker',
            db: database.db,
            env: { PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's', MERCATO_MIGRATE_ON_START: 'false' },
          });
        const error = await start().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as ConfigError).message).toMatch(
          /MERCATO_MIGRATE_ON_START is false and the database lacks \d+ migration\(s\) of this version \(0000_init, .*\): run `mercato migrate` first/,
        );
        const [{ present }] = await database.db.query<{ present: boolean }>(sql`select to_regclass('runs') is not null as present`);
        expect(present).toBe(false); // nothing was applied
        await migrate(database.db);
        const runtime = await start();
        await runtime.close();
      } finally {
        await database.drop();
      }
    }, 60_000);
  }

  it.runIf(!!process.env.DATABASE_URL)(
    'MERCATO_DB_POOL_SIZE sizes the pool of a runtime on PostgreSQL',
    async () => {
      const database = await createTestDatabase('postgres');
      try {
        const runtime = await createRuntime({
          instance,
          projectDir: projectDir(),
          mode: 'worker',
          env: { PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's', DATABASE_URL: database.url!, MERCATO_DB_POOL_SIZE: '3' },
        });
        try {
          expect(runtime.db.poolStats?.().max).toBe(3);
          // three statements at once use the three connections; a fourth waits for one
          await Promise.all(Array.from({ length: 4 }, () => runtime.db.query(sql`select pg_sleep(0.2)`)));
          const [{ n }] = await database.db.query<{ n: number }>(
            sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'mercato-worker'`,
          );
          expect(n).toBe(3);
        } finally {
          await runtime.close();
        }
      } finally {
        await database.drop();
      }
    },
    60_000,
  );
});
