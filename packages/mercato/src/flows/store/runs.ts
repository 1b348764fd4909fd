/**
 * The statements on runs outside an execution: dispatch (insert, concurrency), the API's reads and lists, the Home
 * figures, the watch snapshot, and the lifecycle (cancel, retry, delete). Tenant-scoped reads filter by (app_handle, shop).
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Database } from '../../db/engine.ts';
import { RUN_STATUSES, type RetryPolicy, type RunStatus } from '../../app/types.ts';
import { type Exec, type Tenant, isoTs, prepared, tenantWhere, uuidList } from '../../db/sql.ts';
import type { Trigger } from '../../api/types.ts';

export const ACTIVE = sql.raw(`('pending','running','sleeping')`);
/** NOTIFY payload: a run id (or ''); wakes the workers' claim loops. */
export const RUNS_CHANNEL = 'mercato_runs';
/** NOTIFY payload: the id of a canceled run; its worker interrupts the execution at once. */
export const CANCEL_CHANNEL = 'mercato_cancel';

/** `<error name>: <message>` of the last failure is cut to this many characters. */
export const ERROR_SUMMARY_CHARS = 300;

/** The fields of a run both projections share (a list row and the detail). */
interface RunFields {
  id: string;
  flowName: string;
  status: RunStatus;
  /** The budget attempt: `attempt - attempt_base` (README, glossary). */
  attempt: number;
  trigger: Trigger;
  appHandle: string;
  shop: string | null;
  parentRunId: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  /** When a pending or sleeping run may next be claimed (retry backoff, sleep wake-up). */
  availableAt: string;
  /**
   * A run waiting to retry — an attempt failed and the run is pending again — and when its next attempt may start
   * (`availableAt`); null otherwise. The admin shows such a run as *Retrying*.
   */
  nextAttemptAt: string | null;
  /** Why the run waits (api/types.ts `RunWaiting`); null for a running or finished run. */
  waiting: {
    reason: 'queued' | 'claimed' | 'debounced' | 'rate_limited' | 'concurrency' | 'retry_backoff' | 'sleeping';
    until: string | null;
    heldBy: string | null;
    key: string | null;
    ahead: number | null;
    message: string;
  } | null;
}

/** A run as GET /api/runs/:id shows it (with its steps) and the watch sends it. */
export interface RunRecord extends RunFields {
  input: unknown;
  output: unknown;
  error: { name: string; message: string; stack?: string } | null;
  lostLeases: number;
  retryPolicy: RetryPolicy;
}

/** A row of a run list (docs/runs.md). The full error, input and output are on the run detail only. */
export interface RunListRow extends RunFields {
  /** `<error name>: <message>` of the last failure, at most 300 characters; null when the run has no error. */
  errorSummary: string | null;
}

const ERROR_SUMMARY = sql.raw(
  `case when error is null then null else left(coalesce(error->>'name', 'Error') || ': ' || coalesce(error->>'message', ''), ${ERROR_SUMMARY_CHARS}) end as "errorSummary"`,
);

/**
 * Why a run waits (api/types.ts `RunWaiting`, docs/flows.md "Why a run waits"), from its row alone: a sleep, a debounce,
 * a wait the gated claim recorded (rate limit, concurrency slot), a retry backoff, or due and queued for a worker. The
 * detail also counts the tenant's due runs that the claim serves before it (`ahead`, at most 1,000).
 */
