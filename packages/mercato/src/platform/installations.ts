/**
 * The installations store: every SQL statement on `installations`. The access token goes in and out only through the
 * secrets module, bound to its row (`installation:<app>:<shop>`), so a token copied to another row fails to decrypt.
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../db/engine.ts';
import { type Exec, isoTs, tenantWhere } from '../db/sql.ts';
import type { Secrets, StoredSecret } from '../secrets/types.ts';

export type InstallationStatus = 'active' | 'uninstalled';

export interface InstallationRecord {
  appHandle: string;
  shop: string;
  scopes: string | null;
  status: InstallationStatus;
  installedAt: string;
  uninstalledAt: string | null;
}

const COLUMNS = sql`app_handle as "appHandle", shop, scopes, status, ${isoTs('installed_at')} as "installedAt", ${isoTs('uninstalled_at')} as "uninstalledAt"`;

/** The associated data that binds an access token to its installation row. */
export function installationOwner(appHandle: string, shop: string): string {
  return `installation:${appHandle}:${shop}`;
}

export async function getInstallation(db: Pick<Database, 'query'>, appHandle: string, shop: string): Promise<InstallationRecord | undefined> {
  const [row] = await db.query<InstallationRecord>(sql`select ${COLUMNS} from installations where ${tenantWhere({ appHandle, shop })}`);
  return row;
}

export async function isInstalled(exec: Exec, appHandle: string, shop: string): Promise<boolean> {
  const rows = await exec(sql`select 1 from installations where ${tenantWhere({ appHandle, shop })} and status = 'active'`);
  return rows.length > 0;
}

/** Active installations of an app, by shop (for crons `all`, MCP and public routes). */
export async function listActiveInstallations(db: Pick<Database, 'query'>, appHandle: string): Promise<InstallationRecord[]> {
  return db.query<InstallationRecord>(sql`select ${COLUMNS} from installations where app_handle = ${appHandle} and status = 'active' order by shop`);
}

/** The decrypted offline access token of an active installation, or undefined. */
export async function getAccessToken(db: Pick<Database, 'query'>, secrets: Secrets, appHandle: string, shop: string): Promise<string | undefined> {
  const [row] = await db.query<{ token: StoredSecret }>(
    sql`select access_token as token from installations where ${tenantWhere({ appHandle, shop })} and status = 'active'`,
  );
  if (!row?.token) return undefined;
  return secrets.decrypt<string>(row.token, installationOwner(appHandle, shop));
}

/** Inserts or reactivates the installation with a fresh token (encrypted here). */
export async function saveInstallation(exec: Exec, secrets: Secrets, input: { appHandle: string; shop: string; accessToken: string; scopes: string | null }) {
  const stored = secrets.encrypt(input.accessToken, installationOwner(input.appHandle, input.shop));
  await exec(sql`
    insert into installations (app_handle, shop, access_token, scopes, status, installed_at, uninstalled_at, updated_at)
    values (${input.appHandle}, ${input.shop}, ${JSON.stringify(stored)}::jsonb, ${input.scopes}, 'active', now(), null, now())
    on conflict (app_handle, shop) do update set
      access_token = excluded.access_token, scopes = excluded.scopes, status = 'active',
      installed_at = now(), uninstalled_at = null, updated_at = now()`);
}

/**
 * Marks the installation uninstalled and forgets its token. With `before`, only an installation made before that
 * time is touched (a late `app/uninstalled` must not undo a reinstall that happened after it). Returns true when a
 * row changed.
 */
export async function markUninstalled(exec: Exec, appHandle: string, shop: string, before?: string | null): Promise<boolean> {
  const rows = await exec(sql`
    update installations set status = 'uninstalled', access_token = null, uninstalled_at = now(), updated_at = now()
    where ${tenantWhere({ appHandle, shop })} and status = 'active'
      ${before ? sql`and installed_at <= ${before}::timestamptz` : sql``}
    returning shop`);
  return rows.length > 0;
}

export async function deleteInstallation(exec: Exec, appHandle: string, shop: string): Promise<number> {
  const rows = await exec(sql`delete from installations where ${tenantWhere({ appHandle, shop })} returning shop`);
  return rows.length;
}
