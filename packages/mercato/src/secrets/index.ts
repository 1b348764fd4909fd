/**
 * The secrets module: AES-256-GCM encryption of JSON values bound to their owner row. Format, associated data and key
 * rotation are described in docs/secrets.md. Values and keys never reach a log line or an error message.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Logger } from '../logger.ts';
import { SecretError, type Secrets, type StoredSecret } from './types.ts';

export { SecretError, type Secrets, type StoredSecret } from './types.ts';

export interface CreateSecretsOptions {
  /** ENCRYPTION_KEY: 64 hex characters (32 bytes). */
  key?: string;
  /** ENCRYPTION_KEY_PREVIOUS: older keys still accepted for decryption during a rotation. */
  previousKeys?: string[];
  /** NODE_ENV=production: a key is then required. */
  production: boolean;
  logger: Logger;
  /** Log PLAINTEXT_WARNING when there is no key (default true). */
  warnPlaintext?: boolean;
}

/** What createSecrets returns: Secrets plus the rotation helpers. */
export interface RotatingSecrets extends Secrets {
  /** Key id (`kid`) of the current key; null without a key. */
  readonly currentKeyId: string | null;
  /** True when `stored` is not under the current key (plaintext while a key is configured, or an older key id). */
  needsReencrypt(stored: StoredSecret): boolean;
  /** The same value under the current key (decrypts first, so a value of another owner throws). Current values come back unchanged. */
  reencrypt(stored: StoredSecret, owner: string): StoredSecret;
}

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_PATTERN = /^[0-9a-fA-F]{64}$/;
const BASE64_PATTERN = /^[A-Za-z0-9+/]*={0,2}$/;

export const PLAINTEXT_WARNING =
  'ENCRYPTION_KEY is not set: secrets are stored as plaintext. This is allowed in development only; set ENCRYPTION_KEY (64 hex characters) to encrypt them.';

interface Key {
  kid: string;
  bytes: Buffer;
}

/** The key id stored with every value: the first 8 hex characters of sha256 over the 32 key bytes. */
export function keyId(key: string): string {
  return createHash('sha256').update(Buffer.from(key, 'hex')).digest('hex').slice(0, 8);
}

function toKey(hex: string, name: string): Key {
  // Never include the value: only say what is wrong with it.
  if (typeof hex !== 'string' || !KEY_PATTERN.test(hex)) throw new SecretError(`${name} must be exactly 64 hex characters (32 bytes)`);
  return { kid: keyId(hex), bytes: Buffer.from(hex, 'hex') };
}

function checkOwner(owner: unknown): asserts owner is string {
  if (typeof owner !== 'string' || owner === '') throw new SecretError('a secret needs a non-empty owner string');
}

function serialise(value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    json = undefined;
  }
  if (json === undefined) throw new SecretError('a secret value must be JSON-serialisable');
  return json;
}

function decodeField(stored: Record<string, unknown>, field: string, length?: number): Buffer {
  const value = stored[field];
  if (typeof value !== 'string' || !BASE64_PATTERN.test(value))
    throw new SecretError(`stored secret is malformed: "${field}" is not base64`);
  const bytes = Buffer.from(value, 'base64');
  if (length !== undefined && bytes.length !== length)
    throw new SecretError(`stored secret is malformed: "${field}" must be ${length} bytes`);
  return bytes;
}

function checkStored(stored: unknown): asserts stored is StoredSecret {
  if (typeof stored !== 'object' || stored === null) throw new SecretError('stored secret is malformed: not an object');
  const v = (stored as { v?: unknown }).v;
  if (v === 0) {
    if (!('plain' in stored)) throw new SecretError('stored secret is malformed: version 0 without "plain"');
    return;
  }
  if (v !== 1) throw new SecretError(`stored secret has an unknown format version ${JSON.stringify(v)}`);
  if (typeof (stored as { kid?: unknown }).kid !== 'string') throw new SecretError('stored secret is malformed: "kid" is missing');
}

