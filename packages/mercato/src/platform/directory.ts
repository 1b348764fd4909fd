/**
 * The one installations port: which shops have an active installation of an app. Crons (`all`, listed shops), public
 * routes (forShop) and MCP (reachable shops) depend on this interface, never on the platform's tables. `isActive` is a
 * single indexed query, not a listing.
 */
import type { Database } from '../db/engine.ts';
import { isInstalled, listActiveInstallations } from './store.ts';

export interface Installations {
  /** Shop domains with an active installation of the app. */
  activeShops(appHandle: string): Promise<string[]>;
  /** Whether the shop has an active installation of the app. */
  isActive(appHandle: string, shop: string): Promise<boolean>;
}

/** The port over the installations table. */
export function installationsOf(db: Pick<Database, 'query'>): Installations {
  return {
    activeShops: async (appHandle) => (await listActiveInstallations(db, appHandle)).map((i) => i.shop),
    isActive: (appHandle, shop) => isInstalled((statement) => db.query(statement), appHandle, shop),
  };
}
