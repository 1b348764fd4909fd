/**
 * The queue as the metrics see it (docs/observability.md): due runs waiting for a worker, per flow, and how they spread
 * over tenants (how many tenants wait, how much of the queue the largest one holds), without naming any tenant.
 */
import { sql } from 'drizzle-orm';
import type { Exec } from '../../db/sql.ts';

/** At most this many due runs are counted per scrape: a deeper queue reads as this figure (the oldest age stays exact). */
export const QUEUE_COUNT_CAP = 100_000;

export interface FlowQueue {
  flow: string;
  /** Due runs (`pending` or `sleeping` with `available_at <= now()`), up to QUEUE_COUNT_CAP over all flows. */
  depth: number;
  /** Seconds since the oldest of them became due (database clock). */
  oldestAgeSeconds: number;
}

/**
 * How the counted due runs (the oldest QUEUE_COUNT_CAP) spread over tenants: a tenant is (app_handle, shop), a null shop
 * being the app's global tenant. Counts only, never which tenant.
 */
export interface TenantSpread {
  /** Tenants with at least one counted due run. */
  waiting: number;
  /** Counted due runs of the tenant with the most of them (0 when none). */
  largest: number;
  /** Counted due runs of every tenant (the sum of the flows' depths). */
  total: number;
}

/** One reading of the queue: the same capped sample of due runs, per flow and over tenants. */
export interface QueueReading {
  flows: FlowQueue[];
  tenants: TenantSpread;
}

/**
 * The due runs, cluster-wide: the oldest `cap` of them through the claim index (`runs_claimable_idx`), grouped by flow
 * and by tenant. One statement, bounded however long the queue is: the sample is read once and grouped both ways in the
 * same pass (grouping sets), so that the per-flow and per-tenant figures are of the same runs; the per-tenant groups are
 * folded into three numbers (a window over the grouped rows, at most one per tenant of the sample) and never leave the
 * database. Each flow's row carries them; an empty queue has no row and reads 0.
 */
export async function queuedRunsByFlow(exec: Exec, cap = QUEUE_COUNT_CAP): Promise<QueueReading> {
  const rows = await exec<{ flow: string; depth: number; oldest_age: number; tenants: number; largest: number; total: number }>(sql`
    select flow, depth, oldest_age, tenants, largest, total from (
      select flow, depth, oldest_age, per_tenant,
             (count(*) filter (where per_tenant) over ())::int as tenants,
             (max(depth) filter (where per_tenant) over ())::int as largest,
             (sum(depth) filter (where per_tenant) over ())::int as total
      from (
        select grouping(flow_name) = 1 as per_tenant, flow_name as flow, count(*)::int as depth,
               greatest(0, extract(epoch from (now() - min(available_at))))::float8 as oldest_age
        from (select flow_name, app_handle, shop, available_at from runs
              where status in ('pending','sleeping') and available_at <= now()
              order by available_at limit ${cap}) due
        group by grouping sets ((flow_name), (app_handle, shop))
      ) grouped
    ) counted
    where not per_tenant`);
  const first = rows[0];
  return {
    flows: rows.map((r) => ({ flow: r.flow, depth: Number(r.depth), oldestAgeSeconds: Number(r.oldest_age) })),
    tenants: first
      ? { waiting: Number(first.tenants), largest: Number(first.largest), total: Number(first.total) }
      : { waiting: 0, largest: 0, total: 0 },
  };
}
