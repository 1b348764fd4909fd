/** The run figures of the admin UI's Home page: the tenant's run counts by status over the last 24 hours and its five latest failed runs. */
import { RUN_STATUSES, type RunStatus } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { Tenant } from '../db/sql.ts';
import { type RecentFailure, homeFigures } from './store/runs.ts';

const RECENT_FAILURES = 5;

export interface HomeSummary {
  /** Start of the 24-hour window (database clock). */
  since: string;
  /** Every status, 0 when none. */
  counts: Record<RunStatus, number>;
  total: number;
  /** Of the pending runs, those waiting to retry after a failed attempt. */
  retrying: number;
  recentFailures: RecentFailure[];
}

export function createHome(deps: { db: Database }) {
  return {
    async summary(t: Tenant): Promise<HomeSummary> {
      const { since, counts: rows, retrying, failures } = await homeFigures(deps.db.query, t, RECENT_FAILURES);
      const counts = Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<RunStatus, number>;
      for (const row of rows) counts[row.status] = row.n;
      return { since, counts, total: Object.values(counts).reduce((a, b) => a + b, 0), retrying, recentFailures: failures };
    },
  };
}

export type Home = ReturnType<typeof createHome>;
