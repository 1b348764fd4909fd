/**
 * The retention pruner on a real database (both engines): what goes and what stays, bounded batches, the one-pass lock,
 * dry runs, the four kinds of records, the events, and a serving runtime's pruner stopping between batches.
 */
import { sql } from 'drizzle-orm';
import { beforeEach, expect, it } from 'vitest';
import { DEFAULT_RETENTION } from '../../src/app/defaults.ts';
import type { ResolvedRetention } from '../../src/app/types.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { type RuntimeEvent, createRuntimeEvents } from '../../src/events.ts';
import { createPruner, prunePass } from '../../src/retention/index.ts';
import { defineApp } from '../../src/app/app.ts';
import { startPruner } from '../../src/serve.ts';
import { startTestRuntime } from '../helpers/runtime.ts';
import { releasePruneLock, tryPruneLock } from '../../src/retention/store.ts';
import { DAY, count, seedOthers, seedRun } from './seed.ts';

const retention = (over: Partial<ResolvedRetention> = {}): ResolvedRetention => ({ ...DEFAULT_RETENTION, ...over });

describeEngines('retention pruner', (get) => {
  beforeEach(async () => {
    await get().reset();
  });

  it('deletes finished runs past the period with their steps and log lines; active and recent runs stay', async () => {
    const db = get().db;
    const gone = [await seedRun(db, 'completed', 40), await seedRun(db, 'failed', 31), await seedRun(db, 'canceled', 365)];
    const kept = [
      await seedRun(db, 'completed', 29),
      await seedRun(db, 'failed', 1),
      await seedRun(db, 'pending', 400),
      await seedRun(db, 'running', 400),
      await seedRun(db, 'sleeping', 400),
      // an active run with an old finish time (a manual retry clears it; the status alone protects it)
      await seedRun(db, 'pending', 400, true),
    ];
    const report = await prunePass({ db, retention: retention() }, { tables: ['runs'] });
    expect(report.status).toBe('done');
    expect(report.tables).toMatchObject([{ table: 'runs', periodMs: 30 * DAY, rows: 3, batches: 1 }]);
    const left = await db.query<{ id: string }>(sql`select id from runs order by id`);
    expect(left.map((r) => r.id).sort()).toEqual([...kept].sort());
    for (const table of ['steps', 'logs']) {
      const ids = await db.query<{ run_id: string }>(sql`select distinct run_id from ${sql.raw(table)}`);
      expect(ids.map((r) => r.run_id).sort()).toEqual([...kept].sort());
    }
    expect(gone.length).toBe(3);
  });

  it('deletes in bounded batches: 35 old runs with batch size 10 → 4 statements, all gone', async () => {
    const db = get().db;
    for (let i = 0; i < 35; i++) await seedRun(db, 'completed', 60 + i);
    await seedRun(db, 'completed', 2);
    const batches: number[] = [];
    const report = await prunePass(
      { db, retention: retention({ batchSize: 10 }) },
      { tables: ['runs'], onBatch: (_t, rows) => batches.push(rows) },
    );
    expect(report.tables[0]).toMatchObject({ rows: 35, batches: 4 });
    expect(batches).toEqual([10, 20, 30, 35]);
    expect(await count(db, 'runs')).toBe(1);
    expect(await count(db, 'logs')).toBe(2);
  });

  it('a dry run counts what would go (runs with their steps and logs) and deletes nothing', async () => {
    const db = get().db;
    for (let i = 0; i < 4; i++) await seedRun(db, 'completed', 45);
    await seedRun(db, 'running', 45);
    await seedOthers(db, 100, 3);
    await seedOthers(db, 1, 2);
    const report = await prunePass({ db, retention: retention({ webhookDeliveries: 2 * DAY }) }, { dryRun: true });
    expect(report.status).toBe('dry-run');
    const now = new Date(report.now).getTime();
    expect(report.tables.map((t) => [t.table, t.rows, t.cutoff])).toEqual([
      ['runs', 4, new Date(now - 30 * DAY).toISOString()],
      ['mcp_audits', 3, new Date(now - 90 * DAY).toISOString()],
      ['webhook_deliveries', 3, new Date(now - 2 * DAY).toISOString()],
      ['cron_ticks', 3, new Date(now - 7 * DAY).toISOString()],
    ]);
    expect(report.tables[0]).toMatchObject({ steps: 4, logs: 8 });
    expect([
      await count(db, 'runs'),
      await count(db, 'mcp_audits'),
      await count(db, 'webhook_deliveries'),
      await count(db, 'cron_ticks'),
    ]).toEqual([5, 5, 5, 5]);
  });

  it('MCP audit records, webhook deliveries and cron ticks go per their own period; false keeps a kind forever; events per table', async () => {
    const db = get().db;
    await seedOthers(db, 10, 3); // past 7 days (deliveries, ticks), not 90 (audits)
    await seedOthers(db, 95, 2); // past every period
    await seedOthers(db, 1, 1); // recent
    const events = createRuntimeEvents();
    const seen: RuntimeEvent[] = [];
    events.on('retention.pruned', (e) => seen.push(e));
    const report = await prunePass({ db, retention: retention({ cronTicks: null, batchSize: 2 }), events });
    expect(report.tables.map((t) => [t.table, t.rows])).toEqual([
      ['runs', 0],
      ['mcp_audits', 2],
      ['webhook_deliveries', 5],
      ['cron_ticks', 0],
    ]);
    expect(report.tables[3]).toMatchObject({ periodMs: null, cutoff: null });
    expect([await count(db, 'mcp_audits'), await count(db, 'webhook_deliveries'), await count(db, 'cron_ticks')]).toEqual([4, 1, 6]);
    expect(seen.map((e) => e.type === 'retention.pruned' && [e.table, e.rows])).toEqual([
      ['mcp_audits', 2],
      ['webhook_deliveries', 5],
    ]);
  });

  it('one pass at a time: a second pass while the lock is held does nothing ("busy"); nothing is counted twice', async () => {
    const db = get().db;
    for (let i = 0; i < 12; i++) await seedRun(db, 'completed', 50);
    const deps = { db, retention: retention({ batchSize: 5 }) };
    if (db.openSession) {
      // PostgreSQL: another process's lock, held on a session of its own
      const other = await db.openSession('test-holder');
      try {
        expect(await tryPruneLock(other)).toBe(true);
        expect(await prunePass(deps)).toMatchObject({ status: 'busy', tables: [] });
        expect(await count(db, 'runs')).toBe(12);
        await releasePruneLock(other);
      } finally {
        await other.close();
      }
    }
    // two passes started together: one works, the other finds the lock taken (or, on PostgreSQL, runs after it and finds nothing)
    const [a, b] = await Promise.all([prunePass(deps), prunePass(deps)]);
    const rows = (r: typeof a) => r.tables.reduce((s, t) => s + t.rows, 0);
    expect(rows(a) + rows(b)).toBe(12);
    expect([a.status, b.status]).toContain('done');
    if (!db.openSession) expect([a.status, b.status].sort()).toEqual(['busy', 'done']);
    expect(await count(db, 'runs')).toBe(0);
    // the lock is released after a pass: the next one works
    expect((await prunePass(deps)).status).toBe('done');
  });

  it('a stopped pruner ends its pass between two batches and starts no other', async () => {
    const db = get().db;
    for (let i = 0; i < 30; i++) await seedRun(db, 'completed', 50);
    const pruner = createPruner({ db, retention: retention({ batchSize: 3 }) });
    let stopping: Promise<void> | undefined;
    const report = await pruner.runOnce({
      tables: ['runs'],
      onBatch: (_t, rows) => {
        if (rows >= 6) stopping ??= pruner.stop();
      },
    });
    await stopping;
    expect(report.status).toBe('aborted');
    expect(report.tables[0]!.rows).toBe(6);
    expect(await count(db, 'runs')).toBe(24);
  });

  it('startPruner: a serving runtime prunes with its config and reports through its event feed', async () => {
    const db = get().db;
    await seedRun(db, 'completed', 3);
    await seedRun(db, 'completed', 1);
    await seedRun(db, 'running', 3);
    const instance = defineApp().defineConfig({ flows: {}, retention: { runs: '2d', interval: '1h' } });
    const t = await startTestRuntime(instance, db);
    try {
      const seen = new Promise<RuntimeEvent>((resolve) => t.runtime.events.on('retention.pruned', resolve));
      startPruner(t.runtime, { firstDelayMs: 0 });
      expect(await seen).toMatchObject({ type: 'retention.pruned', table: 'runs', rows: 1 });
      expect(await count(db, 'runs')).toBe(2);
    } finally {
      await t.close();
    }
  });
});
