/**
 * The one place the MCP capability is wired to the runtime and to the other capabilities (logs, crons, platform).
 * One instance per runtime, shared by `/api/mcp` and `/mcp`.
 */
import { listCrons, setCronEnabled } from '../crons/index.ts';
import { parseQ, toBadRequest } from '../logs/params.ts';
import { QueryError } from '../logs/query.ts';
import { runExists, searchLogs } from '../logs/search.ts';
import { AdminApiError, adminClientFor, listActiveInstallations } from '../platform/index.ts';
import type { Runtime } from '../runtime.ts';
import { LOG_SEARCH_DOCS } from './builtins/log-search-docs.ts';
import type { McpCronsIntegration, McpDeps, McpLogsIntegration, McpPlatformIntegration } from './deps.ts';
import { type Mcp, createMcp } from './index.ts';
import { RPC, RpcError } from './rpc.ts';

/** Context lines on each side of a match when `context` is true and the query sets none (C:/B:/A:). */
export const DEFAULT_CONTEXT_LINES = 2;

function logsIntegration(runtime: Runtime): McpLogsIntegration {
  return {
    queryLanguageDocs: LOG_SEARCH_DOCS,
    async search(tenant, runId, o) {
      if (!(await runExists(runtime.db, tenant, runId))) return null;
      const parsed = parseQ(o.query);
      const explicit = parsed.before > 0 || parsed.after > 0;
      const query = !o.context
        ? { ...parsed, before: 0, after: 0 }
        : explicit || parsed.where === null
          ? parsed
          : { ...parsed, before: DEFAULT_CONTEXT_LINES, after: DEFAULT_CONTEXT_LINES };
      try {
        const { logs, total, totalExact } = await searchLogs(runtime.db, tenant, runId, { query, levels: o.levels, limit: o.limit, offset: 0 });
        return { logs, total, totalExact };
      } catch (error) {
        throw error instanceof QueryError ? toBadRequest(error) : error;
      }
    },
  };
}

function cronsIntegration(runtime: Runtime): McpCronsIntegration {
  const deps = { db: runtime.db, crons: runtime.config.crons };
  return {
    listCrons: (appHandle, shop) => listCrons(deps, { appHandle, shop }),
    setCronEnabled: (appHandle, shop, key, enabled) => setCronEnabled(deps, { appHandle, shop }, key, enabled),
  };
}

function platformIntegration(runtime: Runtime): McpPlatformIntegration {
  const clientDeps = { db: runtime.db, secrets: runtime.secrets, platform: runtime.platform, platformOrigin: runtime.env.platformOrigin, logger: runtime.logger };
  return {
    installedShops: async (appHandle) => (await listActiveInstallations(runtime.db, appHandle)).map((i) => i.shop),
    async adminGraphql(r) {
      try {
        return await adminClientFor(clientDeps, r.appHandle, r.shop, r.signal).raw(r.query, { variables: r.variables, apiVersion: r.apiVersion });
      } catch (error) {
        // Unreachable platform, missing installation: tell the caller what happened (no secret is in these messages).
        if (error instanceof AdminApiError) throw new RpcError(RPC.EXECUTION_FAILED, error.message);
        throw error;
      }
    },
  };
}

export function mcpDepsOf(runtime: Runtime): McpDeps {
  return {
    db: runtime.db,
    config: runtime.config,
    registry: runtime.registry,
    dispatch: runtime.dispatch,
    logger: runtime.logger,
    version: runtime.version,
    platform: runtime.platform,
    encryptionKey: runtime.env.encryptionKey,
    previousEncryptionKeys: runtime.env.previousEncryptionKeys,
    logs: logsIntegration(runtime),
    crons: cronsIntegration(runtime),
    platformApi: platformIntegration(runtime),
    events: runtime.events,
  };
}

const instances = new WeakMap<Runtime, Mcp>();

export function mcpOf(runtime: Runtime): Mcp {
  let mcp = instances.get(runtime);
  if (!mcp) {
    mcp = createMcp(mcpDepsOf(runtime));
    instances.set(runtime, mcp);
  }
  return mcp;
}
