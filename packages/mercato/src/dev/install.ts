/**
 * `mercato dev` installs every app on the simulator's shops at start-up, as the platform's own dev tooling installs an
 * app on its development store: a session token is minted for each (app, shop) and exchanged like the admin's first
 * request would, so public routes (`forShop`), crons and `ctx.admin` work before anyone opens the admin preview.
 * A failure is logged and the shop is installed later by the first admin request, as before.
 */
import type { Runtime } from '../runtime.ts';
import { createInstaller } from '../platform/install.ts';
import { signSessionToken } from '../http/session-token.ts';

export async function installDevShops(runtime: Pick<Runtime, 'db' | 'secrets' | 'logger' | 'env' | 'platform'>, shops: string[]): Promise<number> {
  // the banner says it; only failures are worth a line here
  const logger = runtime.logger.child({ component: 'dev-install' }, { level: 'warn' });
  const installer = createInstaller({ db: runtime.db, secrets: runtime.secrets, logger, platformOrigin: runtime.env.platformOrigin });
  let installed = 0;
  for (const app of runtime.platform.apps) {
    for (const shop of shops) {
      const token = signSessionToken({ apiKey: app.apiKey, apiSecret: app.apiSecret, shop, ttlSeconds: 60 });
      const outcome = await installer.ensureInstalled(app, shop, token);
      if (outcome === 'installed') installed++;
    }
  }
  return installed;
}
