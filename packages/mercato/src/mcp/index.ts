/**
 * The MCP capability: tokens, permissions, the capability registry, the JSON-RPC endpoint `POST /mcp` and `/api/mcp`.
 * See docs/mcp.md and this folder's README.md.
 */
import type { Hono } from 'hono';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import { authCacheFor } from './auth-cache.ts';
import { builtInResources } from './builtins/resources.ts';
import { builtInTools } from './builtins/tools.ts';
import { type McpCatalog, createCatalog } from './catalog.ts';
import { MCP_TIMEOUT_MS, type McpDeps } from './deps.ts';
import { createEndpoint } from './endpoint.ts';
import { createExecutor } from './execute.ts';
import { resolveRateLimits } from '../http/rate-limit.ts';
import { mcpApi } from './router.ts';
import { createSecretHasher } from './secret.ts';
import { loadInstallationKey } from './store.ts';
import { type TokenService, createTokenService } from './tokens.ts';

export type { McpDeps } from './deps.ts';

export interface Mcp {
  catalog: McpCatalog;
  tokens: TokenService;
  /** The /api/mcp group, for apiGroups(). */
  api: ApiRouteGroup[];
  /** Mounts `/mcp` (all methods: POST served, others 405) on the root app, outside /api and its session auth. */
  mount(app: Hono<ApiEnv>): void;
}

function originOf(url: string | null): string | null {
  if (!url) return null;
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

export function createMcp(deps: McpDeps): Mcp {
  const mcp = deps.config.mcp;
  // Built-in resources read the catalog (service://permissions), so it is created first and handed over lazily.
  const catalog: McpCatalog = createCatalog(mcp, { tools: builtInTools(deps), resources: builtInResources(deps, () => catalog) });
  const hasher = createSecretHasher({
    encryptionKey: deps.encryptionKey,
    previousKeys: deps.previousEncryptionKeys,
    installationKey: () => loadInstallationKey(deps.db),
  });
  const known = new Set(catalog.permissions.keys());
  const tokens = createTokenService({
    db: deps.db,
    hasher,
    knownPermissions: () => known,
    hasApp: (handle) => deps.platform.byHandle(handle) !== undefined,
    cache: authCacheFor(deps.db, deps.logger),
    cacheTtlMs: deps.authCacheTtlMs,
  });
  const executor = createExecutor({ db: deps.db, logger: deps.logger, timeoutMs: deps.timeoutMs ?? MCP_TIMEOUT_MS, tracing: deps.tracing });
  const appOrigins = new Set(deps.platform.apps.map((a) => originOf(a.appUrl)).filter((o): o is string => o !== null));
  const endpoint = createEndpoint({
    catalog,
    executor,
    version: deps.version,
    enabled: mcp.enabled,
    tokens,
    appOrigins,
    logger: deps.logger,
    events: deps.events,
    rateLimit: resolveRateLimits(deps.config.rateLimits).mcpPerToken,
  });
  return {
    catalog,
    tokens,
    api: mcpApi({ catalog, tokens, enabled: mcp.enabled, crossShopAccess: mcp.crossShopAccess }),
    mount(app) {
      app.all('/mcp', endpoint);
    },
  };
}
