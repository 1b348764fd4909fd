/** /api/flows and /api/runs. */
import { Hono } from 'hono';
import type { Database } from '../db/engine.ts';
import { isUuid } from '../db/sql.ts';
import { readJsonBody } from '../http/body.ts';
import { InvalidInputError, NotFoundError } from '../errors.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import type { DispatchFn } from './dispatch.ts';
import { bulkDeleteRuns, cancelRun, deleteRun, parseBulkIds, retryRun } from './lifecycle.ts';
import { listRuns, parseRunListQuery } from './list.ts';
import { mergeRetryPolicy } from './policy.ts';
import type { FlowRegistry } from './registry.ts';
import { getRun, listSteps } from './store.ts';
import type { ResolvedConfig } from '../app/types.ts';

export interface FlowsApiDeps {
  db: Database;
  registry: FlowRegistry;
  dispatch: DispatchFn;
  config: Pick<ResolvedConfig, 'retryPolicy'>;
}

export function cronKey(entry: { flow: string; schedule: string }): string {
  return `${entry.flow}:${entry.schedule}`;
}

export function describeFlows(deps: Pick<FlowsApiDeps, 'registry' | 'config'>) {
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
    timeout: f.definition.timeout ?? null,
    retryPolicy: mergeRetryPolicy(deps.config.retryPolicy, f.definition.retryPolicy),
  }));
}

export function flowsApi(deps: FlowsApiDeps): ApiRouteGroup[] {
  const flows = new Hono<ApiEnv>();
  flows.get('/', (c) => c.json({ flows: describeFlows(deps) }));
  flows.post('/:name/run', async (c) => {
    const body = await readJsonBody(c);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidInputError('Body must be a JSON object: { "input": { … } }');
    const { input, retryPolicy, ...rest } = body as Record<string, unknown>;
    const unknown = Object.keys(rest);
    if (unknown.length > 0) throw new InvalidInputError(`${unknown[0]}: unknown field (expected input, retryPolicy)`, { field: unknown[0] });
    const t = c.get('tenant');
    const result = await deps.dispatch({ appHandle: t.appHandle, shop: t.shop, flowName: c.req.param('name'), input: input ?? {}, trigger: 'api', retryPolicy: retryPolicy as any });
    return c.json(result, 202);
  });
  flows.get('/:name/runs', async (c) => {
    const name = c.req.param('name');
    if (!deps.registry.get(name)) throw new NotFoundError(`Flow "${name}" is not registered`);
    const t = c.get('tenant');
    return c.json(await listRuns(deps.db, t, parseRunListQuery(c.req.query()), name));
  });

  const runs = new Hono<ApiEnv>();
  runs.get('/', async (c) => c.json(await listRuns(deps.db, c.get('tenant'), parseRunListQuery(c.req.query()))));
  runs.post('/bulk-delete', async (c) => c.json(await bulkDeleteRuns(deps.db, c.get('tenant'), parseBulkIds(await readJsonBody(c)))));
  runs.get('/:id', async (c) => {
    const id = c.req.param('id');
    const t = c.get('tenant');
    const exec = deps.db.query;
    const run = isUuid(id) ? await getRun(exec, t, id) : undefined;
    if (!run) throw new NotFoundError('Run not found');
    return c.json({ ...run, steps: await listSteps(exec, id) });
  });
  runs.post('/:id/cancel', async (c) => c.json(await cancelRun(deps.db, c.get('tenant'), c.req.param('id'))));
  runs.post('/:id/retry', async (c) => c.json(await retryRun(deps.db, deps.registry, c.get('tenant'), c.req.param('id'), c.req.query('mode')), 202));
  runs.delete('/:id', async (c) => c.json(await deleteRun(deps.db, c.get('tenant'), c.req.param('id'))));

  return [
    { prefix: '/api/flows', page: 'flows', app: flows },
    { prefix: '/api/runs', page: 'flows', app: runs },
  ];
}
