/** What every bench shares: the checkout's paths, numeric environment overrides, the durable cluster's settings. */
import { copyFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
/** The checkout's CLI (its dist/ is built by the bench when older than the sources). */
export const BIN = join(ROOT, 'packages/mercato/bin/mercato.js');

/** A positive number from the environment variable `name`, else `fallback`. */
export const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);

/** A private cluster as durable as production (fsync, synchronous commits, full pages), with pg_stat_statements. */
export const DURABLE_SETTINGS = {
  fsync: 'on',
  synchronous_commit: 'on',
  full_page_writes: 'on',
  shared_preload_libraries: "'pg_stat_statements'",
  'pg_stat_statements.track': "'top'",
} as const;

/**
 * BENCH_AUTO_EXPLAIN=<ms>: the private cluster logs the plan (EXPLAIN ANALYZE, nested statements) of every statement
 * slower than that, and the bench copies the cluster's log to BENCH_SERVER_LOG (default bench/results/server.log)
 * before it removes the cluster. For finding out why a statement is slow; the timings it adds make the figures of that
 * run unfit to publish.
 */
export function autoExplainSettings(): Record<string, string> {
  const ms = Number(process.env.BENCH_AUTO_EXPLAIN);
  if (!(ms > 0)) return {};
  return {
    shared_preload_libraries: "'pg_stat_statements,auto_explain'",
    'auto_explain.log_min_duration': `'${ms}ms'`,
    'auto_explain.log_analyze': 'on',
    'auto_explain.log_buffers': 'on',
    'auto_explain.log_nested_statements': 'on',
    logging_collector: 'off',
    log_min_messages: 'log',
  };
}

/** Copies the cluster's server log out (see autoExplainSettings) before the cluster is removed. */
export function keepServerLog(clusterDir: string): void {
  if (!(Number(process.env.BENCH_AUTO_EXPLAIN) > 0)) return;
  const to = resolve(ROOT, process.env.BENCH_SERVER_LOG || 'bench/results/server.log');
  try {
    copyFileSync(join(clusterDir, 'server.log'), to);
    console.log(`  … the cluster's log (auto_explain) is in ${to}`);
  } catch (error) {
    console.log(`  … the cluster's log could not be copied: ${(error as Error).message}`);
  }
}
