/** The queue as the metrics see it (docs/observability.md): due runs waiting for a worker, per flow. */
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
 * The due runs of every flow, cluster-wide: the oldest QUEUE_COUNT_CAP of them through the claim index (`runs_claimable_idx`),
 * grouped by flow. One statement, bounded however long the queue is.
 */
export async function queuedRunsByFlow(exec: Exec, cap = QUEUE_COUNT_CAP): Promise<FlowQueue[]> {
  const rows = await exec<{ flow: string; depth: number; oldest_age: number }>(sql`
    select flow_name as flow, count(*)::int as depth,
           greatest(0, extract(epoch from (now() - min(available_at))))::float8 as oldest_age
    from (select flow_name, available_at from runs
          where status in ('pending','sleeping') and available_at <= now()
          order by available_at limit ${cap}) due
    group by flow_name`);
  return rows.map((r) => ({ flow: r.flow, depth: Number(r.depth), oldestAgeSeconds: Number(r.oldest_age) }));
}
