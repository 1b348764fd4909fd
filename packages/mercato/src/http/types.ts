import type { Hono } from 'hono';
import type { PageKey, PageMode } from '../app/types.ts';
import type { ResolvedApp, ResolvedPlatform } from '../app/platform.ts';
import type { Tenant } from '../db/sql.ts';
import type { Logger } from '../logger.ts';
import type { Tracing } from '../telemetry/tracing.ts';

/** The tenant a session token proves (an /api request): a shop's Tenant, with its app. Every data query filters by it. */
export interface SessionTenant extends Tenant<string> {
  app: ResolvedApp;
}

export type ApiEnv = {
  Variables: {
    requestId: string;
    tenant: SessionTenant;
    /** The verified session token itself (sessionAuth): what the installation check exchanges, not parsed again. */
    sessionToken: string;
  };
};

/** A capability's router, mounted by http/ under `prefix` and gated by `page` when given. */
export interface ApiRouteGroup {
  /** For example `/api/flows`. */
  prefix: string;
  page?: PageKey;
  app: Hono<ApiEnv>;
}

/**
 * What http/ itself reads from the runtime (the composition in serve.ts gives it the Runtime; tests may give just
 * these fields). Capability routers get their own dependencies from their factories, never through the context.
 */
export interface HttpRuntime {
  readonly config: { readonly pages: Readonly<Record<PageKey, PageMode>> };
  readonly platform: ResolvedPlatform;
  readonly db: { ping(): Promise<boolean> };
  readonly logger: Logger;
  readonly version: string;
  /** OpenTelemetry traces: a server span per request when set (http/tracing.ts). */
  readonly tracing?: Tracing;
  /** `dev` keeps the access lines at debug (the terminal shows events instead); elsewhere their level follows the status. */
  readonly mode?: string;
}
