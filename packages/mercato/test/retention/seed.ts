/** Rows of the four pruned kinds, written directly (the pruner only reads their time columns and statuses). */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/db/engine.ts';

export const DAY = 86_400_000;
const APP = 'default';
const SHOP = 'one.myshopify.com';

/** A run `ageDays` old (finished then, for a finished status) with one step and two log lines. */
export async function seedRun(
  db: Database,
  status: string,
  ageDays: number,
  finished = status !== 'pending' && status !== 'running' && status !== 'sleeping',
) {
  const id = randomUUID();
  const at = new Date(Date.now() - ageDays * DAY).toISOString();
  await db.query(sql`
    insert into runs (id, app_handle, shop, flow_name, status, trigger, input, retry_policy, created_at, finished_at)
    values (${id}::uuid, ${APP}, ${SHOP}, 'sync', ${status}, 'manual', '{}'::jsonb, '{}'::jsonb, ${at}::timestamptz,
            ${finished ? at : null}::timestamptz)`);
  await db.query(
    sql`insert into steps (run_id, name, app_handle, shop, status, attempt) values (${id}::uuid, 'a', ${APP}, ${SHOP}, 'completed', 1)`,
  );
  await db.query(sql`
    insert into logs (run_id, app_handle, shop, level, message, attempt)
    values (${id}::uuid, ${APP}, ${SHOP}, 'info', 'one', 1), (${id}::uuid, ${APP}, ${SHOP}, 'info', 'two', 1)`);
  return id;
}

export async function seedOthers(db: Database, ageDays: number, n: number) {
  const at = new Date(Date.now() - ageDays * DAY).toISOString();
  const token = randomUUID();
  await db.query(sql`
    insert into mcp_tokens (id, app_handle, shop, name, permissions, secret_hash, hash_key_id, fingerprint)
    values (${token}::uuid, ${APP}, ${SHOP}, 't', '[]'::jsonb, 'h', 'k', 'f')`);
  for (let i = 0; i < n; i++) {
    await db.query(sql`
      insert into mcp_audits (token_id, app_handle, shop, kind, capability, permissions, required_permissions, status, duration_ms, created_at)
      values (${token}::uuid, ${APP}, ${SHOP}, 'tool', 'x', '[]'::jsonb, '[]'::jsonb, 'ok', 1, ${at}::timestamptz)`);
    await db.query(sql`
      insert into webhook_deliveries (app_handle, webhook_id, shop, topic, received_at)
      values (${APP}, ${randomUUID()}, ${SHOP}, 'orders/create', ${at}::timestamptz)`);
    await db.query(sql`
      insert into cron_ticks (app_handle, shop, cron_key, fire_at, status, scheduler_id, claimed_at)
      values (${APP}, '', ${`k${i}`}, ${at}::timestamptz, 'dispatched', 's', ${at}::timestamptz)`);
  }
}

export const count = async (db: Database, table: string) =>
  Number((await db.query<{ n: number }>(sql`select count(*)::int as n from ${sql.raw(table)}`))[0]!.n);
