/** The runs service the /api routers are given: the reads and the lifecycle of runs, bound to the runtime's database. */
import type { Database } from '../db/engine.ts';
import type { RuntimeEvents } from '../events.ts';
import type { Tenant } from '../db/sql.ts';
import { type RetryMode, bulkDeleteRuns, cancelRun, deleteRun, retryRun } from './lifecycle.ts';
import { type RunListQuery, listRuns, runDetail } from './list.ts';
import type { FlowRegistry } from './registry.ts';

export function createRunService(deps: { db: Database; registry: FlowRegistry; events?: RuntimeEvents }) {
  const { db, registry, events } = deps;
  return {
    list: (t: Tenant, q: RunListQuery, flowName?: string) => listRuns(db, t, q, flowName),
    detail: (t: Tenant, id: string) => runDetail(db, t, id),
    cancel: (t: Tenant, id: string) => cancelRun(db, t, id, { events, via: 'api' }),
    retry: (t: Tenant, id: string, mode: RetryMode) => retryRun(db, registry, t, id, mode),
    delete: (t: Tenant, id: string) => deleteRun(db, t, id),
    bulkDelete: (t: Tenant, ids: string[]) => bulkDeleteRuns(db, t, ids),
  };
}

export type RunService = ReturnType<typeof createRunService>;
