/**
 * The statements on steps: the API's step list, the replay read, and the engine's step writes. Every write is fenced on
 * the lease token (`ownedBy`): a worker that lost the run stores nothing.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { StepRow } from '../../api/types.ts';
import { type Exec, isoTs, prepared } from '../../db/sql.ts';

/** A step as the API lists it: the contract's `StepRow` (api/types.ts), one shape for the server and the UI. */
export type StepRecord = StepRow;

/**
 * A sleep's row: `sleeping`, or completed with the result `parkSleeping` wrote (an object whose only key is `wakeAt`).
 * The table has no kind column, so a step returning exactly `{ wakeAt }` would read as a sleep.
 */
const IS_SLEEP = `(status = 'sleeping' or (jsonb_typeof(result) = 'object' and result ? 'wakeAt' and result - 'wakeAt' = '{}'::jsonb))`;

export function listSteps(exec: Exec, runId: string): Promise<StepRecord[]> {
  return exec<StepRecord>(sql`
    select name, status, attempt, result, error, ${isoTs('started_at')} as "startedAt", ${isoTs('finished_at')} as "finishedAt",
      case when finished_at is null then null else round(extract(epoch from (finished_at - started_at)) * 1000)::int end as "durationMs",
      case when ${sql.raw(IS_SLEEP)} then 'sleep' else 'step' end as kind,
      case when ${sql.raw(IS_SLEEP)} and jsonb_typeof(result -> 'wakeAt') = 'string'
        then to_json((result ->> 'wakeAt')::timestamptz) #>> '{}' else null end as "wakeAt"
    from steps where run_id = ${runId}::uuid order by started_at, name`);
}

/** The stored steps of a run, read once at the start of an execution (a completed one is replayed, not run again). */
export function completedStepResults(exec: Exec, runId: string) {
  return exec<{ name: string; status: string; result: unknown }>(storedStepsStatement(runId));
}

const storedStepsStatement = prepared('stored_steps', 'select name, status, result from steps where run_id = $1::uuid');

/** Who writes a step: the run and the lease token of the claim (the fence), the tenant, the step and its start. */
export interface StepWrite {
  runId: string;
  leaseToken: string;
  appHandle: string;
  shop: string | null;
  name: string;
  /** The absolute attempt. */
  attempt: number;
  startedAt: Date;
}

/** Fence: the row lock taken by FOR SHARE waits for a concurrent cancel and then sees its result. */
function ownedBy(runId: string, leaseToken: string): SQL {
  return sql`exists (select 1 from runs where id = ${runId}::uuid and lease_owner = ${leaseToken} and status = 'running' for share)`;
}

/**
 * A completed step's checkpoint, fenced on the lease: the row lock taken by FOR SHARE waits for a concurrent cancel and
 * then sees its result, so a canceled run gets no step written after the cancel.
 */
const storeStepStatement = prepared(
  'store_step',
  `insert into steps (run_id, name, app_handle, shop, status, attempt, result, error, started_at, finished_at)
  select r.id, $3, r.app_handle, r.shop, 'completed', $4, $5::jsonb, null, $6::timestamptz, now()
  from runs r where r.id = $1::uuid and r.lease_owner = $2 and r.status = 'running'
  for share of r
  on conflict (run_id, name) do update set status = 'completed', attempt = excluded.attempt, result = excluded.result,
    error = null, started_at = excluded.started_at, finished_at = excluded.finished_at
  returning run_id`,
);

/** Stores a completed step result; false when the run is no longer this worker's (nothing stored). */
export async function storeStepResult(exec: Exec, w: StepWrite, resultJson: string): Promise<boolean> {
  const rows = await exec(storeStepStatement(w.runId, w.leaseToken, w.name, w.attempt, resultJson, w.startedAt.toISOString()));
  return rows.length === 1;
}

export async function storeStepFailure(exec: Exec, w: StepWrite, error: unknown): Promise<void> {
  await exec(sql`
    insert into steps (run_id, name, app_handle, shop, status, attempt, result, error, started_at, finished_at)
    select ${w.runId}::uuid, ${w.name}, ${w.appHandle}, ${w.shop}, 'failed', ${w.attempt}, null, ${JSON.stringify(error)}::jsonb,
           ${w.startedAt.toISOString()}::timestamptz, now()
    where ${ownedBy(w.runId, w.leaseToken)}
    on conflict (run_id, name) do update set status = 'failed', attempt = excluded.attempt, result = null,
      error = excluded.error, started_at = excluded.started_at, finished_at = excluded.finished_at`);
}

/**
 * A step that is still running: its row says so (`running`, no finish time), fenced on the lease like every step write,
 * so the run's page can show what the run is doing now. Written once per step that outlasts RUNNING_STEP_MARK_MS (short
 * steps cost no write); the step's result or failure then replaces it. A completed row is never turned back.
 */
export async function markStepRunning(exec: Exec, w: StepWrite): Promise<void> {
  await exec(sql`
    insert into steps (run_id, name, app_handle, shop, status, attempt, result, error, started_at, finished_at)
    select ${w.runId}::uuid, ${w.name}, ${w.appHandle}, ${w.shop}, 'running', ${w.attempt}, null, null,
           ${w.startedAt.toISOString()}::timestamptz, null
    where ${ownedBy(w.runId, w.leaseToken)}
    on conflict (run_id, name) do update set status = 'running', attempt = excluded.attempt, result = null, error = null,
      started_at = excluded.started_at, finished_at = null
    where steps.status <> 'completed'`);
}

/** A sleep step whose wake time has passed (the run was claimed again) becomes completed; false when not owned. */
export async function completeSleep(exec: Exec, w: StepWrite): Promise<boolean> {
  const rows = await exec(sql`
    update steps set status = 'completed', finished_at = now()
    where run_id = ${w.runId}::uuid and name = ${w.name} and ${ownedBy(w.runId, w.leaseToken)}
    returning run_id`);
  return rows.length === 1;
}
