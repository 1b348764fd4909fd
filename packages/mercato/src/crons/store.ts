/**
 * Every SQL statement of crons: overrides (the toggle) and ticks (the exactly-once claims). Callers speak of a tenant's
 * shop as everywhere else (null = the app level, which governs global crons); in the two cron tables the app-level row
 * has shop `''` (the column is part of the primary key, so it cannot be null). That sentinel never leaves this file.
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../db/engine.ts';
import { type Tenant, isoTs, tenantWhere } from '../db/sql.ts';

type Query = Pick<Database, 'query'>;

/** The shop column value of the app-level rows (global crons). */
const APP_LEVEL = '';
const toRow = (shop: string | null): string => shop ?? APP_LEVEL;
const fromRow = (shop: string): string | null => (shop === APP_LEVEL ? null : shop);
/** The tenant predicate on a cron table (the app level is the `''` row, not `shop is null`). */
const rowTenant = (t: Tenant) => tenantWhere({ appHandle: t.appHandle, shop: toRow(t.shop) });

export async function upsertOverride(db: Query, t: Tenant, cronKey: string, enabled: boolean): Promise<void> {
  await db.query(sql`
    insert into cron_overrides (app_handle, shop, cron_key, enabled, updated_at)
    values (${t.appHandle}, ${toRow(t.shop)}, ${cronKey}, ${enabled}, now())
    on conflict (app_handle, shop, cron_key) do update set enabled = excluded.enabled, updated_at = excluded.updated_at`);
}

/** The overrides of one tenant (shop null: the app-level overrides of global crons): cron key → enabled. */
export async function overridesOf(db: Query, t: Tenant): Promise<Map<string, boolean>> {
  const rows = await db.query<{ cron_key: string; enabled: boolean }>(
    sql`select cron_key, enabled from cron_overrides where ${rowTenant(t)}`,
  );
  return new Map(rows.map((r) => [r.cron_key, r.enabled]));
}

/** `pairKey(shop, key)` of every disabled (shop, cron) of the app among `keys` (the scheduler reads them once per pass). */
export async function disabledPairs(db: Query, appHandle: string, keys: readonly string[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set();
  const rows = await db.query<{ shop: string; cron_key: string }>(sql`
    select shop, cron_key from cron_overrides
    where app_handle = ${appHandle} and enabled = false and cron_key in (${sql.join(
      keys.map((k) => sql`${k}`),
      sql`, `,
    )})`);
  return new Set(rows.map((r) => pairKey(fromRow(r.shop), r.cron_key)));
}

/** The key of a (shop, cron) pair in `disabledPairs` (shop null: a global cron). */
export const pairKey = (shop: string | null, cronKey: string) => `${toRow(shop)}\n${cronKey}`;

export type TickStatus = 'dispatched' | 'conflict' | 'skipped' | 'failed';

/** A tick to claim: its tenant (`shop` null for a global cron), cron, fire time and claimer. */
export interface TickClaim extends Tenant {
  cronKey: string;
  fireAt: Date;
  schedulerId: string;
  /** The scheduler's clock at the claim. */
  claimedAt: Date;
}

/**
 * Claims a tick with its outcome: inserts its row unless another scheduler already has (the primary key is the guard; a
 * concurrent claimer waits for the first one's transaction and then sees the row). True when this call inserted it.
 */
export async function claimTick(
  db: Query,
  claim: TickClaim,
  status: TickStatus,
  reason: string | null = null,
  runId: string | null = null,
): Promise<boolean> {
  const rows = await db.query(sql`
    insert into cron_ticks (app_handle, shop, cron_key, fire_at, status, reason, run_id, scheduler_id, claimed_at)
    values (${claim.appHandle}, ${toRow(claim.shop)}, ${claim.cronKey}, ${claim.fireAt.toISOString()}::timestamptz, ${status}, ${reason},
            ${runId}::uuid, ${claim.schedulerId}, ${claim.claimedAt.toISOString()}::timestamptz)
    on conflict do nothing
    returning 1 as claimed`);
  return rows.length === 1;
}

/** The shops (null for a global cron) already claimed for one fire time of a cron: later replicas skip them cheaply. */
export async function claimedShops(db: Query, appHandle: string, cronKey: string, fireAt: Date): Promise<Set<string | null>> {
  const rows = await db.query<{ shop: string }>(
    sql`select shop from cron_ticks where app_handle = ${appHandle} and cron_key = ${cronKey} and fire_at = ${fireAt.toISOString()}::timestamptz`,
  );
  return new Set(rows.map((r) => fromRow(r.shop)));
}

export interface TickRecord {
  fireAt: string;
  status: TickStatus;
  reason: string | null;
  runId: string | null;
}

/** The latest tick of each cron for one tenant (shop null: the global crons): cron key → tick. */
export async function latestTicks(db: Query, t: Tenant): Promise<Map<string, TickRecord>> {
  const rows = await db.query<TickRecord & { cronKey: string }>(sql`
    select distinct on (cron_key) cron_key as "cronKey", ${isoTs('fire_at')} as "fireAt", status, reason, run_id as "runId"
    from cron_ticks where ${rowTenant(t)}
    order by cron_key, fire_at desc`);
  return new Map(rows.map(({ cronKey, ...tick }) => [cronKey, tick]));
}