function waitingColumn(ahead: boolean): SQL {
  const until = `(to_json(available_at) #>> '{}')`;
  const key = (column: string) => `(${column})::jsonb->>2`;
  const aheadCount = ahead
    ? `(select count(*)::int from (select 1 from runs o
        where o.app_handle = runs.app_handle and coalesce(o.shop, '') = coalesce(runs.shop, '')
          and o.status in ('pending','sleeping') and o.available_at <= now() and o.id <> runs.id
          and ((o.concurrency_key is null and o.rate_key is null) = (runs.concurrency_key is null and runs.rate_key is null))
          and (o.priority > runs.priority or (o.priority = runs.priority and o.available_at < runs.available_at))
        limit 1000) x)`
    : 'null';
  const build = (reason: string, untilExpr: string, heldBy: string, keyExpr: string, aheadExpr: string, message: string) =>
    `jsonb_build_object('reason', '${reason}', 'until', ${untilExpr}, 'heldBy', ${heldBy}, 'key', ${keyExpr}, 'ahead', ${aheadExpr}, 'message', ${message})`;
  const heldBy = `(select h.id::text from runs h where h.id = (runs.wait->>'heldBy')::uuid and h.app_handle = runs.app_handle
    and coalesce(h.shop, '') = coalesce(runs.shop, ''))`;
  return sql.raw(`case
    when status = 'running' and wait->>'reason' = 'claimed' then ${build(
      'claimed',
      'null',
      'null',
      'null',
      'null',
      `'claimed by a worker ahead of a free slot; it starts when one frees, or goes back to the queue after 1 s'`,
    )}
    when status not in ('pending','sleeping') then null
    when wait is not null and available_at > now() and wait->>'reason' = 'rate_limited' then ${build(
      'rate_limited',
      until,
      'null',
      `wait->>'key'`,
      'null',
      `'rate-limited until ' || ${until} || ' (key ' || to_json(wait->>'key')::text || ')'`,
    )}
    when wait is not null and wait->>'reason' = 'concurrency' then ${build(
      'concurrency',
      until,
      heldBy,
      `wait->>'key'`,
      'null',
      `'waiting for a concurrency slot of key ' || to_json(wait->>'key')::text || coalesce(', held by run ' || ${heldBy}, ', held by another shop''s run') || '; looked at again by ' || ${until}`,
    )}
    when status = 'sleeping' then ${build('sleeping', until, 'null', 'null', 'null', `'sleeping until ' || ${until}`)}
    when debounce_key is not null and available_at > now() then ${build(
      'debounced',
      until,
      'null',
      key('debounce_key'),
      'null',
      `'debounced until ' || ${until} || ' (key ' || to_json(${key('debounce_key')})::text || '; a dispatch with the same key moves it later)'`,
    )}
    when available_at > now() and error is not null then ${build(
      'retry_backoff',
      until,
      'null',
      'null',
      'null',
      `'an attempt failed; the next one may start at ' || ${until}`,
    )}
    when available_at > now() then ${build('queued', until, 'null', 'null', 'null', `'due at ' || ${until}`)}
    else ${build(
      'queued',
      'null',
      'null',
      'null',
      aheadCount,
      ahead
        ? `'queued for a worker behind ' || ${aheadCount} || ' due run(s) of its shop; other shops are served in turn'`
        : `'queued for a worker; other shops are served in turn'`,
    )}
  end as "waiting"`);
}

const WAITING = waitingColumn(false);
const WAITING_DETAIL = waitingColumn(true);

/**
 * The one projection of a run row (timestamps as ISO strings on both drivers): `detail` adds input, output, the full
 * error, lost leases and the retry policy; `summary` adds the error summary of a list row.
 */
export function runColumns(options: { detail?: boolean; summary?: boolean } = {}): SQL {
  return sql.join(
    [
      sql.raw('id, app_handle as "appHandle", shop, flow_name as "flowName", status, trigger'),
      ...(options.detail ? [sql.raw('input, output, error')] : []),
      sql.raw('attempt - attempt_base as attempt'),
      ...(options.detail ? [sql.raw('lost_leases as "lostLeases", retry_policy as "retryPolicy"')] : []),
      sql.raw('parent_run_id as "parentRunId"'),
      sql`${isoTs('created_at')} as "createdAt"`,
      sql`${isoTs('started_at')} as "startedAt"`,
      sql`${isoTs('finished_at')} as "finishedAt"`,
      sql`${isoTs('updated_at')} as "updatedAt"`,
      sql`${isoTs('available_at')} as "availableAt"`,
      sql`case when status = 'pending' and error is not null then ${isoTs('available_at')} end as "nextAttemptAt"`,
      options.detail ? WAITING_DETAIL : WAITING,
      ...(options.summary ? [ERROR_SUMMARY] : []),
    ],
    sql`, `,
  );
}

// ----------------------------------------------------------------------------------------------
// Dispatch

