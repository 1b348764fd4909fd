/**
 * `mercato prune` as a real process (bin/mercato.js, the built CLI) on both engines: the dry run counts and deletes
 * nothing, a pass deletes per the app's retention config, `--only` / `--older-than`, `--json`, a held lock (exit 3),
 * and bad flags (exit 2 with a message).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { type Database, openDatabase } from '../../src/db/engine.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createTestDatabase, testEngines } from '../../src/db/testing.ts';
import { releasePruneLock, tryPruneLock } from '../../src/retention/store.ts';
import { count, seedOthers, seedRun } from './seed.ts';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../../bin/mercato.js');
const APP = resolve(here, '../fixtures/retention-app');
const tmpDirs: string[] = [];

afterAll(() => {
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

function prune(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, [BIN, 'prune', ...args], {
    cwd: APP,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    encoding: 'utf8',
    timeout: 90_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** A database the CLI process can open too: a PGlite data folder (closed while the CLI runs) or a PostgreSQL database. */
async function database(kind: 'pglite' | 'postgres'): Promise<{
  env: Record<string, string>;
  open(): Promise<Database>;
  release(): Promise<void>;
  drop(): Promise<void>;
}> {
  if (kind === 'postgres') {
    const t = await createTestDatabase('postgres');
    return { env: { DATABASE_URL: t.url! }, open: async () => t.db, release: async () => {}, drop: () => t.drop() };
  }
  const dir = mkdtempSync(join(tmpdir(), 'mercato-prune-'));
  tmpDirs.push(dir);
  let db: Database | undefined;
  return {
    env: { MERCATO_DATA_DIR: dir },
    open: async () => {
      db ??= await openDatabase({ dataDir: dir });
      await migrate(db);
      return db;
    },
    // PGlite: one process at a time on a data folder
    release: async () => {
      await db?.close();
      db = undefined;
    },
    drop: async () => {
      await db?.close();
    },
  };
}

for (const kind of testEngines()) {
  describe(`mercato prune [${kind}]`, () => {
    it('dry run, then a pass per the config; --only with --older-than; --json', async () => {
      const d = await database(kind);
      try {
        let db = await d.open();
        for (let i = 0; i < 5; i++) await seedRun(db, 'completed', 20);
        await seedRun(db, 'completed', 5);
        await seedRun(db, 'running', 20);
        await seedOthers(db, 4, 3); // past 3d (deliveries) and 2d (ticks); audits are kept forever
        await d.release();

        const dry = prune(['--dry-run'], d.env);
        expect(dry).toMatchObject({ code: 0 });
        expect(dry.out).toContain('Retention dry run (nothing is deleted)');
        expect(dry.out).toMatch(/runs\s+older than 10d \(before \S+Z\): 5 would go \(with 5 steps, 10 log lines\)/);
        expect(dry.out).toMatch(/mcp_audits\s+kept forever/);
        expect(dry.out).toMatch(/webhook_deliveries\s+older than 3d .*: 3 would go/);
        expect(dry.out).toMatch(/cron_ticks\s+older than 2d .*: 3 would go/);
        expect(dry.out).toContain('11 record(s) would go.');
        db = await d.open();
        expect([await count(db, 'runs'), await count(db, 'webhook_deliveries'), await count(db, 'cron_ticks')]).toEqual([7, 3, 3]);
        await d.release();

        const done = prune([], d.env);
        expect(done.code).toBe(0);
        expect(done.out).toMatch(/runs\s+older than .*: 5 deleted in 3 batches/);
        expect(done.out).toContain('Done: 11 record(s) deleted');
        db = await d.open();
        expect([
          await count(db, 'runs'),
          await count(db, 'logs'),
          await count(db, 'webhook_deliveries'),
          await count(db, 'cron_ticks'),
        ]).toEqual([2, 4, 0, 0]);
        expect(await count(db, 'mcp_audits')).toBe(3);
        await d.release();

        // an explicit period for the chosen kinds: the 5-day-old finished run and the audit records go; the running one stays
        const only = prune(['--only', 'runs,mcpAudit', '--older-than', '1d', '--json'], d.env);
        expect(only.code).toBe(0);
        const report = JSON.parse(only.out);
        expect(report).toMatchObject({
          status: 'done',
          tables: [
            { table: 'runs', rows: 1, periodMs: 86_400_000 },
            { table: 'mcp_audits', rows: 3 },
          ],
        });
        expect(report.tables).toHaveLength(2);
        db = await d.open();
        expect([await count(db, 'runs'), await count(db, 'mcp_audits')]).toEqual([1, 0]);
        await d.release();
      } finally {
        await d.drop();
      }
    });

    it('refuses bad flags with a message (exit 2)', () => {
      const env = { MERCATO_DATA_DIR: join(tmpdir(), 'mercato-prune-never-opened') };
      expect(prune(['--older-than', 'soon'], env)).toMatchObject({
        code: 2,
        err: expect.stringContaining(
          `option '--older-than <duration>' argument 'soon' is invalid. must be a duration like 90d, 12h or 30m`,
        ),
      });
      expect(prune(['--only', 'runs,logs'], env)).toMatchObject({
        code: 2,
        err: expect.stringContaining('must list one or more of runs, mcpAudit, webhookDeliveries, cronTicks (got "runs,logs")'),
      });
      expect(prune(['--older-than', '1h'], env)).toMatchObject({
        code: 2,
        err: expect.stringContaining(
          '--older-than is shorter than the minimum of webhookDeliveries (at least 2d), cronTicks (at least 1d)',
        ),
      });
      expect(prune(['--dry-runn'], env)).toMatchObject({ code: 2, err: expect.stringContaining('--dry-run') });
    });

    if (kind === 'postgres') {
      it('exits 3 and deletes nothing while another process holds the pruner lock', async () => {
        const d = await database(kind);
        const db = await d.open();
        const holder = await db.openSession!('test-holder');
        try {
          await seedRun(db, 'completed', 40);
          expect(await tryPruneLock(holder)).toBe(true);
          const busy = prune([], d.env);
          expect(busy).toMatchObject({ code: 3, err: expect.stringContaining('another process is pruning this database now') });
          expect(await count(db, 'runs')).toBe(1);
          await releasePruneLock(holder);
          expect(prune([], d.env).code).toBe(0);
          expect(await count(db, 'runs')).toBe(0);
        } finally {
          await holder.close();
          await d.drop();
        }
      });
    }
  });
}
