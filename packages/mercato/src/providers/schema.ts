import { boolean, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/** The saved config of one provider for one tenant. `config` is the whole config as a StoredSecret (encrypted). */
export const providerConfigs = pgTable(
  'provider_configs',
  {
    appHandle: text('app_handle').notNull(),
    shop: text('shop').notNull(),
    provider: text('provider').notNull(),
    config: jsonb('config').notNull(),
    lastCheckedAt: timestamp('last_checked_at', { withTimezone: true }),
    lastCheckOk: boolean('last_check_ok'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.appHandle, t.shop, t.provider] })],
);
