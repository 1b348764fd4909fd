import type { Hono } from 'hono';
import type { PageKey, PageMode } from '../app/types.ts';
import type { ResolvedApp, ResolvedPlatform } from '../app/platform.ts';
import type { Logger } from '../logger.ts';
import type { Runtime } from '../runtime.ts';

/** The authenticated tenant of an /api request: every data query filters by appHandle and shop. */
export interface Tenant {
  appHandle: string;
  shop: string;
  app: ResolvedApp;
}

export type ApiEnv = {
  Variables: {
    requestId: string;
    runtime: Runtime;
    tenant: Tenant;
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
 * What http/ itself reads from the runtime. createHttpApp is given the full Runtime in production (groups read
 * it as `c.get('runtime')`); tests may give just these fields when their groups need nothing more.
 */
export interface HttpRuntime {
  readonly config: { readonly pages: Readonly<Record<PageKey, PageMode>> };
  readonly platform: ResolvedPlatform;
  readonly db: { ping(): Promise<boolean> };
  readonly logger: Logger;
  readonly version: string;
}
