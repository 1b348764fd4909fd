/**
 * `GET /api/runs/:id/watch?since=<version>&timeout=<seconds>` (one run) and `GET /api/runs/watch?since=…&timeout=…` (the
 * tenant's runs, for Home and the runs lists): the long polls of watch.ts (page `flows`).
 */
import { Hono } from 'hono';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import { parseInput } from '../input.ts';
import { watchQuery } from './schemas.ts';
import type { RunWatch } from './watch.ts';

export function watchApi(deps: { watch: RunWatch }): ApiRouteGroup[] {
  const runs = new Hono<ApiEnv>();
  // before flowsApi's `/:id` (serve.ts mounts this group first): `watch` is not a run id
  runs.get('/watch', async (c) => {
    const { since, timeout } = parseInput(watchQuery, c.req.query(), { unknownKey: 'query parameter' });
    return c.json(await deps.watch.watchTenant(c.get('tenant'), since, timeout * 1000, c.req.raw.signal));
  });
  runs.get('/:id/watch', async (c) => {
    const { since, timeout } = parseInput(watchQuery, c.req.query(), { unknownKey: 'query parameter' });
    return c.json(await deps.watch.watch(c.get('tenant'), c.req.param('id'), since, timeout * 1000, c.req.raw.signal));
  });
  return [{ prefix: '/api/runs', page: 'flows', app: runs }];
}
