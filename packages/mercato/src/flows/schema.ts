import { sql } from 'drizzle-orm';
import {
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

/** One run of a flow. Tenant: (app_handle, shop); shop is null for a global run. */
export const runs = pgTable(
  'runs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    appHandle: text('app_handle').notNull(),
    shop: text('shop'),
    flowName: text('flow_name').notNull(),
    status: text('status').notNull().default('pending'),
    trigger: text('trigger').notNull(),
    input: jsonb('input').notNull(),
    output: jsonb('output'),
    /** `{ name, message, stack? }` of the last failure. */
    error: jsonb('error'),
    /** Attempts started so far (sleeps and resumes do not count). */
    attempt: integer('attempt').notNull().default(0),
    /** Attempts before the last manual retry: the retry budget counts `attempt - attempt_base`. */
    attemptBase: integer('attempt_base').notNull().default(0),
    /** Set when a run goes back to `pending` to re-run the same attempt (lease lost, worker stopping): the next claim does not count it. */
    sameAttempt: boolean('same_attempt').notNull().default(false),
    /** Attempts lost to an expired lease (worker died): counted apart so a poison run ends failed. */
    lostLeases: integer('lost_leases').notNull().default(0),
    /** Execution time (ms) the current attempt has used so far: sleeps do not count, executions before a sleep or a lost lease do (flow timeout). */
    attemptElapsedMs: integer('attempt_elapsed_ms').notNull().default(0),
    /** The merged retry policy (app < flow < dispatch), frozen at dispatch. */
    retryPolicy: jsonb('retry_policy').notNull(),
    /** Earliest time the run may be claimed (retry backoff, sleep wake-up). */
    availableAt: timestamp('available_at', { withTimezone: true }).notNull().defaultNow(),
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
    parentRunId: uuid('parent_run_id'),
    /** The W3C trace context of the dispatch (`traceparent[ tracestate]`), when tracing was on: the run's spans continue it. */
    traceContext: text('trace_context'),
    /** Orders the runs of one tenant in the claim (higher first), -100 to 100: the flow's `priority` or the dispatch's. */
    priority: smallint('priority').notNull().default(0),
    /** `[app, flow, key]` as JSON when the flow has a keyed `concurrency`: the claim lets `limit` of them run at once. */
    concurrencyKey: text('concurrency_key'),
    /** `[app, flow, key]` as JSON when the flow has a `rateLimit`: the claim lets `limit` of them start per period. */
    rateKey: text('rate_key'),
    /** `[app, flow, key]` as JSON while a debounced run waits: later dispatches with the key join it (cleared at the claim). */
    debounceKey: text('debounce_key'),
    /** Why the claim set a due run aside (`{ reason: 'rate_limited' | 'concurrency', heldBy, key }`), until `available_at`. */
    wait: jsonb('wait'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('runs_status_check', sql`${t.status} in ('pending','running','sleeping','completed','failed','canceled')`),
    // The admin's lists (docs/architecture.md "The run's hot path"). None of them holds `running` runs, so that a claim
    // (→ running) writes no entry in any of them: lists read the runs in flight through runs_active_flow_idx and merge
    // them in (listRunRows). The status index holds neither `running` nor `completed` runs, so that a completion writes no
    // entry in it either: lists of completed runs walk runs_tenant_created_idx newest first (most runs are completed).
    index('runs_tenant_created_idx')
      .on(t.appHandle, t.shop, t.createdAt.desc(), t.id.desc())
      .where(sql`${t.status} <> 'running'`),
    index('runs_tenant_flow_created_idx')
      .on(t.appHandle, t.shop, t.flowName, t.createdAt.desc(), t.id.desc())
      .where(sql`${t.status} <> 'running'`),
    index('runs_tenant_status_created_idx')
      .on(t.appHandle, t.shop, t.status, t.createdAt.desc(), t.id.desc())
      .where(sql`${t.status} in ('pending','sleeping','failed','canceled')`),
    index('runs_claimable_idx')
      .on(t.availableAt)
      .where(sql`${t.status} in ('pending','sleeping')`),
    // The fair claim (docs/architecture.md, "The claim"): a tenant's claimable runs in the order it serves them, found
    // tenant by tenant (a loose index scan). Ungated runs and gated ones (a keyed concurrency or a rate limit) apart, so
    // that a tenant's runs set aside by their limits are never walked by the claim of the others.
    index('runs_fair_idx')
      .on(t.appHandle, sql`coalesce(${t.shop}, '')`, t.priority.desc(), t.availableAt)
      .where(sql`${t.status} in ('pending','sleeping') and ${t.concurrencyKey} is null and ${t.rateKey} is null`),
    index('runs_gated_idx')
      .on(t.appHandle, sql`coalesce(${t.shop}, '')`, t.priority.desc(), t.availableAt)
      .where(sql`${t.status} in ('pending','sleeping') and (${t.concurrencyKey} is not null or ${t.rateKey} is not null)`),
    // A concurrency key's runs: the slots in use (running) and the runs waiting for one (woken when a slot frees).
    index('runs_concurrency_key_idx')
      .on(t.concurrencyKey, t.status)
      .where(sql`${t.concurrencyKey} is not null and ${t.status} in ('pending','running','sleeping')`),
    // At most one waiting run per debounce key: a dispatch with the key joins it (insert … on conflict).
    uniqueIndex('runs_debounce_idx')
      .on(t.debounceKey)
      .where(sql`${t.debounceKey} is not null and ${t.status} = 'pending'`),
    index('runs_lease_idx')
      .on(t.leaseExpiresAt)
      .where(sql`${t.status} = 'running'`),
    // A tenant's active runs: per-flow concurrency limits, the tenants' watch marks, and the runs in flight of the lists
    // (status second, so that a shop's running runs are read without its backlog or other shops' runs).
    index('runs_active_flow_idx')
      .on(t.appHandle, t.shop, t.status, t.flowName)
      .where(sql`${t.status} in ('pending','running','sleeping')`),
    // Retention (docs/retention.md): finished runs, oldest first.
    index('runs_finished_idx')
      .on(t.finishedAt)
      .where(sql`${t.status} in ('completed','failed','canceled')`),
  ],
);

/** A checkpointed step of a run: matched exactly by (run_id, name). */
export const steps = pgTable(
  'steps',
  {
    runId: uuid('run_id')
      .notNull()
      .references(() => runs.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    appHandle: text('app_handle').notNull(),
    shop: text('shop'),
    status: text('status').notNull(),
    attempt: integer('attempt').notNull(),
    result: jsonb('result'),
    error: jsonb('error'),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.name] }),
    check('steps_status_check', sql`${t.status} in ('running','completed','failed','sleeping')`),
  ],
);

/** The starts of rate-limited runs (`rateLimit`), one row per start, kept for the longest period (a day at most). */
export const rateStarts = pgTable(
  'rate_starts',
  {
    /** `[app, flow, key]` as JSON (the run's `rate_key`). */
    key: text('key').notNull(),
    at: timestamp('at', { withTimezone: true }).notNull(),
  },
  (t) => [index('rate_starts_key_at_idx').on(t.key, t.at)],
);
