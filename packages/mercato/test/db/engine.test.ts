import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { dbErrorCode, openDatabase } from '../../src/db/engine.ts';
import { loadMigrations, migrate } from '../../src/db/migrate.ts';
import { createTestDatabase, describeEngines, testEngines } from '../../src/db/testing.ts';

describeEngines('database engine', (get, kind) => {
  it('reports its kind and answers ping', async () => {
    const { db } = get();
    expect(db.kind).toBe(kind);
    expect(await db.ping()).toBe(true);
  });

  it('has applied every committed migration once', async () => {
    const { db } = get();
    const rows = await db.query<{ tag: string }>(sql`select tag from mercato_migrations order by tag`);
    expect(rows.map((r) => r.tag)).toEqual(loadMigrations().map((m) => m.tag));
    const again = await migrate(db);
    expect(again.applied).toEqual([]);
    expect(again.alreadyApplied).toBe(loadMigrations().length);
  });

  it('returns bigint identity columns as numbers on both drivers', async () => {
    const { db } = get();
    const [row] = await db.query<{ n: number }>(sql`select 9007199254740::bigint as n`);
    expect(row.n).toBe(9007199254740);
  });

  it('delivers NOTIFY to a listener and stops after unlisten', async () => {
    const { db } = get();
    const got: string[] = [];
    const stop = await db.listen('mercato_test_channel', (p) => got.push(p));
    await db.notify('mercato_test_channel', 'one');
    await expect.poll(() => got, { timeout: 2000 }).toEqual(['one']);
    await stop();
    await db.notify('mercato_test_channel', 'two');
    await new Promise((r) => setTimeout(r, 100));
    expect(got).toEqual(['one']);
  });

  it('cascades deletes from runs to steps and logs', async () => {
    const { db, reset } = get();
    await reset();
    const [run] = await db.query<{ id: string }>(
      sql`insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy) values ('a', 's.myshopify.com', 'f', 'api', '{}', '{}') returning id`,
    );
    await db.query(
      sql`insert into steps (run_id, name, app_handle, shop, status, attempt) values (${run.id}, 'one', 'a', 's.myshopify.com', 'completed', 1)`,
    );
    await db.query(
      sql`insert into logs (run_id, app_handle, shop, level, message, attempt) values (${run.id}, 'a', 's.myshopify.com', 'info', 'hi', 1)`,
    );
    await db.query(sql`delete from runs where id = ${run.id}`);
    const [{ steps }] = await db.query<{ steps: number }>(sql`select count(*)::int as steps from steps`);
    const [{ logs }] = await db.query<{ logs: number }>(sql`select count(*)::int as logs from logs`);
    expect([steps, logs]).toEqual([0, 0]);
  });

  it('commits a transaction when its function resolves and rolls it back when it throws', async () => {
    const { db, reset } = get();
    await reset();
    const insert = sql`insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy) values ('a', null, 'f', 'api', '{}', '{}') returning id`;
    const count = async () => (await db.query<{ n: number }>(sql`select count(*)::int as n from runs`))[0].n;
    const kept = await db.transaction(async (exec) => {
      const [row] = await exec<{ id: string }>(insert);
      expect(await exec(sql`select 1 from runs where id = ${row.id}::uuid`)).toHaveLength(1);
      return row.id;
    });
    expect(typeof kept).toBe('string');
    expect(await count()).toBe(1);
    const refused = new Error('refused');
    await expect(
      db.transaction(async (exec) => {
        await exec(insert);
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(await count()).toBe(1);
  });

  it('rejects with the driver error (its SQLSTATE), in a transaction as outside one', async () => {
    const { db } = get();
    const bad = sql`insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status) values ('a', null, 'f', 'api', '{}', '{}', 'paused')`;
    for (const attempt of [() => db.query(bad), () => db.transaction((exec) => exec(bad))]) {
      const error = await attempt().catch((e: unknown) => e);
      expect(dbErrorCode(error)).toBe('23514');
      expect((error as { code?: string }).code).toBe('23514');
    }
  });

  it('rejects a run status outside the six states', async () => {
    const { db } = get();
    await expect(
      db.query(
        sql`insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status) values ('a', null, 'f', 'api', '{}', '{}', 'paused')`,
      ),
    ).rejects.toThrow(/runs_status_check/);
  });
});

describe('migrator', () => {
  it.skipIf(!testEngines().includes('postgres'))(
    'applies migrations exactly once when three connection pools migrate the same database at the same time [postgres]',
    async () => {
      const test = await createTestDatabase('postgres', { migrate: false });
      try {
        const others = await Promise.all([1, 2].map(() => openDatabase({ url: test.url, poolSize: 2 })));
        const results = await Promise.all([test.db, ...others].map((db) => migrate(db)));
        for (const db of others) await db.close();
        // the advisory lock lets one migrator apply everything; the others wait for it and find nothing left to do
        expect(results.map((r) => r.applied.length).sort((a, b) => a - b)).toEqual([0, 0, loadMigrations().length]);
        const [{ n }] = await test.db.query<{ n: number }>(sql`select count(*)::int as n from mercato_migrations`);
        expect(n).toBe(loadMigrations().length);
      } finally {
        await test.drop();
      }
    },
  );

  // PGlite is one session in one process: it cannot show several processes racing (see the [postgres] test). What it
  // can show is that concurrent migrate() calls on one database (its transactions take turns) apply each migration once.
  it('applies migrations exactly once when migrate() is called three times at once on one PGlite database [pglite]', async () => {
    const test = await createTestDatabase('pglite', { migrate: false });
    try {
      const results = await Promise.all([1, 2, 3].map(() => migrate(test.db)));
      expect(results.map((r) => r.applied.length).sort((a, b) => a - b)).toEqual([0, 0, loadMigrations().length]);
      expect(results.map((r) => r.alreadyApplied).sort((a, b) => a - b)).toEqual([0, loadMigrations().length, loadMigrations().length]);
      const [{ n }] = await test.db.query<{ n: number }>(sql`select count(*)::int as n from mercato_migrations`);
      expect(n).toBe(loadMigrations().length);
    } finally {
      await test.drop();
    }
  });

  it('refuses a migration whose file changed after it was applied', async () => {
    const test = await createTestDatabase('pglite');
    try {
      await test.db.query(sql`update mercato_migrations set hash = 'changed'`);
      await expect(migrate(test.db)).rejects.toThrow(/changed after it was applied/);
    } finally {
      await test.drop();
    }
  });

  it('keeps PGlite data in its folder across reopen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mercato-pglite-'));
    try {
      const first = await openDatabase({ dataDir: join(dir, 'db') });
      await migrate(first);
      await first.query(
        sql`insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy) values ('a', null, 'f', 'api', '{}', '{}')`,
      );
      await first.close();
      const second = await openDatabase({ dataDir: join(dir, 'db') });
      const [{ n }] = await second.query<{ n: number }>(sql`select count(*)::int as n from runs`);
      await second.close();
      expect(n).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
