/** Test data for log search: runs and log lines inserted with SQL (the same table ctx.log writes). */
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/db/engine.ts';

export const APP = 'default';

export async function insertRun(db: Database, shop: string | null, flowName = 'sync', appHandle = APP): Promise<string> {
  const [row] = await db.query<{ id: string }>(sql`
    insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status)
    values (${appHandle}, ${shop}, ${flowName}, 'api', '{}'::jsonb, '{}'::jsonb, 'completed') returning id`);
  return row.id;
}

export interface Line {
  level: 'info' | 'warn' | 'error';
  message: string;
  data?: unknown;
  step?: string | null;
  attempt?: number;
  /** ISO time; default: the database clock. */
  at?: string;
}

/** Inserts lines in order (ascending ids) and returns their ids. */
export async function insertLines(db: Database, runId: string, shop: string | null, lines: Line[], appHandle = APP): Promise<number[]> {
  const ids: number[] = [];
  for (const l of lines) {
    const [row] = await db.query<{ id: number }>(sql`
      insert into logs (run_id, app_handle, shop, level, message, data, step, attempt, created_at)
      values (${runId}::uuid, ${appHandle}, ${shop}, ${l.level}, ${l.message}, ${l.data === undefined ? null : JSON.stringify(l.data)}::jsonb,
              ${l.step ?? null}, ${l.attempt ?? 1}, coalesce(${l.at ?? null}::timestamptz, clock_timestamp()))
      returning id`);
    ids.push(Number(row.id));
  }
  return ids;
}

/** `count` lines "line <n>" (n from 1), levels cycling info, warn, error, in one statement. */
export async function insertManyLines(db: Database, runId: string, shop: string | null, count: number, appHandle = APP): Promise<void> {
  await db.query(sql`
    insert into logs (run_id, app_handle, shop, level, message, data, step, attempt)
    select ${runId}::uuid, ${appHandle}, ${shop}, (array['info','warn','error'])[1 + (n % 3)], 'line ' || n,
           jsonb_build_object('n', n), 'step-' || (n % 10), 1
    from generate_series(1, ${count}) as n order by n`);
}

/** The lines of the grammar tests, oldest first; `at` spreads them one minute apart on 2026-11-01. */
export const LINES: Line[] = (
  [
    {
      level: 'info',
      message: 'Starting sync',
      data: { orderId: 1001, customer: { id: 42, name: 'Jane Doe' }, total: 99.5, paid: true, items: [{ sku: 'AB-1' }] },
    },
    { level: 'info', message: 'Fetched 10 orders', data: { count: 10 }, step: 'fetch' },
    { level: 'warn', message: 'Slow response: 1500ms', data: { ms: 1500, orderId: '1002' }, step: 'fetch' },
    {
      level: 'error',
      message: 'Payment failed for order 1001',
      data: { orderId: 1001, reason: 'card_declined', coupon: null },
      step: 'charge',
    },
    { level: 'info', message: 'Retrying 50%_done', data: { orderId: 1003, total: 10, when: '2026-11-05' }, step: 'charge', attempt: 2 },
    { level: 'warn', message: 'Timeout after 3000ms', data: { ms: 3000 }, step: 'push:1', attempt: 2 },
    { level: 'info', message: 'health check ok', step: 'push:2', attempt: 2 },
    { level: 'error', message: 'PAYMENT FAILED again', data: { orderId: 1001, customer: { id: '42' } }, step: 'charge', attempt: 2 },
    { level: 'info', message: 'Done C:3 (a/b) "quoted"', data: { total: 1000, when: '2026-10-30', paid: 'true' }, attempt: 3 },
  ] as Line[]
).map((l, i) => ({ ...l, at: `2026-11-01T00:${String(i).padStart(2, '0')}:00Z` }));
