/**
 * The worker's statements on runs: claim, heartbeat, recovery of expired leases, hand-back on a graceful stop, parking a
 * sleeping run, the final states, and the next due time. Every write of an execution is fenced on its lease token
 * (`lease_owner = <token> and status = 'running'`): a worker that lost the run (canceled, reclaimed) stores nothing.
 */
import { sql } from 'drizzle-orm';
import type { RetryPolicy, RunStatus } from '../../app/types.ts';
import { type Exec, isoTs, prepared } from '../../db/sql.ts';
import { MAX_TIMER_MS } from '../policy.ts';
import type { StepWrite } from './steps.ts';

export interface ClaimedRun {
  id: string;
  appHandle: string;
  shop: string | null;
  flowName: string;
  input: unknown;
  /** Absolute attempt number (steps and logs carry it). */
  attempt: number;
  /** Attempt within the current retry budget. */
  budgetAttempt: number;
  retryPolicy: RetryPolicy;
  lostLeases: number;
  /** Execution time the current attempt used in earlier executions (before a sleep or a lost lease), in ms. */
  attemptElapsedMs: number;
  /** The run never started before this claim, so it has no stored step (the execution skips reading them). */
  fresh?: boolean;
  /** The trace context stored at dispatch (tracing), or null. */
  traceContext?: string | null;
  /** The stored key of its flow's keyed `concurrency` (a slot it holds), or null. */
  concurrencyKey?: string | null;
  /** Claimed ahead of a free slot (claiming ahead): its start is recorded when the worker starts it. */
  claimedAhead?: boolean;
  /** A gated run claimed ahead: the worker starts it before its other queued runs. */
  headOfQueue?: boolean;
}

/**
 * Runs whose lease expired (their worker died): back to `pending` for the same attempt, counted in lost_leases;
 * a run that has lost `maxLostLeases` leases is failed instead of looping forever.
 */
export function recoverExpiredLeases(exec: Exec, maxLostLeases: number) {
  return exec<{ id: string; status: RunStatus; flow_name: string }>(sql`
    update runs set
      lost_leases = lost_leases + 1,
      status = case when lost_leases + 1 >= ${maxLostLeases} then 'failed' else 'pending' end,
      same_attempt = lost_leases + 1 < ${maxLostLeases},
      error = case when lost_leases + 1 >= ${maxLostLeases}
        then jsonb_build_object('name', 'LeaseLostError', 'message',
          'The worker executing this run stopped ' || (lost_leases + 1) || ' times before finishing it (crash, kill or lost connection); giving up')
        else error end,
      finished_at = case when lost_leases + 1 >= ${maxLostLeases} then now() else null end,
      available_at = now(),
      wait = null,
      lease_owner = null,
      lease_expires_at = null,
      updated_at = now()
    where status = 'running' and lease_expires_at < now()
    returning id, status, flow_name`);
}

export interface HeldLease {
  leaseToken: string;
  /** Execution time the current attempt has used so far (earlier executions included), in ms. */
  elapsedMs: number;
}

/**
 * Extends the leases this worker holds (run id → lease) and records each run's attempt execution time, so a run
 * reclaimed after a crash keeps the time it had used. Returns the ids it still owns (a missing id was canceled or lost).
 */
export async function heartbeat(exec: Exec, leases: ReadonlyMap<string, HeldLease>, leaseMs: number): Promise<Set<string>> {
  if (leases.size === 0) return new Set();
  const values = sql.join(
    [...leases].map(([id, l]) => sql`(${id}::uuid, ${l.leaseToken}::text, ${elapsedInt(l.elapsedMs)}::int)`),
    sql`, `,
  );
  const rows = await exec<{ id: string }>(sql`
    update runs r set lease_expires_at = now() + ${leaseMs} * interval '1 millisecond',
      attempt_elapsed_ms = greatest(r.attempt_elapsed_ms, v.elapsed)
    from (values ${values}) as v(id, owner, elapsed)
    where r.id = v.id and r.lease_owner = v.owner and r.status = 'running'
    returning r.id`);
  return new Set(rows.map((r) => r.id));
}

