/** The runs service the /api routers are given: the reads and the lifecycle of runs, bound to the runtime's database. */
import type { Database } from '../db/engine.ts';
import type { RuntimeEvents } from '../events.ts';
import type { Tenant } from '../db/sql.ts';
import { type RetryMode, bulkDeleteRuns, cancelRun, deleteRun, retryRun } from './lifecycle.ts';
import { type RunListQuery, listRuns, runDetail } from './list.ts';
import { type FlowRegistry, cronKey } from './registry.ts';
import { mergeRetryPolicy } from './policy.ts';
import type { FlowInfo } from '../api/types.ts';
import type { ResolvedConfig } from '../app/types.ts';

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

/** The flows of the config as GET /api/flows and the MCP flow tools describe them. */
export function describeFlows(deps: { registry: FlowRegistry; config: Pick<ResolvedConfig, 'retryPolicy'> }): FlowInfo[] {
  return deps.registry.list().map((f) => ({
    name: f.name,
    description: f.description ?? null,
    inputSchema: f.inputSchema,
    crons: deps.registry.cronsOf(f.name).map((c) => ({
      key: cronKey(c),
      name: c.name ?? f.name,
      schedule: c.schedule,
      shops: c.shops ?? 'global',
      timezone: c.timezone ?? 'UTC',
      input: c.input ?? {},
    })),
    concurrency: f.concurrency,
    shaping: {
      concurrency: f.shaping.concurrency && { limit: f.shaping.concurrency.limit },
      rateLimit: f.shaping.rateLimit && { limit: f.shaping.rateLimit.limit, periodMs: f.shaping.rateLimit.periodMs },
      debounce: f.shaping.debounce && { periodMs: f.shaping.debounce.periodMs, maxWaitMs: f.shaping.debounce.maxWaitMs },
      priority: f.shaping.priority,
    },
    timeout: f.definition.timeout ?? null,
    retryPolicy: mergeRetryPolicy(deps.config.retryPolicy, f.definition.retryPolicy),
  }));
}
