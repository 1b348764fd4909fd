/**
 * Secrets at rest for the commands that serve (docs/secrets.md):
 * - `mercato dev` without ENCRYPTION_KEY uses a key of its own, generated once into its data folder (file mode 0600)
 *   and read again at every start; the key is never printed;
 * - at every start with a key, values stored as plaintext by an earlier version are encrypted (secrets/plaintext.ts).
 */
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { isEncryptionKey } from '../app/env.ts';
import { installationOwner } from '../platform/index.ts';
import { PROVIDER_CONFIG_SECRETS } from '../providers/service.ts';
import { type PlaintextOutcome, type SecretColumn, encryptPlaintext } from '../secrets/plaintext.ts';
import type { Database } from '../db/engine.ts';
import type { Secrets } from '../secrets/types.ts';
import { CliError } from './load-config.ts';

/** The key file of `mercato dev`, inside its data folder. */
export const DEV_KEY_FILE = 'encryption-key';

export interface DevKey {
  key: string;
  file: string;
  /** True when this start generated it. */
  created: boolean;
}

/**
 * The key of `mercato dev` when ENCRYPTION_KEY is unset: read from `<dataDir>/encryption-key`, or generated there
 * (32 random bytes as 64 hex characters, file mode 0600, never overwritten).
 */
export function devEncryptionKey(dataDir: string): DevKey {
  const file = join(dataDir, DEV_KEY_FILE);
  const existing = readKeyFile(file);
  if (existing !== undefined) return { key: existing, file, created: false };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32).toString('hex');
  try {
    // `wx`: never replace a key another process wrote meanwhile
    writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { key: readKeyFile(file)!, file, created: false };
  }
  return { key, file, created: true };
}

function readKeyFile(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const key = text.trim();
  if (!isEncryptionKey(key)) {
    // the content is never echoed: it may be a key with a typo
    throw new CliError(
      `${file} does not hold an encryption key (64 hex characters). It is the key \`mercato dev\` made for the secrets stored in its database: restore it from a backup, or set ENCRYPTION_KEY to the key it held. Deleting it makes the stored provider passwords unreadable (they must then be saved again).`,
    );
  }
  // only its owner may read it
  if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return key.toLowerCase();
}

/** Every column that holds StoredSecret values. A capability that stores a new one adds it here. */
export const SECRET_COLUMNS: readonly SecretColumn[] = [
  PROVIDER_CONFIG_SECRETS,
  {
    table: 'installations',
    column: 'access_token',
    key: ['app_handle', 'shop'],
    owner: (key) => installationOwner(key.app_handle!, key.shop!),
  },
];

/** Encrypts the plaintext values stored without a key (nothing without a key). */
export function encryptStoredPlaintext(db: Pick<Database, 'query'>, secrets: Secrets): Promise<PlaintextOutcome> {
  return encryptPlaintext(db, secrets, SECRET_COLUMNS);
}
