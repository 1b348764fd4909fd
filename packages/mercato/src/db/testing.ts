/**
 * Test harness: every store test runs on PGlite always, and on PostgreSQL whenever DATABASE_URL is set.
 * Each test file gets its own database (PostgreSQL: a fresh database with a random suffix, dropped at the end).
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe } from 'vitest';
import { type Database, type EngineKind, openDatabase } from './engine.ts';
import { migrate } from './migrate.ts';
import { PGLITE_TEMPLATE_DIR } from './pglite-template.ts';

export function testEngines(): EngineKind[] {
  return process.env.DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}

export interface TestDatabase {
  kind: EngineKind;
  db: Database;
  /** PostgreSQL connection string of this database (undefined for PGlite). */
  url?: string;
  /** Empties every Mercato table (keeps the schema). */
  reset(): Promise<void>;
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function createTestDatabase(kind: EngineKind, options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  let db: Database;
  let url: string | undefined;
  let dropServerDb: (() => Promise<void>) | undefined;
  if (kind === 'pglite') {
    // in memory; from the package's migrated template when the test wants the migrated schema (about 1.5 s instead
    // of initdb's 6 and the migrations'; db/pglite-template.ts), which migrate() below then checks
    db = await openDatabase(options.migrate !== false ? { template: PGLITE_TEMPLATE_DIR } : {});
  } else {
    const serverUrl = process.env.DATABASE_URL;
    if (!serverUrl) throw new Error('createTestDatabase(postgres) needs DATABASE_URL');
    const name = `mercato_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
    const admin = await openDatabase({ url: serverUrl, poolSize: 1 });
    try {
      await admin.exec(`create database ${name}`);
    } finally {
      await admin.close();
    }
    url = withDatabase(serverUrl, name);
    db = await openDatabase({ url, poolSize: 10, applicationName: 'mercato-test' });
    dropServerDb = async () => {
      const admin2 = await openDatabase({ url: serverUrl, poolSize: 1 });
      try {
        await admin2.exec(`drop database if exists ${name} with (force)`);
      } finally {
        await admin2.close();
      }
    };
  }
  if (options.migrate !== false) await migrate(db);
  let dropped = false;
  return {
    kind,
    db,
    url,
    async reset() {
      const tables = await db.query<{ tablename: string }>(
        sql`select tablename from pg_tables where schemaname = 'public' and tablename <> 'mercato_migrations'`,
      );
      if (tables.length === 0) return;
      const statement = `truncate ${tables.map((t) => `"${t.tablename}"`).join(', ')} cascade`;
      // A worker of the previous test may still hold row locks (a claim, a heartbeat) while TRUNCATE takes its table
      // locks one by one: PostgreSQL can then pick the TRUNCATE as a deadlock victim. It is safe to try again.
      for (let attempt = 1; ; attempt++) {
        try {
          await db.exec(statement);
          return;
        } catch (error) {
          const code = (error as { code?: string }).code;
          if (attempt >= 5 || (code !== '40P01' && code !== '55P03')) throw error;
          await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
        }
      }
    },
    async drop() {
      if (dropped) return;
      dropped = true;
      await db.close();
      await dropServerDb?.();
    },
  };
}

/**
 * Runs `fn` once per engine inside a `describe` block; `get()` returns that engine's database,
 * created before the block's tests and dropped after them.
 */
export function describeEngines(name: string, fn: (get: () => TestDatabase, kind: EngineKind) => void): void {
  for (const kind of testEngines()) {
    describe(`${name} [${kind}]`, () => {
      let current: TestDatabase | undefined;
      beforeAll(async () => {
        current = await createTestDatabase(kind);
      }, 120_000);
      afterAll(async () => {
        await current?.drop();
      }, 120_000);
      fn(() => {
        if (!current) throw new Error('test database not ready');
        return current;
      }, kind);
    });
  }
}
