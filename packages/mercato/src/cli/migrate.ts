import { resolve } from 'node:path';
import { readDatabaseEnv } from '../app/env.ts';
import { ConfigError } from '../app/validate.ts';
import { openDatabase } from '../db/engine.ts';
import { migrate } from '../db/migrate.ts';
import type { CliIo, CliValues } from './io.ts';

export async function runMigrate(values: CliValues, io: CliIo): Promise<number> {
  const projectDir = values.config ? resolve(io.cwd, values.config, '..') : io.cwd;
  // the same reading and validation as every other command (trimmed; postgres:// or postgresql://, else an error)
  const problems: string[] = [];
  const { databaseUrl: url, dataDir } = readDatabaseEnv(io.env, projectDir, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  io.out(url ? `Migrating PostgreSQL (${redactUrl(url)})…` : `Migrating embedded database at ${dataDir}…`);
  const db = await openDatabase(url ? { url, applicationName: 'mercato-migrate' } : { dataDir });
  try {
    if (db.fromTemplate) io.out(`  created it from the package's template, every migration of this version applied already`);
    const result = await migrate(db, {
      onProgress: (tag, index, total) => io.out(`  [${index + 1}/${total}] applying ${tag}`),
    });
    io.out(
      result.applied.length === 0
        ? `Up to date (${result.alreadyApplied} migration${result.alreadyApplied === 1 ? '' : 's'} already applied).`
        : `Applied ${result.applied.length} migration(s); ${result.alreadyApplied} were already applied.`,
    );
    return 0;
  } finally {
    await db.close();
  }
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparsable DATABASE_URL>';
  }
}
