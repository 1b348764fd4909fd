/** /api/flows and /api/runs (page `flows`): request checks by schemas.ts, the work by the runs service and the dispatcher. */
import { Hono } from 'hono';
import { readJsonBody } from '../http/body.ts';
import { type InputIssue, InvalidInputError, NotFoundError } from '../errors.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import { parseInput } from '../input.ts';
import type { DispatchFn } from './dispatch.ts';
import type { FlowRegistry } from './registry.ts';
import { RUN_FLOW_NOT_AN_OBJECT, bulkDeleteBody, retryQuery, runFlowBody, runListQuery } from './schemas.ts';
import { type RunService, describeFlows } from './service.ts';
import type { ResolvedConfig, RetryPolicy } from '../app/types.ts';

export interface FlowsApiDeps {
  runs: RunService;
  registry: FlowRegistry;
  dispatch: DispatchFn;
  config: Pick<ResolvedConfig, 'retryPolicy'>;
}

/**
 * `{ input?, retryPolicy? }`. The usual slip, the flow's input sent as the whole body (`{ "orderId": 1 }`), is answered
 * with the unknown field and where the input goes.
 */
function parseRunBody(body: unknown) {
  try {
    return parseInput(runFlowBody, body, { notAnObject: RUN_FLOW_NOT_AN_OBJECT });
  } catch (error) {
    const unwrapped = typeof body === 'object' && body !== null && !Array.isArray(body) && !('input' in body);
    const first = (error instanceof InvalidInputError ? error.issues?.[0] : undefined) as InputIssue | undefined;
    if (error instanceof InvalidInputError && unwrapped && first?.code === 'unrecognized_keys') {
      throw new InvalidInputError(`${error.message}; the flow's input goes under "input": { "input": { … } }`, {
        field: error.field,
        issues: error.issues,
      });
    }
    throw error;
  }
}

export function flowsApi(deps: FlowsApiDeps): ApiRouteGroup[] {
  const flows = new Hono<ApiEnv>();
  flows.get('/', (c) => c.json({ flows: describeFlows(deps) }));
  flows.post('/:name/run', async (c) => {
    const { input, retryPolicy, priority } = parseRunBody(await readJsonBody(c));
    const t = c.get('tenant');
    // the retry policy is checked by the dispatcher (validateDispatchPolicy), as for every caller
    const result = await deps.dispatch({
      appHandle: t.appHandle,
      shop: t.shop,
      flowName: c.req.param('name'),
      input: input ?? {},
      trigger: 'api',
      retryPolicy: retryPolicy as Partial<RetryPolicy> | undefined,
      priority,
      requestId: c.get('requestId'),
    });
    return c.json(result, 202);
  });
  flows.get('/:name/runs', async (c) => {
    const name = c.req.param('name');
    if (!deps.registry.get(name)) throw new NotFoundError(`Flow "${name}" is not registered`);
    return c.json(await deps.runs.list(c.get('tenant'), parseInput(runListQuery, c.req.query(), { unknownKey: 'query parameter' }), name));
  });

  const runs = new Hono<ApiEnv>();
  runs.get('/', async (c) =>
    c.json(await deps.runs.list(c.get('tenant'), parseInput(runListQuery, c.req.query(), { unknownKey: 'query parameter' }))),
  );
  runs.post('/bulk-delete', async (c) => {
    const { ids } = parseInput(bulkDeleteBody, await readJsonBody(c));
    return c.json(await deps.runs.bulkDelete(c.get('tenant'), ids));
  });
  runs.get('/:id', async (c) => {
    const run = await deps.runs.detail(c.get('tenant'), c.req.param('id'));
    if (!run) throw new NotFoundError('Run not found');
    return c.json(run);
  });
  runs.post('/:id/cancel', async (c) => c.json(await deps.runs.cancel(c.get('tenant'), c.req.param('id'))));
  runs.post('/:id/retry', async (c) => {
    const { mode } = parseInput(retryQuery, c.req.query(), { unknownKey: 'query parameter' });
    return c.json(await deps.runs.retry(c.get('tenant'), c.req.param('id'), mode), 202);
  });
  runs.delete('/:id', async (c) => c.json(await deps.runs.delete(c.get('tenant'), c.req.param('id'))));

  return [
    { prefix: '/api/flows', page: 'flows', app: flows },
    { prefix: '/api/runs', page: 'flows', app: runs },
  ];
}