/** The column is an int (like every timer, at most 2^31 − 1 ms). */
function elapsedInt(ms: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(0, Math.round(ms)));
}

/**
 * Parks the run as sleeping until now() + ms, records the sleep step and the attempt's execution time so far (the time
 * asleep does not count towards the flow timeout). Returns the wake time, or null when not owned.
 */
export async function parkSleeping(exec: Exec, w: StepWrite, ms: number, attemptElapsedMs: number): Promise<Date | null> {
  const rows = await exec<{ wakeAt: string }>(sql`
    with parked as (
      update runs set status = 'sleeping', available_at = now() + ${ms} * interval '1 millisecond',
        attempt_elapsed_ms = ${elapsedInt(attemptElapsedMs)},
        started_at = coalesce(started_at, now()), wait = null,
        lease_owner = null, lease_expires_at = null, updated_at = now()
      where id = ${w.runId}::uuid and lease_owner = ${w.leaseToken} and status = 'running'
      returning available_at
    ), step as (
      insert into steps (run_id, name, app_handle, shop, status, attempt, result, started_at)
      select ${w.runId}::uuid, ${w.name}, ${w.appHandle}, ${w.shop}, 'sleeping', ${w.attempt},
        jsonb_build_object('wakeAt', to_json(available_at)), ${w.startedAt.toISOString()}::timestamptz from parked
      on conflict (run_id, name) do update set status = 'sleeping', result = excluded.result, attempt = excluded.attempt
      returning run_id
    )
    select ${isoTs('available_at')} as "wakeAt" from parked`);
  return rows[0] ? new Date(rows[0].wakeAt) : null;
}

/** A completion of `completeRuns`: the run, its lease, its output and, when it has one, its last step's checkpoint. */
export interface Completion {
  runId: string;
  leaseToken: string;
  outputJson: string;
  lastStep?: { write: StepWrite; resultJson: string };
  /** A run claimed ahead whose start is not recorded yet: how long ago its flow body started (ms). */
  startedAgoMs?: number;
}

/** The start of a run that was claimed ahead: the worker started it `agoMs` ago (`completeRuns` records it). */
export interface StartMark {
  runId: string;
  leaseToken: string;
  agoMs: number;
}

/**
 * Several runs' completions (each with its last step's checkpoint) in one statement and one commit, and the starts of
 * runs claimed ahead that the worker began since its last statement ($2: their `started_at`, on the database clock,
 * and their `claimed` wait cleared). The values travel as JSON arrays (outputs and results spliced in as the JSON they
 * already are), so the statement's text is the same for every batch size and stays prepared. Each row is fenced on its
 * own lease; returns the ids whose completion was stored.
 */
const completeBatchStatement = prepared(
  'complete_batch',
  `with v as (
    select * from jsonb_to_recordset($1::jsonb)
      as v(id uuid, token text, output jsonb, step text, attempt int, result jsonb, started timestamptz, ago float8)
  ), fin as (
    update runs r set status = 'completed', output = v.output, error = null, finished_at = now(),
      started_at = coalesce(r.started_at, now() - coalesce(v.ago, 0) * interval '1 millisecond'),
      wait = null, lease_owner = null, lease_expires_at = null, updated_at = now()
    from v where r.id = v.id and r.lease_owner = v.token and r.status = 'running'
    returning r.id, r.app_handle, r.shop
  ), step as (
    insert into steps (run_id, name, app_handle, shop, status, attempt, result, error, started_at, finished_at)
    select fin.id, v.step, fin.app_handle, fin.shop, 'completed', v.attempt, v.result, null, v.started, now()
    from fin join v on v.id = fin.id where v.step is not null
    on conflict (run_id, name) do update set status = 'completed', attempt = excluded.attempt, result = excluded.result,
      error = null, started_at = excluded.started_at, finished_at = excluded.finished_at
    returning run_id
  ), marked as (
    update runs r set started_at = coalesce(r.started_at, now() - m.ago * interval '1 millisecond'), wait = null, updated_at = now()
    from jsonb_to_recordset($2::jsonb) as m(id uuid, token text, ago float8)
    where r.id = m.id and r.lease_owner = m.token and r.status = 'running' and r.wait is not null
      and not exists (select 1 from v where v.id = m.id)
    returning r.id
  )
  select id from fin`,
);

