/** `GET /api/home`: the Home page's run figures (home.ts, page `flows`). */
import { Hono } from 'hono';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import type { Home } from './home.ts';

export function homeApi(deps: { home: Home }): ApiRouteGroup[] {
  const home = new Hono<ApiEnv>();
  home.get('/', async (c) => c.json(await deps.home.summary(c.get('tenant'))));
  return [{ prefix: '/api/home', page: 'flows', app: home }];
}