/** Serialises concurrent dispatches of one (app, shop, flow) inside the current transaction. */
export function lockFlowKey(exec: Exec, t: Tenant, flowName: string) {
  return exec(sql`select pg_advisory_xact_lock(hashtextextended(${`${t.appHandle}/${t.shop ?? ''}/${flowName}`}, 0))`);
}

export async function activeRunIds(exec: Exec, t: Tenant, flowName: string, limit: number, excludeId?: string) {
  const rows = await exec<{ id: string }>(sql`
    select id from runs
    where ${tenantWhere(t)} and flow_name = ${flowName} and status in ${ACTIVE}
      ${excludeId ? sql`and id <> ${excludeId}::uuid` : sql``}
    order by created_at desc
    limit ${limit}`);
  return rows.map((r) => r.id);
}

export interface NewRun {
  appHandle: string;
  shop: string | null;
  flowName: string;
  trigger: Trigger;
  input: unknown;
  retryPolicy: RetryPolicy;
  parentRunId?: string | null;
  /** The W3C trace context of the dispatch (`traceparent[ tracestate]`) when tracing is on, else null. */
  traceContext?: string | null;
  /** -100 to 100 (default 0): the order of the tenant's runs in the claim. */
  priority?: number;
  /** Stored `[app, flow, key]` of a keyed concurrency / a rate limit (flows/store/claim.ts), else null. */
  concurrencyKey?: string | null;
  rateKey?: string | null;
}

const RUN_COLUMNS = `app_handle, shop, flow_name, trigger, input, retry_policy, parent_run_id, trace_context, priority, concurrency_key, rate_key`;
const RUN_VALUES = `$1, $2, $3, $4, $5::jsonb, $6::jsonb, $7::uuid, $8, $9::smallint, $10, $11`;

const insertRunStatement = prepared('insert_run', `insert into runs (${RUN_COLUMNS}) values (${RUN_VALUES}) returning id`);

/** The insert and the workers' wake-up in one statement (the NOTIFY is delivered at its commit). */
const insertRunNotifyStatement = prepared(
  'insert_run_notify',
  `with ins as (insert into runs (${RUN_COLUMNS}) values (${RUN_VALUES}) returning id)
  select id, pg_notify('mercato_runs', '') from ins`,
);

function runValues(run: NewRun): unknown[] {
  return [
    run.appHandle,
    run.shop,
    run.flowName,
    run.trigger,
    JSON.stringify(run.input ?? {}),
    JSON.stringify(run.retryPolicy),
    run.parentRunId ?? null,
    run.traceContext ?? null,
    run.priority ?? 0,
    run.concurrencyKey ?? null,
    run.rateKey ?? null,
  ];
}

/**
 * Inserts a pending run. With `notify`, the same statement wakes the workers (one round trip less before a worker
 * starts it; the dispatcher uses it when no other dispatch of the process is in flight, see `runsWakeUp`).
 */
export async function insertRun(exec: Exec, run: NewRun, notify = false): Promise<string> {
  const [row] = await exec<{ id: string }>((notify ? insertRunNotifyStatement : insertRunStatement)(...runValues(run)));
  return row.id;
}

/** A debounced dispatch: its key and timing (docs/flows.md, "debounce"). */
export interface Debounce {
  /** Stored `[app, flow, key]`. */
  key: string;
  periodMs: number;
  /** The run starts at most this long after the first dispatch it joined; null: no cap. */
  maxWaitMs: number | null;
}

const debounceStatement = prepared(
  'debounce_run',
  `insert into runs (${RUN_COLUMNS}, debounce_key, available_at)
  values (${RUN_VALUES}, $12, now() + $13::int * interval '1 millisecond')
  on conflict (debounce_key) where debounce_key is not null and status = 'pending'
  do update set input = excluded.input, priority = excluded.priority,
    concurrency_key = excluded.concurrency_key, rate_key = excluded.rate_key,
    available_at = least(excluded.available_at, runs.created_at + $14::int * interval '1 millisecond'),
    updated_at = now()
  returning id, xmax::text <> '0' as joined`,
);

