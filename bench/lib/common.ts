/** What every bench shares: the checkout's paths, numeric environment overrides, the durable cluster's settings. */
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
