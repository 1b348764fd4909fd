/**
 * The platform capability: installations (token exchange on first contact), the Admin GraphQL client of a tenant,
 * and durable webhooks. Other capabilities use what this file exports. See README.md beside it and docs/platform.md.
 */
import type { ResolvedPlatform } from '../app/platform.ts';
import type { Database } from '../db/engine.ts';
import type { Logger } from '../logger.ts';
import type { Secrets } from '../secrets/types.ts';
import { AdminClient, type AdminClientRun, type AdminRetryOptions } from './admin-client.ts';
import { NotInstalledError } from './errors.ts';
import { getAccessToken } from './store.ts';
import type { Tracing } from '../telemetry/tracing.ts';
import type { RuntimeEvents } from '../events.ts';

export {
  AdminClient,
  DEFAULT_ADMIN_RETRY,
  type AdminClientRun,
  type AdminRetryOptions,
  type AdminThrottleWait,
  type RawResponse,
  type RequestOptions,
  retryAfterMs,
  throttleLogMessage,
  throttleWaitMs,
} from './admin-client.ts';
export {
  AdminApiError,
  AdminGraphqlError,
  AdminHttpError,
  AdminThrottledError,
  NotInstalledError,
  type GraphqlErrorEntry,
  type QueryCost,
} from './errors.ts';
export {
  type InstallationRecord,
  getAccessToken,
  getInstallation,
  installationOwner,
  listActiveInstallations,
  markUninstalled,
} from './store.ts';
export { createInstaller, installationMiddleware, type Installer, type InstallOutcome } from './install.ts';
export { platformBaseUrl } from './origin.ts';
export { REDACT_EXCLUDED_TABLES, redactShopData, registerShopDataEraser, type ShopDataEraser, type ShopDataScope } from './redact.ts';
export { TokenExchangeError, exchangeSessionToken } from './token-exchange.ts';
export { BUILTIN_TOPICS, COMPLIANCE_TOPICS, webhookFlowName, webhookFlows } from './webhook-flows.ts';
export { WEBHOOK_PATH, verifyWebhookHmac, webhookRouter } from './webhooks.ts';

export interface AdminClientDeps {
  db: Database;
  secrets: Secrets;
  platform: Pick<ResolvedPlatform, 'apiVersion'>;
  /** PLATFORM_ORIGIN; unset → the shop's own domain. */
  platformOrigin?: string;
  logger?: Logger;
  retry?: Partial<AdminRetryOptions>;
  tracing?: Tracing;
  /** Told of each throttle wait (`admin.throttled`). */
  events?: RuntimeEvents;
}

/**
 * The Admin GraphQL client of a tenant. The access token is read (and decrypted) for each request, so an uninstall
 * or a reinstall takes effect at once; without an active installation, requests throw NotInstalledError. `run` (ctx.admin):
 * the run whose logs get a line per throttle wait.
 */
export function adminClientFor(
  deps: AdminClientDeps,
  appHandle: string,
  shop: string,
  signal?: AbortSignal,
  run?: AdminClientRun,
): AdminClient {
  return new AdminClient({
    shop,
    app: appHandle,
    events: deps.events,
    run,
    apiVersion: deps.platform.apiVersion,
    platformOrigin: deps.platformOrigin,
    signal,
    logger: deps.logger,
    retry: deps.retry,
    tracing: deps.tracing,
    accessToken: async () => {
      const token = await getAccessToken(deps.db, deps.secrets, appHandle, shop);
      if (!token) throw new NotInstalledError(appHandle, shop);
      return token;
    },
  });
}
