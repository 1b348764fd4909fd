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
    /**
     * Outside-step lines only (ctx.log in the flow body, not in a step): the n-th such call of an execution of the flow
     * body (1, 2, …). A replay skips a call whose position, level, message and data match a stored line (written once).
     * Null for lines written in a step and for the engine's own lines; cleared by a reset retry.
     */
    bodySeq: integer('body_seq'),
    createdAt: timestamp('created_at', { withTimezone: true })
      .notNull()
      .default(sql`clock_timestamp()`),
  },
  (t) => [
    check('logs_level_check', sql`${t.level} in ('info','warn','error')`),
    index('logs_run_idx').on(t.runId, t.id.desc()),
    // Log search (docs/logs.md): level and step filters, free text and regular expressions (pg_trgm), data key equality.
    index('logs_run_level_idx').on(t.runId, t.level, t.id.desc()),
    index('logs_run_step_idx').on(t.runId, t.step, t.id.desc()),
    // Replay check of outside-step lines (written once): only those lines are indexed.
    index('logs_run_body_seq_idx')
      .on(t.runId, t.bodySeq)
      .where(sql`${t.bodySeq} is not null`),
    index('logs_message_trgm_idx').using('gin', t.message.op('gin_trgm_ops')),
    index('logs_data_idx').using('gin', t.data.op('jsonb_path_ops')),
  ],
);
