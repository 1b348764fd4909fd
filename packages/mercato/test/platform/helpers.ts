/** Shared set-up of the platform tests: the simulator with the test app and shops. */
import { sql } from 'drizzle-orm';
import { type PlatformSim, start } from 'platform-sim';
import type { Database } from '../../src/db/engine.ts';
import { OTHER_SHOP, SHOP, TEST_API_KEY, TEST_API_SECRET } from '../helpers/runtime.ts';

export const ENCRYPTION_KEY = '3f'.repeat(32);
export const SHOP_QUERY = '{ shop { name myshopifyDomain id currencyCode } }';

export function startSim(options: { bucket?: { max: number; restoreRate: number } } = {}): Promise<PlatformSim> {
  return start({
    apps: [{ apiKey: TEST_API_KEY, apiSecret: TEST_API_SECRET }],
    shops: [{ domain: SHOP, name: 'Shop One', currencyCode: 'EUR' }, { domain: OTHER_SHOP, name: 'Shop Two' }, 'shop-three.myshopify.com'],
    bucket: options.bucket,
  });
}

export async function installationRow(db: Database, shop: string) {
  const [row] = await db.query<{ status: string; access_token: unknown; uninstalled_at: string | null; row_text: string }>(
    sql`select status, access_token, to_json(uninstalled_at) #>> '{}' as uninstalled_at, row_to_json(i)::text as row_text from installations i where shop = ${shop}`,
  );
  return row;
}
