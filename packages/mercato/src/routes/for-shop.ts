/** forShop({ shop, shopifyApp? }): resolves an active installation and returns the tenant's context for a public route. */
import type { ResolvedPlatform } from '../app/platform.ts';
import { normalizeShopDomain } from '../app/shop.ts';
import { BadRequestError, NotFoundError } from '../http/errors.ts';
import type { ForShop, ShopContext } from './types.ts';

export interface InstallationLookup {
  /** True when (appHandle, shop) has an active installation. */
  isActive(appHandle: string, shop: string): Promise<boolean>;
}

export function createForShop(deps: {
  platform: Pick<ResolvedPlatform, 'apps' | 'byHandle'>;
  installations: InstallationLookup;
  connectors: (appHandle: string, shop: string) => ShopContext['providers'];
}): ForShop {
  return async ({ shop: rawShop, shopifyApp }) => {
    const shop = normalizeShopDomain(rawShop);
    if (!shop) throw new BadRequestError(`shop: "${String(rawShop)}" is not a shop domain (<name>.myshopify.com)`, { field: 'shop' });
    let candidates = deps.platform.apps;
    if (shopifyApp !== undefined) {
      const app = deps.platform.byHandle(shopifyApp);
      if (!app) throw new BadRequestError(`shopifyApp: unknown app handle "${shopifyApp}"`, { field: 'shopifyApp' });
      candidates = [app];
    }
    const active = [];
    for (const app of candidates) if (await deps.installations.isActive(app.handle, shop)) active.push(app);
    if (active.length === 0) throw new NotFoundError(`Shop "${shop}" has no active installation${shopifyApp ? ` of app "${shopifyApp}"` : ''}`);
    if (active.length > 1) throw new BadRequestError(`shopifyApp: "${shop}" is installed for several apps (${active.map((a) => a.handle).join(', ')}); name one`, { field: 'shopifyApp' });
    const app = active[0];
    return Object.freeze({ shop, app: Object.freeze({ handle: app.handle, apiKey: app.apiKey }), providers: deps.connectors(app.handle, shop) });
  };
}
