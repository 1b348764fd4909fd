/**
 * Which shops a cron may run for. The scheduler depends on this small interface rather than on the platform's tables:
 * the runtime wires it to the active installations of each app (src/platform), tests give their own implementation.
 */
import { normalizeShopDomain } from '../app/shop.ts';

export interface ShopDirectory {
  /** Shop domains with an active installation of the app (`shops: 'all'` fires once per entry). */
  activeShops(appHandle: string): Promise<string[]>;
  /** Whether the shop has an active installation of the app (a listed shop that has none is skipped). */
  isActive(appHandle: string, shop: string): Promise<boolean>;
}

/** A directory over a function listing the active shops of an app (e.g. the platform's installations). */
export function shopDirectoryFrom(list: (appHandle: string) => Promise<readonly string[]>): ShopDirectory {
  const normalized = async (appHandle: string) => {
    const out = new Set<string>();
    for (const shop of await list(appHandle)) {
      const domain = normalizeShopDomain(shop);
      if (domain) out.add(domain);
    }
    return out;
  };
  return {
    activeShops: async (appHandle) => [...(await normalized(appHandle))],
    isActive: async (appHandle, shop) => (await normalized(appHandle)).has(shop),
  };
}

/** A fixed list per app handle (tests, single-shop setups). */
export function staticShopDirectory(shopsByApp: Record<string, readonly string[]>): ShopDirectory {
  return shopDirectoryFrom(async (appHandle) => shopsByApp[appHandle] ?? []);
}
