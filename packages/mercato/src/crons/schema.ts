import { sql } from 'drizzle-orm';
import { boolean, check, index, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * Per-tenant enabled state of a cron (the toggle). A row is an override of the default (enabled). `shop` is the shop
 * domain, or '' for the app-level row that governs a global cron (docs/crons.md, "Overrides").
 */
export const cronOverrides = pgTable(
  'cron_overrides',
  {
    appHandle: text('app_handle').notNull(),
    shop: text('shop').notNull(),
    cronKey: text('cron_key').notNull(),
    enabled: boolean('enabled').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.appHandle, t.shop, t.cronKey] })],
);

/**
 * One claimed fire time of a cron for one tenant: the primary key is the exactly-once guard. The row is inserted in
 * the same transaction as the run it dispatches, so a tick is either claimed with its outcome or not claimed at all.
 * `shop` is '' for a global cron.
 */
export const cronTicks = pgTable(
  'cron_ticks',
  {
    appHandle: text('app_handle').notNull(),
    shop: text('shop').notNull(),
    cronKey: text('cron_key').notNull(),
    fireAt: timestamp('fire_at', { withTimezone: true }).notNull(),
    /** dispatched | conflict (the flow's concurrency limit) | skipped (see reason) | failed (dispatch refused). */
    status: text('status').notNull(),
    /** Skip reason (`disabled`, `not_installed`) or the conflict / failure message. */
    reason: text('reason'),
    /** The dispatched run, or the active run that caused a conflict. */
    runId: uuid('run_id'),
    schedulerId: text('scheduler_id').notNull(),
    claimedAt: timestamp('claimed_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.appHandle, t.shop, t.cronKey, t.fireAt] }),
    check('cron_ticks_status_check', sql`${t.status} in ('dispatched','conflict','skipped','failed')`),
    index('cron_ticks_fire_at_idx').on(t.fireAt),
  ],
);