/**
 * A debounced dispatch: joins the run of the key that has not started yet (its input replaced by this one, its start
 * moved to `period` after now, capped at `maxWait` after its first dispatch), or inserts one that starts `period` from
 * now. One statement (the unique index runs_debounce_idx makes racing dispatches join one run).
 */
export async function debounceRun(exec: Exec, run: NewRun, debounce: Debounce): Promise<{ id: string; joined: boolean }> {
  const [row] = await exec<{ id: string; joined: boolean }>(
    debounceStatement(...runValues(run), debounce.key, debounce.periodMs, debounce.maxWaitMs),
  );
  return { id: row.id, joined: row.joined === true || (row.joined as unknown) === 't' };
}

/** The waiting run of a debounce key, if any (a flow with a refusing concurrency limit lets a dispatch join it). */
export async function debouncedRunId(exec: Exec, key: string): Promise<string | undefined> {
  const [row] = await exec<{ id: string }>(sql`select id from runs where debounce_key = ${key} and status = 'pending'`);
  return row?.id;
}

/** A delivery record on its own, in a dispatch's transaction (the flows that are not batched): false for a duplicate. */
export async function recordDeliveryRow(
  exec: Exec,
  d: { webhookId: string; eventId: string | null; topic: string },
  t: Tenant,
  runId: string | null,
): Promise<boolean> {
  const rows = await exec(sql`
    insert into webhook_deliveries (app_handle, webhook_id, event_id, shop, topic, run_id)
    values (${t.appHandle}, ${d.webhookId}, ${d.eventId}, ${t.shop}, ${d.topic}, ${runId}::uuid)
    on conflict do nothing
    returning webhook_id`);
  return rows.length > 0;
}

export function notifyRuns(exec: Exec, runId = '') {
  return exec(sql`select pg_notify(${RUNS_CHANNEL}, ${runId})`);
}

/**
 * Wakes the workers about new runs, coalesced per process. A dispatch that starts while no other one of this process is
 * in flight and no NOTIFY is pending sends its NOTIFY in its own insert statement (`solo`: the lowest latency for a lone
 * dispatch). Under load the others send none in their transaction; after their commit, `wake()` sends one NOTIFY, and
 * the callers whose commits end while it is in flight share the next one (sent after it, so it follows every one of
 * their commits). So there is at most one NOTIFY per batch of dispatches, never one inside every dispatch transaction,
 * where it would hold PostgreSQL's cluster-wide notify lock through the commit's WAL flush. Never rejects: a lost
 * wake-up is covered by the workers' polling.
 */
export function runsWakeUp(db: Pick<Database, 'notify'>) {
  let inFlight: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  let dispatching = 0;
  const send = (): Promise<void> =>
    db.notify(RUNS_CHANNEL, '').then(
      () => {},
      () => {},
    );
  const wake = (): Promise<void> => {
    if (!inFlight) {
      inFlight = send().finally(() => (inFlight = undefined));
      return inFlight;
    }
    next ??= inFlight.then(() => {
      next = undefined;
      inFlight = send().finally(() => (inFlight = undefined));
      return inFlight;
    });
    return next;
  };
  return {
    /**
     * Runs one dispatch's insert; `solo` tells it to notify in its own statement (never when `canNotify` is false). Then
     * wakes the workers if it did not.
     */
    async around<T>(insert: (solo: boolean) => Promise<T>, canNotify = true): Promise<T> {
      const solo = canNotify && dispatching === 0 && !inFlight;
      dispatching++;
      try {
        const result = await insert(solo);
        if (!solo) await wake();
        return result;
      } finally {
        dispatching--;
      }
    },
  };
}

// ----------------------------------------------------------------------------------------------
// API reads

export async function getRun(exec: Exec, t: Tenant, id: string): Promise<RunRecord | undefined> {
  const [row] = await exec<RunRecord>(sql`select ${runColumns({ detail: true })} from runs where id = ${id}::uuid and ${tenantWhere(t)}`);
  return row;
}

/** What a run list is filtered by (besides the tenant). */
export interface RunFilter {
  flowName?: string;
  status?: RunStatus;
  /** Substring of the flow name, the status or the id (case-insensitive; wildcards are literal). */
  search?: string;
  from?: Date;
  to?: Date;
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (m) => `\\${m}`);
}

