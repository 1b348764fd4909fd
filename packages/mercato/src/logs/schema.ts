import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { runs } from '../flows/schema.ts';

/** A log line written by ctx.log. Newest first = highest id first. */
export const logs = pgTable(
  'logs',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    runId: uuid('run_id')
      .notNull()
      .references(() => runs.id, { onDelete: 'cascade' }),
    appHandle: text('app_handle').notNull(),
    shop: text('shop'),
    level: text('level').notNull(),
    message: text('message').notNull(),
    data: jsonb('data'),
    step: text('step'),
    attempt: integer('attempt').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().default(sql`clock_timestamp()`),
  },
  (t) => [
    check('logs_level_check', sql`${t.level} in ('info','warn','error')`),
    index('logs_run_idx').on(t.runId, t.id.desc()),
    // Log search (docs/logs.md): level and step filters, free text and regular expressions (pg_trgm), data key equality.
    index('logs_run_level_idx').on(t.runId, t.level, t.id.desc()),
    index('logs_run_step_idx').on(t.runId, t.step, t.id.desc()),
    index('logs_message_trgm_idx').using('gin', t.message.op('gin_trgm_ops')),
    index('logs_data_idx').using('gin', t.data.op('jsonb_path_ops')),
  ],
);
