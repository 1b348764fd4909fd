import { sql } from 'drizzle-orm';
import { check, index, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

/**
 * One app installed on one shop. The offline access token is stored only as a StoredSecret (encrypted through the
 * secrets module, bound to `installation:<app>:<shop>`); it is null once the app is uninstalled.
 */
export const installations = pgTable(
  'installations',
  {
    appHandle: text('app_handle').notNull(),
    shop: text('shop').notNull(),
    accessToken: jsonb('access_token'),
    scopes: text('scopes'),
    status: text('status').notNull(),
    installedAt: timestamp('installed_at', { withTimezone: true }).notNull().defaultNow(),
    uninstalledAt: timestamp('uninstalled_at', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.appHandle, t.shop] }),
    check('installations_status_check', sql`${t.status} in ('active','uninstalled')`),
    check('installations_token_check', sql`${t.status} <> 'active' or ${t.accessToken} is not null`),
  ],
);

/**
 * Webhooks accepted (verified and enqueued), for deduplication: a delivery whose webhook id, or whose event id for
 * the same topic, was already accepted for the app is acknowledged and ignored. No payload is kept here.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    appHandle: text('app_handle').notNull(),
    webhookId: text('webhook_id').notNull(),
    eventId: text('event_id'),
    shop: text('shop').notNull(),
    topic: text('topic').notNull(),
    /** The run that handles it; null for an unknown topic. Not a foreign key: the run may be deleted. */
    runId: uuid('run_id'),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.appHandle, t.webhookId] }),
    uniqueIndex('webhook_deliveries_event_idx')
      .on(t.appHandle, t.topic, t.eventId)
      .where(sql`${t.eventId} is not null`),
    index('webhook_deliveries_received_idx').on(t.receivedAt),
  ],
);
