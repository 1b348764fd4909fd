/** Every SQL statement of provider configs. Rows are tenant-scoped by (app_handle, shop). */
import { sql } from 'drizzle-orm';
import type { Database } from '../db/engine.ts';
import { isoTs, tenantWhere } from '../db/sql.ts';
import type { StoredSecret } from '../secrets/types.ts';

export interface ProviderRow {
  provider: string;
  config: StoredSecret;
  lastCheckedAt: string | null;
  lastCheckOk: boolean | null;
}

const COLUMNS = sql`provider, config, ${isoTs('last_checked_at')} as "lastCheckedAt", last_check_ok as "lastCheckOk"`;

export function listProviderRows(db: Database, appHandle: string, shop: string) {
  return db.query<ProviderRow>(sql`select ${COLUMNS} from provider_configs where ${tenantWhere({ appHandle, shop })}`);
}

export async function getProviderRow(db: Database, appHandle: string, shop: string, provider: string): Promise<ProviderRow | undefined> {
  const [row] = await db.query<ProviderRow>(
    sql`select ${COLUMNS} from provider_configs where ${tenantWhere({ appHandle, shop })} and provider = ${provider}`,
  );
  return row;
}

export async function upsertProviderConfig(db: Database, appHandle: string, shop: string, provider: string, config: StoredSecret) {
  await db.query(sql`
    insert into provider_configs (app_handle, shop, provider, config)
    values (${appHandle}, ${shop}, ${provider}, ${JSON.stringify(config)}::jsonb)
    on conflict (app_handle, shop, provider) do update set config = excluded.config, updated_at = now()`);
}

/** Records a health check; only an existing row is updated. Returns whether one was. */
export async function recordCheck(
  db: Database,
  appHandle: string,
  shop: string,
  provider: string,
  ok: boolean,
): Promise<{ lastCheckedAt: string } | null> {
  const [row] = await db.query<{ lastCheckedAt: string }>(sql`
    update provider_configs set last_checked_at = now(), last_check_ok = ${ok}
    where ${tenantWhere({ appHandle, shop })} and provider = ${provider}
    returning ${isoTs('last_checked_at')} as "lastCheckedAt"`);
  return row ?? null;
}
