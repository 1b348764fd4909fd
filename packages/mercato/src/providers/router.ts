/** /api/providers */
import { Hono } from 'hono';
import { readJsonBody } from '../http/body.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import type { Logger } from '../logger.ts';
import { saveProviderConfig } from './save.ts';
import { CheckFailedError, type ProvidersDeps, checkProvider, definitionOf, listProviders } from './service.ts';

export function providersApi(deps: ProvidersDeps & { logger: Logger }): ApiRouteGroup[] {
  const app = new Hono<ApiEnv>();
  app.get('/', async (c) => {
    const t = c.get('tenant');
    return c.json({ providers: await listProviders(deps, t.appHandle, t.shop) });
  });
  app.put('/:name', async (c) => {
    const t = c.get('tenant');
    definitionOf(deps, c.req.param('name')); // an unknown provider is a 404 whatever the body
    const body = await readJsonBody(c);
    return c.json(await saveProviderConfig(deps, t.appHandle, t.shop, c.req.param('name'), body));
  });
  app.post('/:name/check', async (c) => {
    const t = c.get('tenant');
    try {
      return c.json(await checkProvider(deps, t.appHandle, t.shop, c.req.param('name')));
    } catch (error) {
      if (error instanceof CheckFailedError) {
        deps.logger.warn(
          { requestId: c.get('requestId'), provider: c.req.param('name'), appHandle: t.appHandle, shop: t.shop, error: error.message },
          'provider check failed',
        );
      }
      throw error;
    }
  });
  return [{ prefix: '/api/providers', page: 'providers', app }];
}
