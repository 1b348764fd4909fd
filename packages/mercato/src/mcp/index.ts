/**
 * The MCP capability: tokens, permissions, the capability registry, the JSON-RPC endpoint `POST /mcp` and `/api/mcp`.
 * See docs/mcp.md and this folder's README.md.
 */
import type { Context, Hono } from 'hono';
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
import { PROTOCOL_HEADER, PROTOCOL_VERSION } from './rpc.ts';
import { createSecretHasher } from './secret.ts';
import { loadInstallationKey } from './store.ts';
import { type TokenService, createTokenService } from './tokens.ts';

export type { McpDeps } from './deps.ts';

/** The OAuth discovery documents MCP clients look for (MCP 2025-11-25, "Authorization"). */
export const OAUTH_DISCOVERY = ['oauth-protected-resource', 'oauth-authorization-server', 'openid-configuration'] as const;
const NO_OAUTH =
  'This MCP server does not use OAuth: create an MCP token in the app (MCP page) and send it as "Authorization: Bearer <token>"';

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
      // Nothing lives below /mcp; MCP clients probe OAuth discovery documents (RFC 9728, RFC 8414), with or without a
      // path suffix, before they send a token. This server does not use OAuth: a JSON 404 tells them so.
      const notFound = (message: string) => (c: Context) =>
        c.json({ error: 'Not found', message }, 404, { [PROTOCOL_HEADER]: PROTOCOL_VERSION });
      app.all('/mcp/*', notFound('The MCP endpoint is POST /mcp; there is nothing below it'));
      for (const document of OAUTH_DISCOVERY) {
        app.all(`/.well-known/${document}`, notFound(NO_OAUTH));
        app.all(`/.well-known/${document}/*`, notFound(NO_OAUTH));
      }
    },
  };
}
