/**
 * The retention pruner (docs/retention.md): one pass deletes, table by table, the records older than their period in
 * bounded batches (each batch its own short transaction, the event loop yielded between two). One pass at a time on a
 * database: on PostgreSQL a session-level advisory lock on a dedicated connection (a second process finds it taken and
 * skips its pass); on PGlite one process owns the database, so a lock per Database object in memory.
 */
import type { ResolvedRetention } from '../app/types.ts';
import type { Database, DedicatedSession } from '../db/engine.ts';
import type { RuntimeEvents } from '../events.ts';
import type { Logger } from '../logger.ts';
import { databaseNow } from '../db/sql.ts';
import { type PruneTable, PRUNE_TABLES, countOlder, deleteBatch, releasePruneLock, tryPruneLock } from './store.ts';

/** The config key of each table's period. */
export const PERIOD_KEYS: Record<PruneTable, 'runs' | 'mcpAudit' | 'webhookDeliveries' | 'cronTicks'> = {
  runs: 'runs',
  mcp_audits: 'mcpAudit',
  webhook_deliveries: 'webhookDeliveries',
  cron_ticks: 'cronTicks',
};

export interface PruneOptions {
  /** Count what would go, delete nothing. */
  dryRun?: boolean;
  /** The tables of this pass. Default: all four. */
  tables?: readonly PruneTable[];
  /** One period (ms) for every table of the pass instead of the configured ones. */
  olderThanMs?: number;
  /** Called after each batch with the rows deleted from the table so far in this pass. */
  onBatch?: (table: PruneTable, rowsSoFar: number, batchMs: number) => void;
  /** Stops between two batches. */
  signal?: AbortSignal;
}

export interface TableReport {
  table: PruneTable;
  /** The period in ms; null when the table is kept forever (skipped). */
  periodMs: number | null;
  /** Records older than this go (ISO 8601); null when skipped. */
  cutoff: string | null;
  /** Deleted (or, in a dry run, that would be deleted). */
  rows: number;
  /** Runs only: the steps and log lines with them (counted in a dry run; a real pass deletes them without counting). */
  steps?: number;
  logs?: number;
  batches: number;
  /** The longest single batch statement (its locks were held that long). */
  longestBatchMs: number;
  durationMs: number;
}

export interface PruneReport {
  /** `busy`: another process holds the lock, nothing was done. `aborted`: stopped between two batches. */
  status: 'done' | 'dry-run' | 'busy' | 'aborted';
  /** The database clock at the start of the pass. */
  now: string;
  tables: TableReport[];
  durationMs: number;
}

export interface PrunerDeps {
  db: Database;
  retention: ResolvedRetention;
  events?: RuntimeEvents;
  logger?: Logger;
}

const localLocks = new WeakSet<Database>();

/** One pass now. Never touches queued, running or sleeping runs. */
export async function prunePass(deps: PrunerDeps, options: PruneOptions = {}): Promise<PruneReport> {
  const started = Date.now();
  const lock = await acquire(deps.db);
  if (!lock) return { status: 'busy', now: new Date().toISOString(), tables: [], durationMs: Date.now() - started };
  try {
    const now = await databaseNow(deps.db.query);
    const tables: TableReport[] = [];
    let aborted = false;
    for (const table of options.tables ?? PRUNE_TABLES) {
      const periodMs = options.olderThanMs ?? deps.retention[PERIOD_KEYS[table]];
      const report: TableReport = { table, periodMs, cutoff: null, rows: 0, batches: 0, longestBatchMs: 0, durationMs: 0 };
      tables.push(report);
      if (periodMs === null || aborted) continue;
      const cutoff = new Date(now.getTime() - periodMs);
      report.cutoff = cutoff.toISOString();
      const t0 = Date.now();
      if (options.dryRun) {
        Object.assign(report, await countOlder(deps.db.query, table, cutoff));
      } else {
        for (;;) {
          if (options.signal?.aborted) {
            aborted = true;
            break;
          }
          const b0 = Date.now();
          const rows = await deleteBatch(deps.db.query, table, cutoff, deps.retention.batchSize);
          const batchMs = Date.now() - b0;
          if (rows === 0) break;
          report.rows += rows;
          report.batches++;
          report.longestBatchMs = Math.max(report.longestBatchMs, batchMs);
          options.onBatch?.(table, report.rows, batchMs);
          if (rows < deps.retention.batchSize) break;
          await new Promise((resolve) => setImmediate(resolve));
        }
        if (report.rows > 0) deps.events?.emit('retention.pruned', { table, rows: report.rows });
      }
      report.durationMs = Date.now() - t0;
    }
    const status = options.dryRun ? 'dry-run' : aborted ? 'aborted' : 'done';
    const result: PruneReport = { status, now: now.toISOString(), tables, durationMs: Date.now() - started };
    deps.logger?.info(
      {
        retention: status,
        durationMs: result.durationMs,
        ...Object.fromEntries(tables.map((t) => [t.table, t.periodMs === null ? 'kept' : t.rows])),
      },
      options.dryRun ? 'retention dry run' : 'retention pass',
    );
    return result;
  } finally {
    await lock.release();
  }
}

async function acquire(db: Database): Promise<{ release(): Promise<void> } | undefined> {
  if (!db.openSession) {
    if (localLocks.has(db)) return undefined;
    localLocks.add(db);
    return { release: async () => void localLocks.delete(db) };
  }
  const session: DedicatedSession = await db.openSession('retention');
  try {
    if (!(await tryPruneLock(session))) {
      await session.close();
      return undefined;
    }
  } catch (error) {
    await session.close().catch(() => {});
    throw error;
  }
  return {
    async release() {
      await releasePruneLock(session).catch(() => {});
      await session.close().catch(() => {});
    },
  };
}

export interface Pruner {
  /** One pass now (waits for a pass in progress in this process first). */
  runOnce(options?: PruneOptions): Promise<PruneReport>;
  /** Passes every `retention.intervalMs`, the first after `firstDelayMs`. */
  start(firstDelayMs?: number): void;
  /** Stops between two batches and waits for the pass in progress. */
  stop(): Promise<void>;
}

/** The periodic pruner of a serving process; its failures are logged, the next pass tries again. */
export function createPruner(deps: PrunerDeps): Pruner {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  const runOnce = (options: PruneOptions = {}) => {
    const run = chain.then(() => prunePass(deps, { signal: controller.signal, ...options }));
    chain = run.catch(() => undefined);
    return run;
  };
  const schedule = (delay: number) => {
    if (controller.signal.aborted) return;
    timer = setTimeout(() => {
      runOnce()
        .catch((error: unknown) => deps.logger?.warn({ err: error }, 'retention pass failed; the next pass tries again'))
        .finally(() => schedule(deps.retention.intervalMs));
    }, delay);
    timer.unref();
  };
  return {
    runOnce,
    start(firstDelayMs = 60_000) {
      const all = [deps.retention.runs, deps.retention.mcpAudit, deps.retention.webhookDeliveries, deps.retention.cronTicks];
      if (all.every((p) => p === null)) return;
      schedule(firstDelayMs);
    },
    async stop() {
      controller.abort();
      clearTimeout(timer);
      await chain;
    },
  };
}