export async function completeRuns(exec: Exec, completions: readonly Completion[], marks: readonly StartMark[] = []): Promise<Set<string>> {
  const items = completions.map((c) => {
    const step = c.lastStep
      ? `,"step":${JSON.stringify(c.lastStep.write.name)},"attempt":${c.lastStep.write.attempt},"result":${c.lastStep.resultJson},"started":"${c.lastStep.write.startedAt.toISOString()}"`
      : '';
    const ago = c.startedAgoMs === undefined ? '' : `,"ago":${Math.max(0, c.startedAgoMs).toFixed(3)}`;
    return `{"id":"${c.runId}","token":${JSON.stringify(c.leaseToken)},"output":${c.outputJson}${step}${ago}}`;
  });
  const marked = marks.map((m) => `{"id":"${m.runId}","token":${JSON.stringify(m.leaseToken)},"ago":${Math.max(0, m.agoMs).toFixed(3)}}`);
  const rows = await exec<{ id: string }>(completeBatchStatement(`[${items.join(',')}]`, `[${marked.join(',')}]`));
  return new Set(rows.map((r) => r.id));
}

/** A failed attempt: back to pending after `delayMs`, or failed for good when `final`. */
export async function finishFailed(
  exec: Exec,
  runId: string,
  leaseToken: string,
  error: unknown,
  final: boolean,
  delayMs: number,
): Promise<boolean> {
  const rows = await exec(sql`
    update runs set
      status = ${final ? 'failed' : 'pending'},
      error = ${JSON.stringify(error)}::jsonb,
      finished_at = ${final ? sql`now()` : sql`null`},
      available_at = now() + ${delayMs} * interval '1 millisecond',
      started_at = coalesce(started_at, now()), wait = null,
      lease_owner = null, lease_expires_at = null, updated_at = now()
    where id = ${runId}::uuid and lease_owner = ${leaseToken} and status = 'running'
    returning id`);
  return rows.length === 1;
}

/** Graceful stop: hands this worker's unfinished runs (run id → lease token) back for the same attempt (not a lost lease). */
export function releaseRuns(exec: Exec, leases: ReadonlyMap<string, string>) {
  if (leases.size === 0) return Promise.resolve([]);
  const pairs = sql.join(
    [...leases].map(([id, token]) => sql`(${id}::uuid, ${token}::text)`),
    sql`, `,
  );
  return exec<{ id: string }>(sql`
    update runs set status = 'pending', same_attempt = true, available_at = now(), wait = null, lease_owner = null, lease_expires_at = null, updated_at = now()
    where (id, lease_owner) in (${pairs}) and status = 'running'
    returning id`);
}

/**
 * When the worker should look again, in ms from now (each null when there is nothing to wait for): `due`, the earliest
 * available_at of a claimable run (sleeps and backoffs), and `leaseExpiry`, the earliest lease of a running run to
 * expire (a dead worker's runs are reclaimed then, not at the next idle poll). Both read a partial index.
 * (`greatest` ignores a null argument, so the null case is kept apart or an idle worker would poll every few ms.)
 */
export async function msUntilNextDue(exec: Exec): Promise<{ due: number | null; leaseExpiry: number | null }> {
  const [row] = await exec<{ due: number | null; lease_expiry: number | null }>(sql`
    with next as (
      select (select min(available_at) from runs where status in ('pending','sleeping')) as due,
             (select min(lease_expires_at) from runs where status = 'running') as lease_expiry)
    select
      case when due is null then null
        else least(${MAX_TIMER_MS}, greatest(0, ceil(extract(epoch from (due - now())) * 1000)))::int end as due,
      case when lease_expiry is null then null
        else least(${MAX_TIMER_MS}, greatest(0, ceil(extract(epoch from (lease_expiry - now())) * 1000)))::int end as lease_expiry
    from next`);
  return { due: row?.due ?? null, leaseExpiry: row?.lease_expiry ?? null };
}
