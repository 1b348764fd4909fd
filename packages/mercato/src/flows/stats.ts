/**
 * The admin charts' figures (GET /api/stats/runs, GET /api/stats/flows): the store's aggregates (store/stats.ts) with
 * the empty buckets and statuses filled in and the rates worked out. Nothing here reads a run.
 */
import type { FlowStatsResponse, FlowStatsRow, RunStatsBucket, RunStatsResponse } from '../api/types.ts';
import { RUN_STATUSES, type RunStatus } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { Tenant } from '../db/sql.ts';
import type { StatsRange } from './schemas.ts';
import { type StatsWindow, flowActivity, runActivity } from './store/stats.ts';

export const STATS_WINDOWS: Record<StatsRange, StatsWindow> = {
  '24h': { bucketSeconds: 3600, buckets: 24 },
  '7d': { bucketSeconds: 6 * 3600, buckets: 28 },
};

/** The shapes are the API contract's (api/types.ts): the server does not restate them. */
export type RunActivityBucket = RunStatsBucket;
export type RunActivity = RunStatsResponse;
export type FlowStats = FlowStatsRow;
export type FlowStatsList = FlowStatsResponse;

const zeroCounts = () => Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<RunStatus, number>;

/** `part / whole`, null when nothing finished; rounded to 4 decimals. */
const rate = (part: number, whole: number) => (whole === 0 ? null : Math.round((part / whole) * 10_000) / 10_000);

/** The start of bucket `i` of a window starting at `since`, ISO 8601 in UTC. */
const bucketStart = (since: string, w: StatsWindow, i: number) => new Date(Date.parse(since) + i * w.bucketSeconds * 1000).toISOString();

export function createStats(deps: { db: Database }) {
  return {
    async runs(t: Tenant, range: StatsRange): Promise<RunActivity> {
      const w = STATS_WINDOWS[range];
      const { since, until, groups } = await runActivity(deps.db.query, t, w);
      const buckets: RunActivityBucket[] = Array.from({ length: w.buckets }, (_, i) => ({
        start: bucketStart(since, w, i),
        counts: zeroCounts(),
        total: 0,
      }));
      const counts = zeroCounts();
      for (const g of groups) {
        const b = buckets[g.bucket];
        if (!b) continue; // a run created after now() (a clock ahead of the database): outside the window
        b.counts[g.status] += g.n;
        b.total += g.n;
        counts[g.status] += g.n;
      }
      const total = buckets.reduce((sum, b) => sum + b.total, 0);
      return {
        range,
        bucketMinutes: w.bucketSeconds / 60,
        since,
        until,
        buckets,
        counts,
        total,
        failureRate: rate(counts.failed, counts.completed + counts.failed),
      };
    },

    async flows(t: Tenant): Promise<FlowStatsList> {
      const w = STATS_WINDOWS['24h'];
      const { since, until, flows } = await flowActivity(deps.db.query, t, w);
      return {
        since,
        until,
        bucketMinutes: w.bucketSeconds / 60,
        flows: flows.map((f) => {
          const hourly = new Array<number>(w.buckets).fill(0);
          let runs = 0;
          for (const [bucket, n] of f.perBucket) {
            if (bucket >= 0 && bucket < w.buckets) {
              hourly[bucket] += n;
              runs += n;
            }
          }
          return {
            flowName: f.flowName,
            runs,
            completed: f.completed,
            failed: f.failed,
            successRate: rate(f.completed, f.completed + f.failed),
            p50Ms: f.p50Ms,
            p95Ms: f.p95Ms,
            hourly,
          };
        }),
      };
    },
  };
}

export type Stats = ReturnType<typeof createStats>;
