/**
 * Plaintext written without a key (v0, by a `mercato dev` of an older version or a `start` outside production) is
 * encrypted at the next start-up that has a key: each value is read, encrypted for its row and written back only if
 * the row did not change meanwhile, so nothing is lost and processes starting together do not conflict.
 */
import type { Database } from '../db/engine.ts';
import { type PlaintextRow, type SecretColumn, plaintextRows, replacePlaintext } from './store.ts';
import type { Secrets, StoredSecret } from './types.ts';

export type { SecretColumn } from './store.ts';

export interface PlaintextOutcome {
  /** Values now encrypted. */
  encrypted: number;
  /** Values left as they are: malformed, or changed by another process meanwhile. */
  skipped: number;
}

/** Encrypts every plaintext value of `columns` with the current key; does nothing without one. */
export async function encryptPlaintext(
  db: Pick<Database, 'query'>,
  secrets: Secrets,
  columns: readonly SecretColumn[],
): Promise<PlaintextOutcome> {
  const outcome: PlaintextOutcome = { encrypted: 0, skipped: 0 };
  if (!secrets.encrypting) return outcome;
  for (const column of columns) {
    for (const row of await plaintextRows(db, column)) {
      const next = encryptRow(secrets, column, row);
      if (next && (await replacePlaintext(db, column, row, next))) outcome.encrypted++;
      else outcome.skipped++;
    }
  }
  return outcome;
}

function encryptRow(secrets: Secrets, column: SecretColumn, row: PlaintextRow): StoredSecret | undefined {
  try {
    const owner = column.owner(row.key);
    return secrets.encrypt(secrets.decrypt(JSON.parse(row.raw) as StoredSecret, owner), owner);
  } catch {
    return undefined; // malformed: left for the reader, which reports it (its value is never logged)
  }
}