/**
 * Build the secrets service. Without a key: production throws, development logs one warning and stores
 * `{ v: 0, plain }`. Keys are validated here as well as in loadRuntimeEnv.
 */
export function createSecrets(options: CreateSecretsOptions): RotatingSecrets {
  const current = options.key === undefined || options.key === '' ? null : toKey(options.key, 'ENCRYPTION_KEY');
  const previous = (options.previousKeys ?? []).map((hex, index) => toKey(hex, `ENCRYPTION_KEY_PREVIOUS entry ${index + 1}`));
  if (!current) {
    if (options.production) {
      throw new SecretError(
        'ENCRYPTION_KEY is required in production (NODE_ENV=production): set it to 64 hex characters (32 bytes), for example the output of `openssl rand -hex 32`, and keep it across deployments',
      );
    }
    if (options.warnPlaintext !== false) options.logger.warn(PLAINTEXT_WARNING);
  }
  const keys = current ? [current, ...previous] : previous;

  function encrypt(value: unknown, owner: string): StoredSecret {
    checkOwner(owner);
    const json = serialise(value);
    if (!current) return { v: 0, plain: JSON.parse(json) };
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, current.bytes, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(owner, 'utf8'));
    const ct = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()]);
    return { v: 1, kid: current.kid, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), ct: ct.toString('base64') };
  }

  function decrypt<T = unknown>(stored: StoredSecret, owner: string): T {
    checkOwner(owner);
    checkStored(stored);
    // Plaintext (development, or written before a key was configured): readable, and re-encrypted on the next write.
    if (stored.v === 0) return stored.plain as T;
    const record = stored as unknown as Record<string, unknown>;
    const iv = decodeField(record, 'iv', IV_BYTES);
    const tag = decodeField(record, 'tag', TAG_BYTES);
    const ct = decodeField(record, 'ct');
    const candidates = keys.filter((key) => key.kid === stored.kid);
    if (candidates.length === 0) {
      throw new SecretError(
        current
          ? `secret was encrypted with key id ${stored.kid}, which is missing: it is neither ENCRYPTION_KEY (${current.kid}) nor listed in ENCRYPTION_KEY_PREVIOUS`
          : `secret was encrypted with key id ${stored.kid}, but ENCRYPTION_KEY is not set`,
      );
    }
    for (const key of candidates) {
      try {
        const decipher = createDecipheriv(ALGORITHM, key.bytes, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(owner, 'utf8'));
        decipher.setAuthTag(tag);
        const json = Buffer.concat([decipher.update(ct), decipher.final()]).toString('utf8');
        return JSON.parse(json) as T;
      } catch {
        // Wrong owner, tampered value, or (improbably) another key with the same id: try the next candidate.
      }
    }
    throw new SecretError(`secret could not be decrypted with key id ${stored.kid}: the owner, key or ciphertext do not match`);
  }

  function needsReencrypt(stored: StoredSecret): boolean {
    checkStored(stored);
    if (!current) return false;
    return stored.v === 0 || stored.kid !== current.kid;
  }

  return Object.freeze({
    encrypting: current !== null,
    currentKeyId: current?.kid ?? null,
    encrypt,
    decrypt,
    needsReencrypt,
    reencrypt(stored: StoredSecret, owner: string): StoredSecret {
      const value = decrypt(stored, owner);
      return needsReencrypt(stored) ? encrypt(value, owner) : stored;
    },
  });
}

/**
 * `stored` under the current key of `secrets` (rotation, or migrating a development plaintext value). Works with any
 * Secrets; with one from createSecrets, values already under the current key are returned unchanged.
 */
export function reencrypt(secrets: Secrets, stored: StoredSecret, owner: string): StoredSecret {
  const rotating = secrets as Partial<RotatingSecrets>;
  if (typeof rotating.reencrypt === 'function') return rotating.reencrypt(stored, owner);
  return secrets.encrypt(secrets.decrypt(stored, owner), owner);
}
