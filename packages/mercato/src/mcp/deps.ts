/**
 * What the MCP capability needs from the rest of the runtime. The integrations with logs, crons and the platform are
 * small interfaces wired in one place (`mcpDeps` in mcp/wiring.ts, called by the composition in src/serve.ts); a built-in tool whose integration is not wired answers
 * -32000 "not available".
 */
import type { ResolvedApp } from '../app/platform.ts';
import type { McpConfig, ResolvedConfig } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { Tenant } from '../db/sql.ts';
import type { RuntimeEvents } from '../events.ts';
import type { DispatchFn } from '../flows/dispatch.ts';
import type { FlowRegistry } from '../flows/registry.ts';
import type { Logger } from '../logger.ts';
import type { Tracing } from '../telemetry/tracing.ts';
import type { Installations } from '../platform/directory.ts';

export type LogLevelName = 'info' | 'warn' | 'error';

/** Log search of one run (src/logs). */
export interface McpLogsIntegration {
  /**
   * Searches the logs of a run of the tenant with the admin log query language; resolves to null when the run does not
   * exist in this tenant. A malformed query throws InvalidInputError (answered -32602).
   */
  search(
    tenant: Tenant<string>,
    runId: string,
    options: { query: string; levels: readonly LogLevelName[]; context: boolean; limit: number; signal: AbortSignal },
  ): Promise<{ logs: unknown[]; total: number } | null>;
  /** The query language reference (Markdown), served as `service://docs/log-search`. */
  queryLanguageDocs: string;
}

/** Crons of a tenant with their per-shop override state (src/crons). */
export interface McpCronsIntegration {
  listCrons(appHandle: string, shop: string): Promise<unknown[]>;
  /** Unknown keys throw NotFoundError or InvalidInputError (answered -32602). */
  setCronEnabled(appHandle: string, shop: string, key: string, enabled: boolean): Promise<unknown>;
}

/** Installations and the raw Admin GraphQL client (src/platform). */
export interface McpPlatformIntegration {
  /** The installations port (src/platform/directory.ts): shop domains with an active installation of the app. */
  installations: Pick<Installations, 'activeShops'>;
  /** One Admin GraphQL call; GraphQL error payloads come back as the body, never as a thrown error. */
  adminGraphql(request: {
    appHandle: string;
    shop: string;
    query: string;
    variables: Record<string, unknown>;
    apiVersion: string;
    signal: AbortSignal;
  }): Promise<{ status: number; body: unknown }>;
}

export interface McpDeps {
  db: Database;
  config: Pick<ResolvedConfig<any, any>, 'retryPolicy' | 'rateLimits'> & { mcp: Required<McpConfig> };
  registry: FlowRegistry;
  dispatch: DispatchFn;
  logger: Logger;
  /** The package version, sent as serverInfo.version. */
  version: string;
  platform: { apps: readonly ResolvedApp[]; apiVersion: string; byHandle(handle: string): ResolvedApp | undefined };
  /** ENCRYPTION_KEY and its previous keys, for the token hashing key. */
  encryptionKey?: string;
  previousEncryptionKeys?: readonly string[];
  logs?: McpLogsIntegration;
  crons?: McpCronsIntegration;
  platformApi?: McpPlatformIntegration;
  /** Tool and resource time-out (default 30,000 ms; tests lower it). */
  timeoutMs?: number;
  /** How long a token row read for authentication is reused (default 2,000 ms; see auth-cache.ts). */
  authCacheTtlMs?: number;
  /** Told about every answered request on POST /mcp (runtime.events). */
  events?: RuntimeEvents;
  /** A span per tool call and resource read (docs/tracing.md). */
  tracing?: Tracing;
}

export const MCP_TIMEOUT_MS = 30_000;