function filterWhere(t: Tenant, f: RunFilter): SQL {
  const where: SQL[] = [tenantWhere(t)];
  if (f.flowName !== undefined) where.push(sql`flow_name = ${f.flowName}`);
  if (f.status) where.push(sql`status = ${f.status}`);
  if (f.from) where.push(sql`created_at >= ${f.from.toISOString()}::timestamptz`);
  if (f.to) where.push(sql`created_at <= ${f.to.toISOString()}::timestamptz`);
  if (f.search) {
    // Same meaning as `flow_name ilike p or status ilike p or id::text ilike p`, cheaper: the statuses that contain the
    // term are found here, and the id is only compared when the term could be part of a UUID.
    const pattern = `%${escapeLike(f.search)}%`;
    const term = f.search.toLowerCase();
    const alternatives = [sql`flow_name ilike ${pattern}`];
    const statuses = RUN_STATUSES.filter((s) => s.includes(term));
    if (statuses.length > 0)
      alternatives.push(
        sql`status in (${sql.join(
          statuses.map((s) => sql`${s}`),
          sql`, `,
        )})`,
      );
    if (/^[0-9a-f-]+$/.test(term)) alternatives.push(sql`id::text like ${`%${term}%`}`);
    where.push(sql`(${sql.join(alternatives, sql` or `)})`);
  }
  return sql.join(where, sql` and `);
}

/**
 * A page of the tenant's runs, newest first, and the count of every match. The list indexes hold no `running` run (a
 * claim writes no entry in them, schema.ts), so without a status filter the runs in flight are read apart (through
 * runs_active_flow_idx: tenant, status, flow) and merged in. Each part reads its first `offset + limit` rows in order,
 * and the merge is cut to the page.
 */
export async function listRunRows(
  exec: Exec,
  t: Tenant,
  f: RunFilter,
  page: { limit: number; offset: number },
): Promise<{ rows: RunListRow[]; total: number }> {
  const cond = filterWhere(t, f);
  // `desc nulls last` is the order of the (app_handle, shop, …, created_at DESC NULLS LAST, id DESC NULLS LAST) indexes;
  // a plain `desc` (nulls first) would make PostgreSQL read every matching run and sort them.
  const order = sql`order by created_at desc nulls last, id desc nulls last`;
  const columns = runColumns({ summary: true });
  const parts = f.status ? [statusPart(f.status)] : [NOT_RUNNING, RUNNING];
  const pageClause = sql`limit ${page.limit} offset ${page.offset}`;
  const [rows, [{ total }]] = await Promise.all([
    parts.length === 1
      ? exec<RunListRow>(sql`select ${columns} from runs where ${cond} and ${parts[0]} ${order} ${pageClause}`)
      : exec<RunListRow & { sort_at: unknown; sort_id: unknown }>(sql`
          select * from (${sql.join(
            parts.map(
              (part) =>
                sql`(select ${columns}, created_at as sort_at, id as sort_id from runs where ${cond} and ${part} ${order} limit ${page.limit + page.offset})`,
            ),
            sql` union all `,
          )}) merged
          order by sort_at desc nulls last, sort_id desc nulls last ${pageClause}`).then((merged) =>
          merged.map(({ sort_at: _at, sort_id: _id, ...row }) => row),
        ),
    exec<{ total: number }>(
      sql`select (${sql.join(
        parts.map((part) => sql`(select count(*) from runs where ${cond} and ${part})`),
        sql` + `,
      )})::int as total`,
    ),
  ]);
  return { rows, total: Number(total) };
}

/** The runs the list indexes hold, and the others (in flight: runs_active_flow_idx). */
const NOT_RUNNING = sql`status <> 'running'`;
const RUNNING = sql`status = 'running'`;
/** A status filter names the part it reads: `running`, or the others (so that the partial list indexes apply). */
const statusPart = (status: string) => (status === 'running' ? RUNNING : NOT_RUNNING);

/**
 * The change marks of the watched runs, one statement for every watcher of a process: what the watch version is made of
 * (the run row's updated_at and status, its step count and latest step time, its newest log line), as one opaque text
 * per run. A deleted run is missing. `ids` must be UUIDs.
 */
