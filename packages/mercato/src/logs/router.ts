/** GET /api/runs/:id/logs (search) and GET /api/runs/:id/logs/export (download). Another tenant's run is 404. */
import { Hono } from 'hono';
import type { Database } from '../db/engine.ts';
import type { Tenant } from '../db/sql.ts';
import { NotFoundError } from '../errors.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import type { Logger } from '../logger.ts';
import { exportBatches, exportStream } from './export.ts';
import { parseExportParams, parseSearchParams } from './params.ts';
import { runExists, searchLogs, withLogQuery } from './search.ts';

export interface LogsApiDeps {
  db: Database;
  logger: Logger;
}

async function requireRun(db: Database, tenant: Tenant, runId: string) {
  if (!(await runExists(db, tenant, runId))) throw new NotFoundError('Run not found');
}

export function logsApi(deps: LogsApiDeps): ApiRouteGroup[] {
  const app = new Hono<ApiEnv>();

  app.get('/:id/logs', async (c) => {
    const params = parseSearchParams(c.req.query());
    return c.json(await searchLogs(deps.db, c.get('tenant'), c.req.param('id'), params));
  });

  app.get('/:id/logs/export', async (c) => {
    const tenant = c.get('tenant');
    const runId = c.req.param('id');
    await requireRun(deps.db, tenant, runId);
    const { format, levels, query } = parseExportParams(c.req.query());
    // Compile the regular expressions now, so an invalid one is a 400 before the download starts.
    await withLogQuery(deps.db, query.where, async () => undefined);
    const requestId = c.get('requestId');
    const body = exportStream(exportBatches(deps.db, tenant, runId, levels, query), format, (error) =>
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
