/**
 * The SQL of the secrets module: the plaintext (v0) values of a column that holds StoredSecret values, and their
 * replacement. The columns are declared by the capabilities that own them (SecretColumn); nothing here knows a table.
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../db/engine.ts';

/** A jsonb column holding StoredSecret values, as its owner declares it. */
export interface SecretColumn {
  table: string;
  column: string;
  /** The text columns that identify a row (its primary key). */
  key: readonly string[];
  /** The owner string (the associated data) of a row, from its key columns. */
  owner(key: Readonly<Record<string, string>>): string;
}

/** A row whose value is plaintext: its key and the value's JSON text as stored. */
export interface PlaintextRow {
  key: Record<string, string>;
  raw: string;
}

const RAW = '__stored';

/** Every row of the column whose value is a v0 (plaintext) StoredSecret. */
export async function plaintextRows(db: Pick<Database, 'query'>, column: SecretColumn): Promise<PlaintextRow[]> {
  const keys = sql.join(
    column.key.map((k) => sql`${sql.identifier(k)}::text as ${sql.identifier(k)}`),
    sql`, `,
  );
  const value = sql.identifier(column.column);
  const rows = await db.query<Record<string, string>>(
    sql`select ${keys}, ${value}::text as ${sql.identifier(RAW)} from ${sql.identifier(column.table)} where ${value} ->> 'v' = '0'`,
  );
  return rows.map((row) => {
    const key: Record<string, string> = {};
    for (const k of column.key) key[k] = row[k]!;
    return { key, raw: row[RAW]! };
  });
}

/**
 * Replaces a plaintext value with `next`, only if the row still holds the value read (a concurrent write wins).
 * Returns whether the row was updated.
 */
export async function replacePlaintext(
  db: Pick<Database, 'query'>,
  column: SecretColumn,
  row: PlaintextRow,
  next: unknown,
): Promise<boolean> {
  const value = sql.identifier(column.column);
  const match = sql.join(
    column.key.map((k) => sql`${sql.identifier(k)} = ${row.key[k]}`),
    sql` and `,
  );
  const updated = await db.query(
    sql`update ${sql.identifier(column.table)} set ${value} = ${JSON.stringify(next)}::jsonb where ${match} and ${value} = ${row.raw}::jsonb returning 1 as one`,
  );
  return updated.length > 0;
}