export async function watchMarks(exec: Exec, ids: readonly string[]): Promise<Map<string, string>> {
  const rows = await exec<{ id: string; mark: string }>(sql`
    select r.id, concat_ws('|', r.updated_at, r.status,
      (select count(*) from steps s where s.run_id = r.id),
      (select max(coalesce(s.finished_at, s.started_at)) from steps s where s.run_id = r.id),
      (select max(l.id) from logs l where l.run_id = r.id)) as mark
    from runs r where r.id in (${uuidList(ids)})`);
  return new Map(rows.map((r) => [r.id, r.mark]));
}

/**
 * The change mark of each tenant's runs (what the Home page and the runs lists show), in `tenants` order: the count of
 * its active runs and their latest update. A dispatched run joins the active runs, every status change of an active run
 * moves its `updated_at`, and a run that finishes leaves them, so each of these moves the mark. One statement for every
 * watched tenant; each part reads the partial index of active runs (runs_active_flow_idx), so a shop's history does not
 * count. Deleting finished runs does not move it (the page that deletes reloads itself).
 */
export async function tenantWatchMarks(exec: Exec, tenants: readonly Tenant[]): Promise<string[]> {
  if (tenants.length === 0) return [];
  const parts = tenants.map(
    (t, i) => sql`
      select ${i}::int as i, concat_ws('|', count(*), ${isoTs('max(updated_at)')}) as mark
      from runs where ${tenantWhere(t)} and status in ${ACTIVE}`,
  );
  const rows = await exec<{ i: number; mark: string }>(sql.join(parts, sql` union all `));
  const marks: string[] = tenants.map(() => '');
  for (const row of rows) marks[Number(row.i)] = row.mark;
  return marks;
}

/** The run (detail) with what its watch version is made of: its step count, latest step time and newest log line id. */
export async function watchedRun(
  exec: Exec,
  t: Tenant,
  id: string,
): Promise<{ run: RunRecord; stepCount: number; stepsAt: string | null; lastLogId: number } | undefined> {
  const [row] = await exec<RunRecord & { stepCount: number; stepsAt: string | null; lastLogId: number | string }>(sql`
    select ${runColumns({ detail: true })},
      (select count(*)::int from steps s where s.run_id = runs.id) as "stepCount",
      (select ${isoTs('max(coalesce(s.finished_at, s.started_at))')} from steps s where s.run_id = runs.id) as "stepsAt",
      coalesce((select l.id from logs l where l.run_id = runs.id order by l.id desc limit 1), 0) as "lastLogId"
    from runs where id = ${id}::uuid and ${tenantWhere(t)}`);
  if (!row) return undefined;
  const { stepCount, stepsAt, lastLogId, ...run } = row;
  return { run, stepCount, stepsAt, lastLogId: Number(lastLogId) };
}

/** A failed run of the Home page. */
export interface RecentFailure {
  id: string;
  flowName: string;
  createdAt: string;
  finishedAt: string | null;
  errorSummary: string | null;
}

/** The Home figures: the window's start (database clock), run counts by status since then, the latest failed runs. */
export async function homeFigures(exec: Exec, t: Tenant, recentFailures: number) {
  const tenant = tenantWhere(t);
  const [[{ since }], counts, failures] = await Promise.all([
    exec<{ since: string }>(sql`select ${isoTs("now() - interval '24 hours'")} as since`),
    exec<{ status: RunStatus; n: number; retrying: number }>(sql`
      select status, count(*)::int as n, (count(*) filter (where status = 'pending' and error is not null))::int as retrying
      from runs where ${tenant} and created_at >= now() - interval '24 hours' and ${NOT_RUNNING} group by status
      union all
      select 'running', count(*)::int, 0 from runs where ${tenant} and created_at >= now() - interval '24 hours' and ${RUNNING}
      having count(*) > 0`),
    exec<RecentFailure>(sql`
      select id, flow_name as "flowName", ${isoTs('created_at')} as "createdAt", ${isoTs('finished_at')} as "finishedAt", ${ERROR_SUMMARY}
      from runs where ${tenant} and status = 'failed' order by created_at desc, id desc limit ${recentFailures}`),
  ]);
  return {
    since,
    counts: counts.map((c) => ({ status: c.status, n: Number(c.n) })),
    retrying: counts.reduce((sum, c) => sum + Number(c.retrying), 0),
    failures,
  };
}

