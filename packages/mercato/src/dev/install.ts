/**
 * `mercato dev` installs every app on the simulator's shops at start-up, as the platform's own dev tooling installs an
 * app on its development store: a session token is minted for each (app, shop) and exchanged for an offline token,
 * which is stored like the admin's first request would store it. So public routes (`forShop`), crons and `ctx.admin`
 * work before anyone opens the admin preview. The exchange happens at every start, also for shops installed in an
 * earlier session: the simulator keeps its tokens in memory, so the tokens stored by the last session are unknown to
 * this one. A failure is logged and the shop is installed later by the first admin request, as before.
 */
import type { ResolvedPlatform } from '../app/platform.ts';
import type { Database } from '../db/engine.ts';
import type { Logger } from '../logger.ts';
import type { Secrets } from '../secrets/types.ts';
import { saveInstallation } from '../platform/store.ts';
import { exchangeSessionToken } from '../platform/token-exchange.ts';
import { signSessionToken } from '../http/session-token.ts';

export interface DevInstallDeps {
  db: Pick<Database, 'query'>;
  secrets: Secrets;
  logger: Logger;
  env: { platformOrigin?: string };
  platform: Pick<ResolvedPlatform, 'apps'>;
}

export async function installDevShops(runtime: DevInstallDeps, shops: string[]): Promise<number> {
  const exec = runtime.db.query;
  const pairs = runtime.platform.apps.flatMap((app) => shops.map((shop) => ({ app, shop })));
  // all at once: each is an exchange with the local simulator and one upsert
  const outcomes = await Promise.all(
    pairs.map(async ({ app, shop }) => {
      try {
        const sessionToken = signSessionToken({ apiKey: app.apiKey, apiSecret: app.apiSecret, shop, ttlSeconds: 60 });
        const token = await exchangeSessionToken({ app, shop, sessionToken, platformOrigin: runtime.env.platformOrigin });
        await saveInstallation(exec, runtime.secrets, {
          appHandle: app.handle,
          shop,
          accessToken: token.accessToken,
          scopes: token.scopes,
        });
        return true;
      } catch (error) {
        runtime.logger.warn(
          { appHandle: app.handle, shop, error: (error as Error).message },
          'could not install the app on a simulator shop at start-up; the first admin request will',
        );
        return false;
      }
    }),
  );
  const installed = outcomes.filter(Boolean).length;
  return installed;
}
