/**
 * Shop data erasure (the default `shop/redact` handler). Every table of the schema that has both `app_handle` and
 * `shop` columns is tenant data, so the sweep finds them at run time: runs (their steps and logs go by cascade),
 * installations, provider configs, cron overrides, MCP tokens, and whatever later capabilities add, without this file
 * knowing them. Kept: the run doing the erasure (with its own steps and logs) and the webhook dedupe records (ids
 * only, no payload) so a late redelivery cannot bring data back. Capabilities with data elsewhere (outside these
 * tables, or without those columns) add an eraser with `registerShopDataEraser`.
 */
import { type SQL, sql } from 'drizzle-orm';
import { dbErrorCode } from '../db/engine.ts';
import { type Exec, type Tenant, tenantWhere } from '../db/sql.ts';

export interface ShopDataScope extends Tenant<string> {
  /** A run to keep (the one erasing). */
  keepRunId?: string;
}

/** Erases a capability's data of one tenant; returns how many items it removed (for the log). */
export type ShopDataEraser = (exec: Exec, scope: ShopDataScope) => Promise<number | void>;

/** Tables the generic sweep leaves alone. */
export const REDACT_EXCLUDED_TABLES: ReadonlySet<string> = new Set(['webhook_deliveries', 'mercato_migrations']);

const erasers = new Map<string, ShopDataEraser>();

/** Adds (or replaces, by name) an eraser run after the generic sweep by every shop data erasure. */
export function registerShopDataEraser(name: string, eraser: ShopDataEraser): void {
  erasers.set(name, eraser);
}

interface TenantTable {
  table: string;
  hasRunId: boolean;
}

async function tenantTables(exec: Exec): Promise<TenantTable[]> {
  const rows = await exec<{ table: string; hasRunId: boolean }>(sql`
    select table_name as "table", bool_or(column_name = 'run_id') as "hasRunId"
    from information_schema.columns
    where table_schema = current_schema()
    group by table_name
    having bool_or(column_name = 'app_handle') and bool_or(column_name = 'shop')
    order by table_name`);
  return rows.filter((r) => /^[a-z_][a-z0-9_]*$/.test(r.table) && !REDACT_EXCLUDED_TABLES.has(r.table));
}

function deleteStatement(t: TenantTable, scope: ShopDataScope): SQL {
  let keep = sql``;
  if (scope.keepRunId && t.table === 'runs') keep = sql` and id <> ${scope.keepRunId}::uuid`;
  else if (scope.keepRunId && t.hasRunId) keep = sql` and run_id is distinct from ${scope.keepRunId}::uuid`;
  return sql`delete from ${sql.raw(`"${t.table}"`)} where ${tenantWhere(scope)}${keep}`;
}

/**
 * Deletes every row of the tenant (app, shop) from every tenant table, then runs the registered erasers. A table
 * whose rows are still referenced by another (foreign key violation) is retried after the others. Returns the
 * number of rows removed per table or eraser. Idempotent: running it again removes nothing more.
 */
export async function redactShopData(exec: Exec, scope: ShopDataScope): Promise<Record<string, number>> {
  const removed: Record<string, number> = {};
  let pending = await tenantTables(exec);
  // runs first: steps and logs go with them by cascade (and are then already gone when their tables come up)
  pending.sort((a, b) => (a.table === 'runs' ? -1 : b.table === 'runs' ? 1 : 0));
  while (pending.length > 0) {
    const blocked: TenantTable[] = [];
    let lastError: unknown;
    for (const t of pending) {
      try {
        const rows = await exec(sql`${deleteStatement(t, scope)} returning 1 as x`);
        removed[t.table] = (removed[t.table] ?? 0) + rows.length;
      } catch (error) {
        if (dbErrorCode(error) !== '23503') throw error;
        blocked.push(t);
        lastError = error;
      }
    }
    if (blocked.length === pending.length) throw lastError;
    pending = blocked;
  }
  for (const [name, eraser] of erasers) removed[name] = (await eraser(exec, scope)) ?? 0;
  return removed;
}