// ----------------------------------------------------------------------------------------------
// Lifecycle: cancel, retry, delete

export async function runStatus(exec: Exec, t: Tenant, id: string): Promise<RunStatus | undefined> {
  const [row] = await exec<{ status: RunStatus }>(sql`select status from runs where id = ${id}::uuid and ${tenantWhere(t)}`);
  return row?.status;
}

/** Active → canceled, and NOTIFY the run's worker; the status it had, or undefined when it was not active (or not there). */
export async function cancelActiveRun(exec: Exec, t: Tenant, id: string): Promise<{ previous: RunStatus; flowName: string } | undefined> {
  const [row] = await exec<{ id: string; previous: RunStatus; flowName: string }>(sql`
    with prev as (select id, status from runs where id = ${id}::uuid and ${tenantWhere(t)} and status in ${ACTIVE} for update)
    update runs r set status = 'canceled', finished_at = now(), lease_owner = null, lease_expires_at = null, updated_at = now()
    from prev where r.id = prev.id
    returning r.id, prev.status as previous, r.flow_name as "flowName"`);
  if (row) await exec(sql`select pg_notify(${CANCEL_CHANNEL}, ${id})`);
  return row && { previous: row.previous, flowName: row.flowName };
}

export async function runStatusAndFlow(exec: Exec, t: Tenant, id: string): Promise<{ status: RunStatus; flowName: string } | undefined> {
  const [row] = await exec<{ status: RunStatus; flowName: string }>(
    sql`select status, flow_name as "flowName" from runs where id = ${id}::uuid and ${tenantWhere(t)}`,
  );
  return row;
}

/** The run's status, read with FOR UPDATE (the row stays locked until the transaction ends). */
export async function lockRunStatus(exec: Exec, id: string): Promise<RunStatus | undefined> {
  const [row] = await exec<{ status: RunStatus }>(sql`select status from runs where id = ${id}::uuid for update`);
  return row?.status;
}

/**
 * A finished run back to `pending` for a manual retry: the retry budget starts again (`attempt_base = attempt`). `reset`
 * deletes every step result and forgets which outside-step log lines were written (so the replay writes them again);
 * `resume` deletes the failed and sleeping steps only. Returns how many steps were deleted.
 */
export async function requeueForRetry(exec: Exec, id: string, mode: 'resume' | 'reset'): Promise<number> {
  const deleted = await exec(
    mode === 'reset'
      ? sql`delete from steps where run_id = ${id}::uuid returning name`
      : sql`delete from steps where run_id = ${id}::uuid and status <> 'completed' returning name`,
  );
  // reset starts the flow body afresh: its earlier outside-step log lines stay, but no longer count as written (docs/logs.md)
  if (mode === 'reset') await exec(sql`update logs set body_seq = null where run_id = ${id}::uuid and body_seq is not null`);
  await exec(sql`
    update runs set status = 'pending', attempt_base = attempt, same_attempt = false, lost_leases = 0, error = null, output = null,
      available_at = now(), finished_at = null, lease_owner = null, lease_expires_at = null, updated_at = now()
    where id = ${id}::uuid`);
  return deleted.length;
}

/** Deletes the run if it is not active (its steps and logs go with it); false when nothing was deleted. */
export async function deleteInactiveRun(exec: Exec, t: Tenant, id: string): Promise<boolean> {
  const rows = await exec(sql`delete from runs where id = ${id}::uuid and ${tenantWhere(t)} and status not in ${ACTIVE} returning id`);
  return rows.length > 0;
}

/** Deletes the tenant's inactive runs among `ids` (UUIDs); returns how many were deleted. */
export async function deleteInactiveRuns(exec: Exec, t: Tenant, ids: readonly string[]): Promise<number> {
  const rows = await exec(
    sql`delete from runs where id in (${uuidList(ids)}) and ${tenantWhere(t)} and status not in ${ACTIVE} returning id`,
  );
  return rows.length;
}
