/**
 * The logs service the API calls: built once from its dependencies (`logsService(deps)`), so the router holds no
 * database handle. Another tenant's run is NotFoundError, like a run that does not exist.
 */
import type { Database } from '../db/engine.ts';
import type { Tenant } from '../db/sql.ts';
import { NotFoundError } from '../errors.ts';
import { type ExportLine, exportBatches } from './export.ts';
import type { ParsedQuery } from './query.ts';
import { type LogSearchParams, type LogSearchResult, runExists, searchLogs, withLogQuery } from './search.ts';
import type { LogLevel } from './writer.ts';

export interface LogsServiceDeps {
  db: Database;
}

export interface LogsService {
  /** NotFoundError when the run is not the tenant's (checked in the search's own transaction). */
  search(tenant: Tenant, runId: string, params: LogSearchParams): Promise<LogSearchResult>;
  /** NotFoundError when the run is not the tenant's. */
  requireRun(tenant: Tenant, runId: string): Promise<void>;
  /**
   * The batches of an export, read as they are consumed (each batch checks the run's tenant again). The query's regular
   * expressions are compiled before it returns, so an invalid one is an InvalidInputError before a download starts.
   */
  openExport(tenant: Tenant, runId: string, levels: readonly LogLevel[], query: ParsedQuery): Promise<AsyncGenerator<ExportLine[]>>;
}

export function logsService(deps: LogsServiceDeps): LogsService {
  return {
    search: (tenant, runId, params) => searchLogs(deps.db, tenant, runId, params),
    async requireRun(tenant, runId) {
      if (!(await runExists(deps.db, tenant, runId))) throw new NotFoundError('Run not found');
    },
    async openExport(tenant, runId, levels, query) {
      await withLogQuery(deps.db, query.where, async () => undefined);
      return exportBatches(deps.db, tenant, runId, levels, query);
    },
  };
}
