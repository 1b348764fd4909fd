/** GET /api/runs/:id/logs (search) and GET /api/runs/:id/logs/export (download). Another tenant's run is 404. */
import { Hono } from 'hono';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import type { Logger } from '../logger.ts';
import { exportStream } from './export.ts';
import { parseExportParams, parseSearchParams } from './schemas.ts';
import { type LogsServiceDeps, logsService } from './service.ts';

export interface LogsApiDeps extends LogsServiceDeps {
  logger: Logger;
}

export function logsApi(deps: LogsApiDeps): ApiRouteGroup[] {
  const logs = logsService(deps);
  const app = new Hono<ApiEnv>();

  app.get('/:id/logs', async (c) => {
    const params = parseSearchParams(c.req.query());
    return c.json(await logs.search(c.get('tenant'), c.req.param('id'), params));
  });

  app.get('/:id/logs/export', async (c) => {
    const tenant = c.get('tenant');
    const runId = c.req.param('id');
    await logs.requireRun(tenant, runId);
    const { format, levels, query } = parseExportParams(c.req.query());
    const batches = await logs.openExport(tenant, runId, levels, query);
    const requestId = c.get('requestId');
    const body = exportStream(batches, format, (error) =>
      deps.logger.error({ err: error, runId, requestId }, 'log export failed after the download started'),
    );
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
        'content-disposition': `attachment; filename="run-${runId}-logs.${format}"`,
        'cache-control': 'no-store',
      },
    });
  });

  return [{ prefix: '/api/runs', page: 'flows', app }];
}
