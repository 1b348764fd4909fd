/** The API's reads of runs: the tenant-scoped, index-backed run list (query parsed by schemas.ts) and a run's detail. */
import type { Database } from '../db/engine.ts';
import { type Tenant, isUuid } from '../db/sql.ts';
import type { RunListQuery } from './schemas.ts';
import { type RunListRow, type RunRecord, getRun, listRunRows } from './store/runs.ts';
import { type StepRecord, listSteps } from './store/steps.ts';

export type { RunListQuery } from './schemas.ts';
export type { RunListRow } from './store/runs.ts';

export async function listRuns(
  db: Database,
  tenant: Tenant,
  q: Pick<RunListQuery, 'limit' | 'offset'> & Partial<Omit<RunListQuery, 'limit' | 'offset'>>,
  flowName?: string,
): Promise<{ runs: RunListRow[]; total: number; limit: number; offset: number }> {
  const { rows, total } = await listRunRows(db.query, tenant, { flowName, status: q.status, search: q.search, from: q.from, to: q.to }, q);
  return { runs: rows, total, limit: q.limit, offset: q.offset };
}

/** GET /api/runs/:id: the run and its steps; undefined when the tenant has no such run. */
export async function runDetail(db: Database, tenant: Tenant, id: string): Promise<(RunRecord & { steps: StepRecord[] }) | undefined> {
  const run = isUuid(id) ? await getRun(db.query, tenant, id) : undefined;
  return run && { ...run, steps: await listSteps(db.query, id) };
}
