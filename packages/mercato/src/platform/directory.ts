/**
 * Which shops have an active installation of an app: one lookup for crons (`all`, listed shops) and for public
 * routes (forShop). `isActive` is a single indexed query, not a listing.
 */
import type { Database } from '../db/engine.ts';
import { isInstalled, listActiveInstallations } from './installations.ts';

export interface InstallationDirectory {
  activeShops(appHandle: string): Promise<string[]>;
  isActive(appHandle: string, shop: string): Promise<boolean>;
}

export function installationDirectory(db: Pick<Database, 'query'>): InstallationDirectory {
  return {
    activeShops: async (appHandle) => (await listActiveInstallations(db, appHandle)).map((i) => i.shop),
    isActive: (appHandle, shop) => isInstalled((statement) => db.query(statement), appHandle, shop),
  };
}
