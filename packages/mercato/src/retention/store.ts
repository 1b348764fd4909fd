/**
 * The statements of the retention pruner (docs/retention.md): for each kind of record, how many are older than a
 * cutoff, and the delete of one bounded batch of them (oldest first, through an index on the time column). Rows another
 * transaction holds are skipped (`skip locked`) and left for the next pass. A run's steps and log lines go with it
 * (foreign keys `on delete cascade`); only finished runs (completed, failed, canceled) are ever selected.
 */
import { sql } from 'drizzle-orm';
import type { DedicatedSession } from '../db/engine.ts';
import type { Exec } from '../db/sql.ts';

export const PRUNE_TABLES = ['runs', 'mcp_audits', 'webhook_deliveries', 'cron_ticks'] as const;
export type PruneTable = (typeof PRUNE_TABLES)[number];

const cut = (cutoff: Date) => sql`${cutoff.toISOString()}::timestamptz`;

/** Deletes at most `limit` records of `table` older than `cutoff`; returns how many went. */
export async function deleteBatch(exec: Exec, table: PruneTable, cutoff: Date, limit: number): Promise<number> {
  const rows = await exec<{ n: number }>(batchStatement(table, cutoff, limit));
  return Number(rows[0]?.n ?? 0);
}

function batchStatement(table: PruneTable, cutoff: Date, limit: number) {
  switch (table) {
    case 'runs':
      return sql`
        with batch as (
          select id from runs
          where status in ('completed', 'failed', 'canceled') and finished_at < ${cut(cutoff)}
          order by finished_at limit ${limit}
          for update skip locked
        ), gone as (
          delete from runs r using batch where r.id = batch.id and r.status in ('completed', 'failed', 'canceled') returning 1
        )
        select count(*)::int as n from gone`;
    case 'mcp_audits':
      return sql`
        with batch as (
          select id from mcp_audits where created_at < ${cut(cutoff)} order by created_at limit ${limit} for update skip locked
        ), gone as (
          delete from mcp_audits a using batch where a.id = batch.id returning 1
        )
        select count(*)::int as n from gone`;
    case 'webhook_deliveries':
      return sql`
        with batch as (
          select app_handle, webhook_id from webhook_deliveries
          where received_at < ${cut(cutoff)} order by received_at limit ${limit} for update skip locked
        ), gone as (
          delete from webhook_deliveries d using batch
          where d.app_handle = batch.app_handle and d.webhook_id = batch.webhook_id returning 1
        )
        select count(*)::int as n from gone`;
    case 'cron_ticks':
      return sql`
        with batch as (
          select app_handle, shop, cron_key, fire_at from cron_ticks
          where fire_at < ${cut(cutoff)} order by fire_at limit ${limit} for update skip locked
        ), gone as (
          delete from cron_ticks t using batch
          where t.app_handle = batch.app_handle and t.shop = batch.shop and t.cron_key = batch.cron_key and t.fire_at = batch.fire_at
          returning 1
        )
        select count(*)::int as n from gone`;
  }
}

export interface PruneCount {
  rows: number;
  /** Runs only: the steps and log lines that go with them. */
  steps?: number;
  logs?: number;
}

/** How many records of `table` are older than `cutoff` (what a pass would delete now). */
export async function countOlder(exec: Exec, table: PruneTable, cutoff: Date): Promise<PruneCount> {
  switch (table) {
    case 'runs': {
      const [row] = await exec<{ rows: number; steps: number; logs: number }>(sql`
        with old as (
          select id from runs where status in ('completed', 'failed', 'canceled') and finished_at < ${cut(cutoff)}
        )
        select (select count(*)::int from old) as rows,
               (select count(*)::int from steps s join old on s.run_id = old.id) as steps,
               (select count(*)::int from logs l join old on l.run_id = old.id) as logs`);
      return { rows: Number(row!.rows), steps: Number(row!.steps), logs: Number(row!.logs) };
    }
    case 'mcp_audits':
      return countOf(exec, sql`select count(*)::int as n from mcp_audits where created_at < ${cut(cutoff)}`);
    case 'webhook_deliveries':
      return countOf(exec, sql`select count(*)::int as n from webhook_deliveries where received_at < ${cut(cutoff)}`);
    case 'cron_ticks':
      return countOf(exec, sql`select count(*)::int as n from cron_ticks where fire_at < ${cut(cutoff)}`);
  }
}

async function countOf(exec: Exec, query: ReturnType<typeof sql>): Promise<PruneCount> {
  const [row] = await exec<{ n: number }>(query);
  return { rows: Number(row?.n ?? 0) };
}

/** The advisory lock key of the pruner: one pass at a time across every process on the database. */
export const PRUNE_LOCK = 'mercato/retention';

/** Takes the pruner's session-level advisory lock without waiting; false when another session holds it. */
export async function tryPruneLock(session: DedicatedSession): Promise<boolean> {
  const [row] = await session.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtextextended($1, 0)) as locked', [PRUNE_LOCK]);
  return row?.locked === true;
}

export async function releasePruneLock(session: DedicatedSession): Promise<void> {
  await session.query('select pg_advisory_unlock(hashtextextended($1, 0))', [PRUNE_LOCK]);
}
