/** Cancel, manual retry and delete of runs, scoped to a tenant (the statements are in store/runs.ts). */
import type { Database } from '../db/engine.ts';
import { type Tenant, isUuid } from '../db/sql.ts';
import { ConflictError, NotFoundError } from '../errors.ts';
import type { RuntimeEvents } from '../events.ts';
import type { FlowRegistry } from './registry.ts';
import {
  activeRunIds,
  cancelActiveRun,
  deleteInactiveRun,
  deleteInactiveRuns,
  lockFlowKey,
  lockRunStatus,
  notifyRuns,
  requeueForRetry,
  runStatus,
  runStatusAndFlow,
} from './store/runs.ts';

/** Active → canceled. Running executions (in any process) are told through NOTIFY and the heartbeat backstop. */
export async function cancelRun(
  db: Database,
  t: Tenant,
  id: string,
  told?: { events?: RuntimeEvents; via: 'api' | 'mcp' },
): Promise<{ runId: string; status: 'canceled'; previousStatus: string }> {
  if (!isUuid(id)) throw new NotFoundError('Run not found');
  const canceled = await db.transaction((exec) => cancelActiveRun(exec, t, id));
  if (canceled === undefined) {
    const status = await runStatus(db.query, t, id);
    if (!status) throw new NotFoundError('Run not found');
    throw new ConflictError(`Run is ${status}; only pending, running or sleeping runs can be canceled`, { status });
  }
  told?.events?.emit('run.canceled', {
    runId: id,
    flow: canceled.flowName,
    shop: t.shop, // the tenant's run (tenantWhere)
    app: t.appHandle,
    previousStatus: canceled.previous as 'pending' | 'running' | 'sleeping',
    via: told.via,
  });
  return { runId: id, status: 'canceled', previousStatus: canceled.previous };
}

export type RetryMode = 'resume' | 'reset';

/**
 * Finished → pending again. `reset` deletes every step result and forgets which outside-step log lines were written (so
 * the replay writes them again); `resume` keeps completed ones. Keeps the retry policy.
 */
export async function retryRun(db: Database, registry: FlowRegistry, t: Tenant, id: string, mode: RetryMode) {
  if (!isUuid(id)) throw new NotFoundError('Run not found');
  return db.transaction(async (exec) => {
    const run = await runStatusAndFlow(exec, t, id);
    if (!run) throw new NotFoundError('Run not found');
    const flow = registry.get(run.flowName);
    if (flow && flow.concurrency !== null) {
      await lockFlowKey(exec, t, run.flowName);
    }
    // re-read under the lock: a concurrent retry of the same run must see it active
    const locked = await lockRunStatus(exec, id);
    if (!locked || ['pending', 'running', 'sleeping'].includes(locked)) {
      throw new ConflictError(`Run is ${locked ?? 'gone'}; only completed, failed or canceled runs can be retried`, { status: locked });
    }
    if (flow && flow.concurrency !== null) {
      const active = await activeRunIds(exec, t, run.flowName, flow.concurrency, id);
      if (active.length >= flow.concurrency) {
        throw new ConflictError(
          `Flow "${run.flowName}" already has ${active.length} active run(s) for this shop (limit ${flow.concurrency})`,
          { existingRunId: active[0] },
        );
      }
    }
    const deletedSteps = await requeueForRetry(exec, id, mode);
    await notifyRuns(exec, id);
    return { runId: id, status: 'pending' as const, mode, previousStatus: locked as string, deletedSteps };
  });
}

export async function deleteRun(db: Database, t: Tenant, id: string): Promise<{ ok: true; runId: string }> {
  if (!isUuid(id)) throw new NotFoundError('Run not found');
  if (!(await deleteInactiveRun(db.query, t, id))) {
    const status = await runStatus(db.query, t, id);
    if (!status) throw new NotFoundError('Run not found');
    throw new ConflictError(`Run is ${status}; cancel it before deleting it`, { status });
  }
  return { ok: true, runId: id };
}

/** Deletes the inactive runs among `ids`; active, missing and other tenants' ids are counted in `skipped`. */
export async function bulkDeleteRuns(db: Database, t: Tenant, ids: string[]): Promise<{ deleted: number; skipped: number }> {
  const deleted = await deleteInactiveRuns(db.query, t, ids);
  return { deleted, skipped: ids.length - deleted };
}
