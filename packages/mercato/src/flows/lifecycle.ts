/** Cancel, manual retry and delete of runs, scoped to a tenant. */
import { sql } from 'drizzle-orm';
import type { Database } from '../db/engine.ts';
import { type Tenant, isUuid, tenantWhere, uuidList } from '../db/sql.ts';
import { ConflictError, InvalidInputError, NotFoundError } from '../errors.ts';
import type { FlowRegistry } from './registry.ts';
import { ACTIVE, CANCEL_CHANNEL, activeRunIds, lockFlowKey, notifyRuns } from './store.ts';

export const MAX_BULK_DELETE = 100;

async function statusOf(db: Database, t: Tenant, id: string): Promise<string | undefined> {
  const [row] = await db.query<{ status: string }>(sql`select status from runs where id = ${id}::uuid and ${tenantWhere(t)}`);
  return row?.status;
}

/** Active → canceled. Running executions (in any process) are told through NOTIFY and the heartbeat backstop. */
export async function cancelRun(db: Database, t: Tenant, id: string): Promise<{ runId: string; status: 'canceled'; previousStatus: string }> {
  if (!isUuid(id)) throw new NotFoundError('Run not found');
  const rows = await db.transaction(async (exec) => {
    const updated = await exec<{ id: string; previous: string }>(sql`
      with prev as (select id, status from runs where id = ${id}::uuid and ${tenantWhere(t)} and status in ${ACTIVE} for update)
      update runs r set status = 'canceled', finished_at = now(), lease_owner = null, lease_expires_at = null, updated_at = now()
      from prev where r.id = prev.id
      returning r.id, prev.status as previous`);
    if (updated.length > 0) await exec(sql`select pg_notify(${CANCEL_CHANNEL}, ${id})`);
    return updated;
  });
  if (rows.length === 0) {
    const status = await statusOf(db, t, id);
    if (!status) throw new NotFoundError('Run not found');
    throw new ConflictError(`Run is ${status}; only pending, running or sleeping runs can be canceled`, { status });
  }
  return { runId: id, status: 'canceled', previousStatus: rows[0].previous };
}

export type RetryMode = 'resume' | 'reset';

/**
 * Finished → pending again. `reset` deletes every step result and forgets which outside-step log lines were written (so
 * the replay writes them again); any other mode keeps completed ones. Keeps the retry policy.
 */
export async function retryRun(db: Database, registry: FlowRegistry, t: Tenant, id: string, modeParam: string | undefined) {
  if (!isUuid(id)) throw new NotFoundError('Run not found');
  const mode: RetryMode = modeParam === 'reset' ? 'reset' : 'resume';
  return db.transaction(async (exec) => {
    const [run] = await exec<{ status: string; flow_name: string }>(
      sql`select status, flow_name from runs where id = ${id}::uuid and ${tenantWhere(t)}`,
    );
    if (!run) throw new NotFoundError('Run not found');
    const flow = registry.get(run.flow_name);
    if (flow && flow.concurrency !== null) {
      await lockFlowKey(exec, t, run.flow_name);
    }
    // re-read under the lock: a concurrent retry of the same run must see it active
    const [locked] = await exec<{ status: string }>(sql`select status from runs where id = ${id}::uuid for update`);
    if (!locked || ['pending', 'running', 'sleeping'].includes(locked.status)) {
      throw new ConflictError(`Run is ${locked?.status ?? 'gone'}; only completed, failed or canceled runs can be retried`, { status: locked?.status });
    }
    if (flow && flow.concurrency !== null) {
      const active = await activeRunIds(exec, t, run.flow_name, flow.concurrency, id);
      if (active.length >= flow.concurrency) {
        throw new ConflictError(`Flow "${run.flow_name}" already has ${active.length} active run(s) for this shop (limit ${flow.concurrency})`, { existingRunId: active[0] });
      }
    }
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
    await notifyRuns(exec, id);
    return { runId: id, status: 'pending' as const, mode, previousStatus: locked.status, deletedSteps: deleted.length };
  });
}

export async function deleteRun(db: Database, t: Tenant, id: string): Promise<{ ok: true; runId: string }> {
  if (!isUuid(id)) throw new NotFoundError('Run not found');
  const rows = await db.query(sql`delete from runs where id = ${id}::uuid and ${tenantWhere(t)} and status not in ${ACTIVE} returning id`);
  if (rows.length === 0) {
    const status = await statusOf(db, t, id);
    if (!status) throw new NotFoundError('Run not found');
    throw new ConflictError(`Run is ${status}; cancel it before deleting it`, { status });
  }
  return { ok: true, runId: id };
}

export function parseBulkIds(body: unknown): string[] {
  const ids = (body as { ids?: unknown })?.ids;
  if (!Array.isArray(ids)) throw new InvalidInputError('ids: must be an array of run ids', { field: 'ids' });
  if (ids.length === 0) throw new InvalidInputError('ids: must not be empty', { field: 'ids' });
  if (ids.length > MAX_BULK_DELETE) throw new InvalidInputError(`ids: at most ${MAX_BULK_DELETE} ids per request (got ${ids.length})`, { field: 'ids' });
  const bad = ids.findIndex((v) => !isUuid(v));
  if (bad !== -1) throw new InvalidInputError(`ids[${bad}]: not a run id (UUID)`, { field: `ids[${bad}]` });
  return [...new Set(ids as string[])];
}

/** Deletes the inactive runs among `ids`; active, missing and other tenants' ids are counted in `skipped`. */
export async function bulkDeleteRuns(db: Database, t: Tenant, ids: string[]): Promise<{ deleted: number; skipped: number }> {
  const rows = await db.query(sql`delete from runs where id in (${uuidList(ids)}) and ${tenantWhere(t)} and status not in ${ACTIVE} returning id`);
  return { deleted: rows.length, skipped: ids.length - rows.length };
}
