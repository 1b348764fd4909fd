/** /api/functions (page `functions`): definitions, and live instances on the platform. See docs/functions.md. */
import { Hono } from 'hono';
import { readJsonBody } from '../http/body.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import { type FunctionsDeps, createFunctionsService } from './service.ts';

/** The group: the config's function definitions and the Admin GraphQL client of each tenant (deps.adminClient). */
export function functionsApi(deps: FunctionsDeps): ApiRouteGroup[] {
  const service = createFunctionsService(deps);
  const app = new Hono<ApiEnv>();
  app.get('/', async (c) => c.json({ functions: await service.listDefinitions(c.get('tenant')) }));
  app.get('/:handle/instances', async (c) => c.json(await service.listInstances(c.get('tenant'), c.req.param('handle'), c.req.raw.signal)));
  app.post('/:handle/instances', async (c) => {
    const body = await readJsonBody(c);
    return c.json(await service.createInstance(c.get('tenant'), c.req.param('handle'), body, c.req.raw.signal), 201);
  });
  app.put('/:handle/instances/:id', async (c) => {
    const body = await readJsonBody(c);
    return c.json(await service.updateInstance(c.get('tenant'), c.req.param('handle'), c.req.param('id'), body, c.req.raw.signal));
  });
  app.delete('/:handle/instances/:id', async (c) =>
    c.json(await service.deleteInstance(c.get('tenant'), c.req.param('handle'), c.req.param('id'), c.req.query('mode'), c.req.raw.signal)),
  );
  return [{ prefix: '/api/functions', page: 'functions', app }];
}
