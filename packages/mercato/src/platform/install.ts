/**
 * Installation on first contact: the first valid session token of a shop without an active installation triggers a
 * token exchange and stores the installation. No transaction is open during the exchange (an HTTP call of up to
 * 10 s): it would stall PGlite's single session and hold a PostgreSQL connection. Concurrent first requests exchange
 * once: in one process they share one promise per (app, shop); across processes (PostgreSQL) a session-level advisory
 * lock on a dedicated connection serialises them (install-lock.ts) and the later ones find the installation made.
 *
 * A failed exchange (platform unreachable, refusal) is logged and does not fail the admin request; the next attempt
 * for that (app, shop) waits `failureBackoffMs` (default 30 s). See docs/platform.md.
 */
import type { MiddlewareHandler } from 'hono';
import type { ResolvedApp } from '../app/platform.ts';
import type { Database } from '../db/engine.ts';
import type { ApiEnv } from '../http/types.ts';
import type { Logger } from '../logger.ts';
import type { Secrets } from '../secrets/types.ts';
import { installLocks } from './install-lock.ts';
import { isInstalled, saveInstallation } from './store.ts';
import { exchangeSessionToken } from './token-exchange.ts';

export const DEFAULT_INSTALL_FAILURE_BACKOFF_MS = 30_000;
/**
 * An (app, shop) found installed is not looked up again for this long: the /api requests of an installed shop cost no
 * installation query (a shop that uninstalled and installed again within it is installed on a request after it).
 */
export const INSTALLED_CACHE_MS = 10_000;
/** At most this many (app, shop) are remembered as installed; past it the memory starts over. */
const INSTALLED_CACHE_MAX = 50_000;
/** How long a process waits for another one's installation of the same shop (its exchange times out after 10 s). */
const INSTALL_WAIT_MS = 15_000;

/**
 * The (app, shop) keys found installed in the last INSTALLED_CACHE_MS (performance clock), at most INSTALLED_CACHE_MAX
 * (past it the memory starts over): /api's installation check and public routes' forShop skip their query for them.
 */
export function seenInstalled() {
  const until = new Map<string, number>();
  return {
    has: (key: string) => (until.get(key) ?? 0) > performance.now(),
    add(key: string) {
      if (until.size >= INSTALLED_CACHE_MAX) until.clear();
      until.set(key, performance.now() + INSTALLED_CACHE_MS);
    },
    delete: (key: string) => void until.delete(key),
  };
}

export type InstallOutcome = 'exists' | 'installed' | 'skipped' | 'failed';

export interface InstallerDeps {
  db: Database;
  secrets: Secrets;
  logger: Logger;
  platformOrigin?: string;
  failureBackoffMs?: number;
}

export interface Installer {
  /** Makes sure (app, shop) is installed, exchanging `sessionToken` when it is not. Platform failures never throw. */
  ensureInstalled(app: ResolvedApp, shop: string, sessionToken: string): Promise<InstallOutcome>;
  /** Counters for tests and diagnostics. */
  readonly stats: { exchanges: number; failures: number };
}

export function createInstaller(deps: InstallerDeps): Installer {
  const inflight = new Map<string, Promise<InstallOutcome>>();
  const failedUntil = new Map<string, number>();
  const backoff = deps.failureBackoffMs ?? DEFAULT_INSTALL_FAILURE_BACKOFF_MS;
  const stats = { exchanges: 0, failures: 0 };
  const exec = deps.db.query;
  const installed = seenInstalled();

  const locks = installLocks(deps.db);

  const exchangeAndSave = async (app: ResolvedApp, shop: string, sessionToken: string): Promise<InstallOutcome> => {
    if (await isInstalled(exec, app.handle, shop)) return 'exists'; // made meanwhile (by this or another process)
    stats.exchanges++;
    const token = await exchangeSessionToken({ app, shop, sessionToken, platformOrigin: deps.platformOrigin });
    await saveInstallation(exec, deps.secrets, { appHandle: app.handle, shop, accessToken: token.accessToken, scopes: token.scopes });
    deps.logger.info({ appHandle: app.handle, shop, scopes: token.scopes }, 'app installed on shop (token exchange)');
    return 'installed';
  };

  const install = async (app: ResolvedApp, shop: string, sessionToken: string): Promise<InstallOutcome> => {
    const key = `${app.handle}/${shop}`;
    try {
      if (!locks) return await exchangeAndSave(app, shop, sessionToken);
      const outcome = await locks.exclusive(key, INSTALL_WAIT_MS, () => exchangeAndSave(app, shop, sessionToken));
      if (outcome !== 'busy') return outcome;
      deps.logger.warn({ appHandle: app.handle, shop }, 'installation still under way in another process; not waiting longer');
      return 'skipped';
    } catch (error) {
      stats.failures++;
      failedUntil.set(key, Date.now() + backoff);
      deps.logger.warn(
        { appHandle: app.handle, shop, error: (error as Error).message },
        `installation failed; retried on a session token after ${backoff} ms`,
      );
      return 'failed';
    }
  };

  return {
    stats,
    async ensureInstalled(app, shop, sessionToken) {
      const key = `${app.handle}/${shop}`;
      if (installed.has(key)) return 'exists';
      if (await isInstalled(exec, app.handle, shop)) {
        installed.add(key);
        return 'exists';
      }
      const until = failedUntil.get(key);
      if (until !== undefined) {
        if (Date.now() < until) return 'skipped';
        failedUntil.delete(key);
      }
      let pending = inflight.get(key);
      if (!pending) {
        pending = install(app, shop, sessionToken).finally(() => inflight.delete(key));
        inflight.set(key, pending);
      }
      return pending;
    },
  };
}

/** Runs after session auth on /api/*: installs the authenticated (app, shop) when needed, then continues. */
export function installationMiddleware(installer: Installer): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    // the token sessionAuth verified (one parse of the header per request)
    const tenant = c.get('tenant');
    const token = c.get('sessionToken');
    if (tenant && token) await installer.ensureInstalled(tenant.app, tenant.shop, token);
    await next();
  };
}
