/**
 * `mercato prune`: one retention pass now (docs/retention.md) with the config's periods, or `--older-than` for the
 * tables of the pass; `--dry-run` counts instead of deleting. Progress goes to stderr (at most a line every 2 s), the
 * report to stdout. Exit 0 when done, 3 when another process holds the pruner's lock.
 */
import { readDatabaseEnv } from '../app/env.ts';
import { ConfigError } from '../app/validate.ts';
import { RETENTION_MINIMUM_MS } from '../app/validate/retention.ts';
import { openDatabase } from '../db/engine.ts';
import { migrate } from '../db/migrate.ts';
import { PERIOD_KEYS, PRUNE_TABLES, type PruneReport, type PruneTable, prunePass } from '../retention/index.ts';
import { CliError, loadConfig } from './load-config.ts';
import type { CliIo, CliValues } from './io.ts';
import { redactUrl } from './migrate.ts';
import { formatDuration } from './terminal.ts';

const PROGRESS_EVERY_MS = 2000;

/** A period in its largest whole unit: `30d`, `12h`, `90m`, `45s`, `1500ms`. */
export function formatPeriod(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

export async function runPrune(values: CliValues, io: CliIo): Promise<number> {
  const kinds = values.only;
  const tables: PruneTable[] = kinds ? PRUNE_TABLES.filter((t) => kinds.includes(PERIOD_KEYS[t])) : [...PRUNE_TABLES];
  if (values.olderThan !== undefined) {
    const below = tables.filter((t) => values.olderThan! < RETENTION_MINIMUM_MS[PERIOD_KEYS[t]]);
    if (below.length > 0) {
      const what = below.map((t) => `${PERIOD_KEYS[t]} (at least ${formatPeriod(RETENTION_MINIMUM_MS[PERIOD_KEYS[t]])})`).join(', ');
      throw new CliError(`--older-than is shorter than the minimum of ${what}; choose the others with --only (see docs/retention.md)`, 2);
    }
  }
  const loaded = await loadConfig(io.cwd, values.config);
  try {
    const problems: string[] = [];
    const { databaseUrl: url, dataDir } = readDatabaseEnv(io.env, loaded.projectDir, problems);
    if (problems.length > 0) throw new ConfigError(problems);
    const retention = loaded.instance.config.retention;
    const where = url ? `PostgreSQL (${redactUrl(url)})` : `embedded database at ${dataDir}`;
    const db = await openDatabase(url ? { url, applicationName: 'mercato-prune', poolSize: 2 } : { dataDir });
    try {
      await migrate(db);
      if (!values.json) io.out(`${values.dryRun ? 'Retention dry run (nothing is deleted)' : 'Retention pass'} on ${where}…`);
      let lastProgress = Date.now();
      const report = await prunePass(
        { db, retention },
        {
          dryRun: values.dryRun,
          tables,
          olderThanMs: values.olderThan,
          onBatch: (table, rows) => {
            if (Date.now() - lastProgress < PROGRESS_EVERY_MS) return;
            lastProgress = Date.now();
            io.err(`  … ${table}: ${rows.toLocaleString('en-US')} deleted so far`);
          },
        },
      );
      if (values.json) io.out(JSON.stringify(report));
      else printReport(report, io);
      if (report.status === 'busy') {
        if (!values.json) io.err('mercato prune: another process is pruning this database now (its lock is held); nothing was done');
        return 3;
      }
      return 0;
    } finally {
      await db.close();
    }
  } finally {
    loaded.dispose();
  }
}

function printReport(report: PruneReport, io: CliIo): void {
  if (report.status === 'busy') return;
  const n = (x: number) => x.toLocaleString('en-US');
  const dry = report.status === 'dry-run';
  for (const t of report.tables) {
    const name = t.table.padEnd(19);
    if (t.periodMs === null) {
      io.out(`  ${name} kept forever`);
      continue;
    }
    const older = `older than ${formatPeriod(t.periodMs)} (before ${t.cutoff})`;
    const extra = t.steps !== undefined ? ` (with ${n(t.steps)} steps, ${n(t.logs ?? 0)} log lines)` : '';
    const done = dry
      ? `${n(t.rows)} would go${extra}`
      : `${n(t.rows)} deleted in ${t.batches} batch${t.batches === 1 ? '' : 'es'}, ${formatDuration(t.durationMs)}`;
    io.out(`  ${name} ${older}: ${done}`);
  }
  const total = report.tables.reduce((sum, t) => sum + t.rows, 0);
  if (report.status === 'aborted') io.out(`Stopped before the end: ${n(total)} record(s) deleted.`);
  else io.out(dry ? `${n(total)} record(s) would go.` : `Done: ${n(total)} record(s) deleted in ${formatDuration(report.durationMs)}.`);
}
