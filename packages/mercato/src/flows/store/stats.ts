/**
 * The admin charts' aggregates (GET /api/stats/runs, GET /api/stats/flows; flows/stats.ts): a tenant's runs counted per
 * time bucket and status, and per flow with duration percentiles, all in SQL. A window is a whole number of buckets
 * aligned on UTC (`date_bin` from 2000-01-01T00:00Z), the last one holding now; runs are placed by `created_at`.
 *
 * Each answer is one statement, so its window and its counts come from the same `now()`. Like the run lists, the scan
 * reads the runs that are not `running` through runs_tenant_created_idx and the running ones through
 * runs_active_flow_idx (a claim or completion writes no entry in the first index).
 */
import { type SQL, sql } from 'drizzle-orm';
import type { RunStatus } from '../../app/types.ts';
import { type Exec, type Tenant, tenantWhere } from '../../db/sql.ts';

/** A window: `buckets` buckets of `bucketSeconds`, the last holding now. */
export interface StatsWindow {
  bucketSeconds: number;
  buckets: number;
}

/** The window's start: the start of the current bucket, minus the buckets before it. */
function windowStart(w: StatsWindow): SQL {
  const step = `interval '${Math.trunc(w.bucketSeconds)} seconds'`;
  return sql.raw(`(date_bin(${step}, now(), timestamptz '2000-01-01 00:00:00+00') - ${Math.trunc(w.buckets) - 1} * ${step})`);
}

/** The bucket number (0 = the window's first) of `created_at`. */
function bucketOf(w: StatsWindow, start: SQL): SQL {
  return sql`floor(extract(epoch from (created_at - ${start})) / ${sql.raw(String(Math.trunc(w.bucketSeconds)))})::int`;
}

/** The tenant's runs created in the window, with the columns given, through the two indexes of the run lists. */
function windowRuns(t: Tenant, start: SQL, columns: SQL): SQL {
  const tenant = tenantWhere(t);
  return sql`
    select ${columns} from runs where ${tenant} and created_at >= ${start} and status <> 'running'
    union all
    select ${columns} from runs where ${tenant} and created_at >= ${start} and status = 'running'`;
}

export interface ActivityFigures {
  /** The window's start, ISO 8601 (database clock). */
  since: string;
  /** The end of its last bucket. */
  until: string;
  /** Runs per bucket and status; buckets and statuses without runs are missing. */
  groups: { bucket: number; status: RunStatus; n: number }[];
}

/** Runs per bucket and status over the window. */
export async function runActivity(exec: Exec, t: Tenant, w: StatsWindow): Promise<ActivityFigures> {
  const start = windowStart(w);
  const [row] = await exec<{ since: string; until: string; groups: string }>(sql`
    with r as (${windowRuns(t, start, sql`${bucketOf(w, start)} as bucket, status`)})
    select to_json(${start}) #>> '{}' as since,
           to_json(${start} + ${sql.raw(`${w.buckets * w.bucketSeconds}`)} * interval '1 second') #>> '{}' as until,
           coalesce((select json_agg(json_build_array(bucket, status, n))
                     from (select bucket, status, count(*)::int as n from r group by bucket, status) g), '[]')::text as groups`);
  const groups = (JSON.parse(row.groups) as [number, RunStatus, number][]).map(([bucket, status, n]) => ({ bucket, status, n }));
  return { since: row.since, until: row.until, groups };
}

export interface FlowFigures {
  flowName: string;
  runs: number;
  completed: number;
  failed: number;
  /** Duration percentiles (ms) of the completed and failed runs that started; null when there are none. */
  p50Ms: number | null;
  p95Ms: number | null;
  /** Runs per bucket: `[bucket, n]`, buckets without runs missing. */
  perBucket: [number, number][];
}

/**
 * Per flow with runs in the window: runs, completed, failed, the duration percentiles (`finished_at - started_at` of the
 * completed and failed runs, in ms, sleeps and retries included) and the runs per bucket. Ordered by flow name.
 */
export async function flowActivity(exec: Exec, t: Tenant, w: StatsWindow): Promise<{ since: string; until: string; flows: FlowFigures[] }> {
  const start = windowStart(w);
  const duration = sql.raw(
    `case when status in ('completed','failed') and started_at is not null and finished_at is not null
          then extract(epoch from (finished_at - started_at))::float8 * 1000 end`,
  );
  const [row] = await exec<{ since: string; until: string; flows: string }>(sql`
    with r as materialized (${windowRuns(t, start, sql`flow_name, status, ${bucketOf(w, start)} as bucket, ${duration} as ms`)}),
    f as (
      select flow_name, count(*)::int as runs,
             (count(*) filter (where status = 'completed'))::int as completed,
             (count(*) filter (where status = 'failed'))::int as failed,
             round((percentile_cont(0.5) within group (order by ms))::numeric, 1)::float8 as p50,
             round((percentile_cont(0.95) within group (order by ms))::numeric, 1)::float8 as p95
      from r group by flow_name),
    h as (select flow_name, json_agg(json_build_array(bucket, n) order by bucket) as buckets
          from (select flow_name, bucket, count(*)::int as n from r group by flow_name, bucket) g group by flow_name)
    select to_json(${start}) #>> '{}' as since,
           to_json(${start} + ${sql.raw(`${w.buckets * w.bucketSeconds}`)} * interval '1 second') #>> '{}' as until,
           coalesce((select json_agg(json_build_array(f.flow_name, f.runs, f.completed, f.failed, f.p50, f.p95, h.buckets) order by f.flow_name)
                     from f join h using (flow_name)), '[]')::text as flows`);
  const flows = (JSON.parse(row.flows) as [string, number, number, number, number | null, number | null, [number, number][]][]).map(
    ([flowName, runs, completed, failed, p50Ms, p95Ms, perBucket]) => ({ flowName, runs, completed, failed, p50Ms, p95Ms, perBucket }),
  );
  return { since: row.since, until: row.until, flows };
}
