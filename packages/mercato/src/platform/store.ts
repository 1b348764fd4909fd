/**
 * The platform store: every SQL statement of the platform capability.
 * - `installations`: the access token goes in and out only through the secrets module, bound to its row
 *   (`installation:<app>:<shop>`), so a token copied to another row fails to decrypt;
 * - `webhook_deliveries`: the dedupe record of an accepted webhook;
 * - the shop data sweep of redact.ts: the tenant tables of the schema, and the delete of one tenant's rows in one;
 * - the session advisory locks of install-lock.ts (PostgreSQL, on a dedicated connection).
 */
import { recordDeliveryRow } from '../flows/store/runs.ts';
import { type SQL, sql } from 'drizzle-orm';
import type { Database, DedicatedSession } from '../db/engine.ts';
import { type Exec, type Tenant, isoTs, tenantWhere } from '../db/sql.ts';
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

export async function getInstallation(
  db: Pick<Database, 'query'>,
  appHandle: string,
  shop: string,
): Promise<InstallationRecord | undefined> {
  const [row] = await db.query<InstallationRecord>(sql`select ${COLUMNS} from installations where ${tenantWhere({ appHandle, shop })}`);
  return row;
}

export async function isInstalled(exec: Exec, appHandle: string, shop: string): Promise<boolean> {
  const rows = await exec(sql`select 1 from installations where ${tenantWhere({ appHandle, shop })} and status = 'active'`);
  return rows.length > 0;
}

/** Active installations of an app, by shop (for crons `all`, MCP and public routes). */
export async function listActiveInstallations(db: Pick<Database, 'query'>, appHandle: string): Promise<InstallationRecord[]> {
  return db.query<InstallationRecord>(
    sql`select ${COLUMNS} from installations where app_handle = ${appHandle} and status = 'active' order by shop`,
  );
}

/** The decrypted offline access token of an active installation, or undefined. */
export async function getAccessToken(
  db: Pick<Database, 'query'>,
  secrets: Secrets,
  appHandle: string,
  shop: string,
): Promise<string | undefined> {
  const [row] = await db.query<{ token: StoredSecret }>(
    sql`select access_token as token from installations where ${tenantWhere({ appHandle, shop })} and status = 'active'`,
  );
  if (!row?.token) return undefined;
  return secrets.decrypt<string>(row.token, installationOwner(appHandle, shop));
}

/** Inserts or reactivates the installation with a fresh token (encrypted here). */
export async function saveInstallation(
  exec: Exec,
  secrets: Secrets,
  input: { appHandle: string; shop: string; accessToken: string; scopes: string | null },
) {
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

// ---- webhook deliveries

export interface WebhookDeliveryRecord {
  appHandle: string;
  webhookId: string;
  eventId: string | null;
  shop: string;
  topic: string;
  runId: string | null;
}

/** The delivery log of the webhook router: records a delivery on its own (one that has no handler). */
export function webhookDeliveries(db: Pick<Database, 'query'>): { record(delivery: WebhookDeliveryRecord): Promise<boolean> } {
  return { record: (delivery) => recordDelivery(db.query, delivery) };
}

/** Records an accepted delivery; false when its webhook id (or event id for the topic) was already accepted. */
export function recordDelivery(exec: Exec, d: WebhookDeliveryRecord): Promise<boolean> {
  // the one insert of a delivery record, shared with the dispatch that writes it beside its run (flows/store/runs.ts)
  return recordDeliveryRow(exec, d, { appHandle: d.appHandle, shop: d.shop }, d.runId);
}

// ---- shop data sweep (redact.ts)

/** A table of the schema with both `app_handle` and `shop` columns. */
export interface TenantTable {
  table: string;
  hasRunId: boolean;
}

/** Table names the sweep accepts: plain lower-case identifiers, safe to quote into a statement. */
const PLAIN_TABLE_NAME = /^[a-z_][a-z0-9_]*$/;

/** Every table of the current schema that has `app_handle` and `shop` columns (plain lower-case names only), by name. */
export async function tenantTables(exec: Exec): Promise<TenantTable[]> {
  const rows = await exec<TenantTable>(sql`
    select table_name as "table", bool_or(column_name = 'run_id') as "hasRunId"
    from information_schema.columns
    where table_schema = current_schema()
    group by table_name
    having bool_or(column_name = 'app_handle') and bool_or(column_name = 'shop')
    order by table_name`);
  return rows.filter((r) => PLAIN_TABLE_NAME.test(r.table));
}

/**
 * Deletes the tenant's rows of one tenant table; returns how many. `keepRunId` keeps that run (in `runs`) and the rows
 * of a table with a `run_id` column that belong to it. Rejects with the driver's error (a foreign key violation, 23503,
 * when other rows still reference these).
 */
export async function deleteTenantRows(exec: Exec, t: TenantTable, scope: Tenant<string> & { keepRunId?: string }): Promise<number> {
  if (!PLAIN_TABLE_NAME.test(t.table)) throw new Error(`Not a plain table name: ${JSON.stringify(t.table)}`);
  let keep: SQL = sql``;
  if (scope.keepRunId && t.table === 'runs') keep = sql` and id <> ${scope.keepRunId}::uuid`;
  else if (scope.keepRunId && t.hasRunId) keep = sql` and run_id is distinct from ${scope.keepRunId}::uuid`;
  const rows = await exec(sql`delete from ${sql.raw(`"${t.table}"`)} where ${tenantWhere(scope)}${keep} returning 1 as x`);
  return rows.length;
}

// ---- installation locks (install-lock.ts, PostgreSQL)

/** `pg_try_advisory_lock` on the session: true when this session now holds the lock of `id` (never waits). */
export async function tryAdvisoryLock(session: DedicatedSession, id: string): Promise<boolean> {
  const [row] = await session.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtextextended($1, 0)) as locked', [id]);
  return row?.locked === true;
}

/** Releases the session's advisory lock of `id`. */
export async function advisoryUnlock(session: DedicatedSession, id: string): Promise<void> {
  await session.query('select pg_advisory_unlock(hashtextextended($1, 0))', [id]);
}
