/** `GET /api/stats/runs`, `GET /api/stats/flows`: the admin charts' aggregates (stats.ts, page `flows`). */
import { Hono } from 'hono';
import { parseInput } from '../input.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import { flowStatsQuery, runStatsQuery } from './schemas.ts';
import type { Stats } from './stats.ts';

export function statsApi(deps: { stats: Stats }): ApiRouteGroup[] {
  const stats = new Hono<ApiEnv>();
  stats.get('/runs', async (c) => {
    const { range } = parseInput(runStatsQuery, c.req.query(), { unknownKey: 'query parameter' });
    return c.json(await deps.stats.runs(c.get('tenant'), range));
  });
  stats.get('/flows', async (c) => {
    parseInput(flowStatsQuery, c.req.query(), { unknownKey: 'query parameter' });
    return c.json(await deps.stats.flows(c.get('tenant')));
  });
  return [{ prefix: '/api/stats', page: 'flows', app: stats }];
}
