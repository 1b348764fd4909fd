/**
 * Which shops a cron may run for. The scheduler depends on this small interface rather than on the platform's tables:
 * the runtime wires it to the active installations of each app (src/platform), tests give their own implementation.
 */
import { normalizeShopDomain } from '../app/shop.ts';
import type { Installations } from '../platform/directory.ts';

/**
 * The installations port as the scheduler uses it: `activeShops` for `shops: 'all'` (one tick per entry), `isActive`
 * for a listed shop (one without an active installation is skipped).
 */
export type ShopDirectory = Installations;

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
