/**
 * A new embedded database as a copy of the build's migrated template (src/db/pglite-template.ts): made once, reused
 * while its key holds, copied only into a folder that holds no database, ignored when its key is not this code's, and
 * the database it gives is the migrated one (every migration applied and checked, log search's pg_trgm working).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/engine.ts';
import { loadMigrations, migrate, migrationStatus } from '../../src/db/migrate.ts';
import { PGLITE_TEMPLATE_DIR, buildTemplate, seedFromTemplate, templateKey, templateUsable } from '../../src/db/pglite-template.ts';

const ROOT = mkdtempSync(join(tmpdir(), 'mercato-pglite-template-'));
const TEMPLATE = join(ROOT, 'template');
let made = 0;

async function create(dataDir: string) {
  made++;
  const db = await openDatabase({ dataDir, template: false });
  try {
    await migrate(db);
  } finally {
    await db.close();
  }
}

beforeAll(async () => {
  expect(await buildTemplate(TEMPLATE, create)).toBe(true);
}, 120_000);

afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

describe('the embedded database template', () => {
  it('is made once and kept while its key holds; nothing of the build is left beside it', async () => {
    expect(made).toBe(1);
    expect(templateUsable(TEMPLATE)).toBe(true);
    expect(await buildTemplate(TEMPLATE, create)).toBe(false);
    expect(made).toBe(1);
    expect(JSON.parse(readFileSync(join(TEMPLATE, 'mercato-template.json'), 'utf8')).key).toBe(templateKey());
    expect(readdirSync(ROOT)).toEqual(['template']);
    expect(readdirSync(TEMPLATE).sort()).toEqual(['data', 'data.tar.gz', 'mercato-template.json']);
  });

  it('gives a database in memory the migrated schema from its dump (the test suite’s databases)', async () => {
    const db = await openDatabase({ template: TEMPLATE });
    try {
      expect(await migrationStatus(db)).toMatchObject({ pending: [] });
      const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from mercato_migrations`);
      expect(n).toBe(loadMigrations().length);
    } finally {
      await db.close();
    }
    // without a template named, a database in memory is made by initdb: empty
    const empty = await openDatabase();
    try {
      expect(await migrationStatus(empty)).toMatchObject({ pending: loadMigrations().map((m) => m.tag) });
    } finally {
      await empty.close();
    }
  }, 120_000);

  it('gives a new data folder the migrated database, which opens, is checked and is written to', async () => {
    const dataDir = join(ROOT, 'fresh', 'data');
    expect(seedFromTemplate(dataDir, TEMPLATE)).toBe(true);
    // the template's key file stays in the template
    expect(existsSync(join(dataDir, 'mercato-template.json'))).toBe(false);
    const db = await openDatabase({ dataDir, template: TEMPLATE });
    try {
      expect(await migrationStatus(db)).toMatchObject({ pending: [] });
      expect(await migrate(db)).toMatchObject({ applied: [] });
      const [row] = await db.query<{ id: string }>(
        sql`insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy) values ('app', 's.myshopify.com', 'f', 'api', '{}', '{}') returning id`,
      );
      expect(row!.id).toMatch(/^[0-9a-f-]{36}$/);
      const [sim] = await db.query<{ s: number }>(sql`select similarity('backfill', 'backfills')::float8 as s`);
      expect(sim!.s).toBeGreaterThan(0.5);
    } finally {
      await db.close();
    }
    // nothing staged is left beside the folder
    expect(readdirSync(join(ROOT, 'fresh')).filter((n) => n.includes('.template-'))).toEqual([]);
  }, 60_000);

  it('never touches a folder that holds something, and an empty folder is filled', () => {
    const used = join(ROOT, 'used');
    mkdirSync(used, { recursive: true });
    writeFileSync(join(used, 'PG_VERSION'), '17\n');
    expect(seedFromTemplate(used, TEMPLATE)).toBe(false);
    expect(readdirSync(used)).toEqual(['PG_VERSION']);

    const empty = join(ROOT, 'empty');
    mkdirSync(empty);
    expect(seedFromTemplate(empty, TEMPLATE)).toBe(true);
    expect(existsSync(join(empty, 'PG_VERSION'))).toBe(true);
  });

  it('is not used when its key is not this code’s (another PGlite, a new or edited migration) or it is missing', () => {
    const stale = join(ROOT, 'stale');
    mkdirSync(stale);
    writeFileSync(join(stale, 'mercato-template.json'), JSON.stringify({ key: 'f'.repeat(64) }));
    mkdirSync(join(stale, 'data'));
    writeFileSync(join(stale, 'data', 'PG_VERSION'), '17\n');
    writeFileSync(join(stale, 'data.tar.gz'), '');
    expect(templateUsable(stale)).toBe(false);
    expect(seedFromTemplate(join(ROOT, 'from-stale'), stale)).toBe(false);
    expect(existsSync(join(ROOT, 'from-stale'))).toBe(false);
    expect(seedFromTemplate(join(ROOT, 'from-none'), join(ROOT, 'no-template'))).toBe(false);

    // a migration more changes the key: the template made before it is not used
    const migrations = join(ROOT, 'migrations');
    mkdirSync(join(migrations, 'meta'), { recursive: true });
    writeFileSync(join(migrations, 'meta', '_journal.json'), JSON.stringify({ entries: [{ idx: 0, tag: '0000_x' }] }));
    writeFileSync(join(migrations, '0000_x.sql'), 'select 1;');
    expect(templateKey(migrations)).not.toBe(templateKey());
    expect(templateUsable(TEMPLATE, templateKey(migrations))).toBe(false);
  });

  it('ships with the built package: the build made one with this code’s key', () => {
    // scripts/build.mjs runs before the tests (the test set-up builds dist/)
    expect(templateUsable(PGLITE_TEMPLATE_DIR)).toBe(true);
  });
});
