/**
 * The MCP capability wired to the other capabilities (logs, crons, platform) through the small interfaces of deps.ts.
 * The composition (src/serve.ts) calls mcpDeps once per runtime; `/api/mcp` and `/mcp` share the one instance.
 */
import type { ResolvedPlatform } from '../app/platform.ts';
import type { AdminGraphqlClient, ResolvedConfig } from '../app/types.ts';
import { listCrons, setCronEnabled } from '../crons/index.ts';
import type { Database } from '../db/engine.ts';
import type { RuntimeEvents } from '../events.ts';
import type { DispatchFn } from '../flows/dispatch.ts';
import type { FlowRegistry } from '../flows/registry.ts';
import type { Logger } from '../logger.ts';
import type { Tracing } from '../telemetry/tracing.ts';
import { parseQ } from '../logs/schemas.ts';
import { runExists, searchLogs } from '../logs/search.ts';
import type { Installations } from '../platform/directory.ts';
import { AdminApiError } from '../platform/index.ts';
import { LOG_SEARCH_DOCS } from './builtins/log-search-docs.ts';
import type { McpCronsIntegration, McpDeps, McpLogsIntegration, McpPlatformIntegration } from './deps.ts';
import { RPC, RpcError } from './rpc.ts';

/** Context lines on each side of a match when `context` is true and the query sets none (C:/B:/A:). */
export const DEFAULT_CONTEXT_LINES = 2;

/** Everything the MCP capability is built from. */
export interface McpWiring {
  db: Database;
  config: ResolvedConfig<any, any>;
  registry: FlowRegistry;
  dispatch: DispatchFn;
  logger: Logger;
  version: string;
  platform: ResolvedPlatform;
  env: { encryptionKey?: string; previousEncryptionKeys?: readonly string[] };
  events?: RuntimeEvents;
  installations: Pick<Installations, 'activeShops'>;
  adminClientFor(appHandle: string, shop: string, signal?: AbortSignal): AdminGraphqlClient;
  tracing?: Tracing;
}

function logsIntegration(db: Database): McpLogsIntegration {
  return {
    queryLanguageDocs: LOG_SEARCH_DOCS,
    async search(tenant, runId, o) {
      if (!(await runExists(db, tenant, runId))) return null;
      const parsed = parseQ(o.query);
      const explicit = parsed.before > 0 || parsed.after > 0;
      const query = !o.context
        ? { ...parsed, before: 0, after: 0 }
        : explicit || parsed.where === null
          ? parsed
          : { ...parsed, before: DEFAULT_CONTEXT_LINES, after: DEFAULT_CONTEXT_LINES };
      const { logs, total, totalExact } = await searchLogs(db, tenant, runId, { query, levels: o.levels, limit: o.limit, offset: 0 });
      return { logs, total, totalExact };
    },
  };
}

function cronsIntegration(w: McpWiring): McpCronsIntegration {
  const deps = { db: w.db, crons: w.config.crons };
  return {
    listCrons: (appHandle, shop) => listCrons(deps, { appHandle, shop }),
    setCronEnabled: (appHandle, shop, key, enabled) => setCronEnabled(deps, { appHandle, shop }, key, enabled),
  };
}

function platformIntegration(w: McpWiring): McpPlatformIntegration {
  return {
    installations: w.installations,
    async adminGraphql(r) {
      try {
        return await w.adminClientFor(r.appHandle, r.shop, r.signal).raw(r.query, { variables: r.variables, apiVersion: r.apiVersion });
      } catch (error) {
        // Unreachable platform, missing installation: tell the caller what happened (no secret is in these messages).
        if (error instanceof AdminApiError) throw new RpcError(RPC.EXECUTION_FAILED, error.message);
        throw error;
      }
    },
  };
}

export function mcpDeps(w: McpWiring): McpDeps {
  return {
    db: w.db,
    config: w.config,
    registry: w.registry,
    dispatch: w.dispatch,
    logger: w.logger,
    version: w.version,
    platform: w.platform,
    encryptionKey: w.env.encryptionKey,
    previousEncryptionKeys: w.env.previousEncryptionKeys,
    logs: logsIntegration(w.db),
    crons: cronsIntegration(w),
    platformApi: platformIntegration(w),
    events: w.events,
    tracing: w.tracing,
  };
}
