/**
 * Shop data erasure (the default `shop/redact` handler). Every table of the schema that has both `app_handle` and
 * `shop` columns is tenant data, so the sweep finds them at run time: runs (their steps and logs go by cascade),
 * installations, provider configs, cron overrides, MCP tokens, and whatever later capabilities add, without this file
 * knowing them. Kept: the run doing the erasure (with its own steps and logs) and the webhook dedupe records (ids
 * only, no payload) so a late redelivery cannot bring data back. Capabilities with data elsewhere (outside these
 * tables, or without those columns) add an eraser with `registerShopDataEraser`.
 */
import { dbErrorCode } from '../db/engine.ts';
import type { Exec, Tenant } from '../db/sql.ts';
import { type TenantTable, deleteTenantRows, tenantTables } from './store.ts';

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

/**
 * Deletes every row of the tenant (app, shop) from every tenant table, then runs the registered erasers. A table
 * whose rows are still referenced by another (foreign key violation) is retried after the others. Returns the
 * number of rows removed per table or eraser. Idempotent: running it again removes nothing more.
 */
export async function redactShopData(exec: Exec, scope: ShopDataScope): Promise<Record<string, number>> {
  const removed: Record<string, number> = {};
  let pending = (await tenantTables(exec)).filter((t) => !REDACT_EXCLUDED_TABLES.has(t.table));
  // runs first: steps and logs go with them by cascade (and are then already gone when their tables come up)
  pending.sort((a, b) => (a.table === 'runs' ? -1 : b.table === 'runs' ? 1 : 0));
  while (pending.length > 0) {
    const blocked: TenantTable[] = [];
    let lastError: unknown;
    for (const t of pending) {
      try {
        removed[t.table] = (removed[t.table] ?? 0) + (await deleteTenantRows(exec, t, scope));
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
