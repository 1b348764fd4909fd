/** `GET /api/runs/:id/watch?since=<version>&timeout=<seconds>`: the long poll of watch.ts (page `flows`). */
import { Hono } from 'hono';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import { parseInput } from '../input.ts';
import { watchQuery } from './schemas.ts';
import type { RunWatch } from './watch.ts';

export function watchApi(deps: { watch: RunWatch }): ApiRouteGroup[] {
  const runs = new Hono<ApiEnv>();
  runs.get('/:id/watch', async (c) => {
    const { since, timeout } = parseInput(watchQuery, c.req.query(), { unknownKey: 'query parameter' });
    return c.json(await deps.watch.watch(c.get('tenant'), c.req.param('id'), since, timeout * 1000, c.req.raw.signal));
  });
  return [{ prefix: '/api/runs', page: 'flows', app: runs }];
}
