/** forShop({ shop, shopifyApp? }): resolves an active installation and returns the tenant's context for a public route (throws the typed errors of ./errors.ts). */
import type { ResolvedPlatform } from '../app/platform.ts';
import type { Installations } from '../platform/directory.ts';
import { normalizeShopDomain } from '../app/shop.ts';
import { seenInstalled } from '../platform/install.ts';
import { InvalidShopError, ShopNotInstalledError } from './errors.ts';
import type { ForShop, ShopContext } from './types.ts';

/** What forShop needs of the installations port. */
export type InstallationLookup = Pick<Installations, 'isActive'>;

export function createForShop(deps: {
  platform: Pick<ResolvedPlatform, 'apps' | 'byHandle'>;
  installations: InstallationLookup;
  connectors: (appHandle: string, shop: string) => ShopContext['providers'];
}): ForShop {
  // an (app, shop) found active is not looked up again for INSTALLED_CACHE_MS (as /api's installation check): a busy
  // public route costs no installation query per request; an uninstall is seen within that time
  const seen = seenInstalled();
  const isActive = async (appHandle: string, shop: string) => {
    const key = `${appHandle}/${shop}`;
    if (seen.has(key)) return true;
    const active = await deps.installations.isActive(appHandle, shop);
    if (active) seen.add(key);
    else seen.delete(key);
    return active;
  };
  return async ({ shop: rawShop, shopifyApp }) => {
    const shop = normalizeShopDomain(rawShop);
    if (!shop) throw new InvalidShopError(`shop: "${String(rawShop)}" is not a shop domain (<name>.myshopify.com)`, 'shop');
    let candidates = deps.platform.apps;
    if (shopifyApp !== undefined) {
      const app = deps.platform.byHandle(shopifyApp);
      if (!app) throw new InvalidShopError(`shopifyApp: unknown app handle "${shopifyApp}"`, 'shopifyApp');
      candidates = [app];
    }
    const active = [];
    for (const app of candidates) if (await isActive(app.handle, shop)) active.push(app);
    if (active.length === 0) throw new ShopNotInstalledError(shop, shopifyApp);
    if (active.length > 1)
      throw new InvalidShopError(
        `shopifyApp: "${shop}" is installed for several apps (${active.map((a) => a.handle).join(', ')}); name one`,
        'shopifyApp',
      );
    const app = active[0];
    return Object.freeze({
      shop,
      app: Object.freeze({ handle: app.handle, apiKey: app.apiKey }),
      providers: deps.connectors(app.handle, shop),
    });
  };
}
