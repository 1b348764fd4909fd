/**
 * Token secrets: `mcp_<token id, 32 hex>_<43 base62 characters = 256 random bits>`. Only HMAC-SHA256(key, secret) is
 * stored; verification is one HMAC plus a constant-time comparison (microseconds, no password-hash cost).
 *
 * The key: derived with HKDF-SHA256 from ENCRYPTION_KEY when it is set (key id `env:<kid>`; the previous keys of a rotation
 * still verify), otherwise a random per-installation key kept in the `mcp_hash_keys` table (key id `installation`).
 * A token hashed under an older key is re-hashed under the current key on its next successful use.
 */
import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { constantTimeEqual } from '../http/auth.ts';
import { keyId } from '../secrets/index.ts';

export const SECRET_PREFIX = 'mcp_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_CHARS = 43;
const SECRET_RE = /^mcp_([0-9a-f]{32})_([0-9A-Za-z]{43})$/;
const HKDF_INFO = 'mercato/mcp-token-hash/v1';
export const INSTALLATION_KEY_ID = 'installation';

/** 43 base62 characters from unbiased random bytes (rejection sampling: bytes ≥ 248 are skipped). */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(64)) {
      if (byte >= 248) continue;
      out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function newSecret(tokenId: string): string {
  return `${SECRET_PREFIX}${tokenId.replaceAll('-', '').toLowerCase()}_${randomBase62(RANDOM_CHARS)}`;
}

/** The token id inside a well-formed secret, or null. */
export function tokenIdOf(secret: string): string | null {
  const match = SECRET_RE.exec(secret);
  if (!match) return null;
  const hex = match[1]!;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** What the admin shows to tell secrets apart: the prefix, the start of the id and the last 6 characters of the secret. */
export function fingerprintOf(secret: string): string {
  const match = SECRET_RE.exec(secret);
  if (!match) throw new Error('not an MCP token secret');
  return `${SECRET_PREFIX}${match[1]!.slice(0, 8)}…${match[2]!.slice(-6)}`;
}

export interface SecretHasher {
  /** Hash under the current key. */
  hash(secret: string): Promise<{ hash: string; keyId: string }>;
  /** Constant-time check against a stored hash; false when the key id is unknown. */
  verify(secret: string, stored: { hash: string; keyId: string }): Promise<boolean>;
  /** The key id new hashes are made with. */
  currentKeyId(): Promise<string>;
}

export interface HasherOptions {
  /** ENCRYPTION_KEY (64 hex). */
  encryptionKey?: string;
  /** ENCRYPTION_KEY_PREVIOUS entries. */
  previousKeys?: readonly string[];
  /** Loads (creating it once) the per-installation key, 64 hex; used when no encryption key is set and for tokens made before one was. */
  installationKey: () => Promise<string>;
}

function derive(hexKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(hexKey, 'hex'), Buffer.alloc(0), HKDF_INFO, 32));
}

function hmacHex(key: Buffer, secret: string): string {
  return createHmac('sha256', key).update(secret).digest('hex');
}

export function createSecretHasher(options: HasherOptions): SecretHasher {
  const envKeys = new Map<string, Buffer>();
  let current: string | null = null;
  for (const hex of [options.encryptionKey, ...(options.previousKeys ?? [])]) {
    if (!hex) continue;
    const id = `env:${keyId(hex)}`;
    if (!envKeys.has(id)) envKeys.set(id, derive(hex));
    current ??= id;
  }
  let installation: Promise<Buffer> | undefined;
  const installationKey = () => {
    installation ??= options.installationKey().then((hex) => Buffer.from(hex, 'hex'));
    // A failed load (database down) is retried on the next call.
    installation.catch(() => (installation = undefined));
    return installation;
  };
  const keyFor = async (id: string): Promise<Buffer | undefined> => (id === INSTALLATION_KEY_ID ? installationKey() : envKeys.get(id));
  return {
    async hash(secret) {
      const id = current ?? INSTALLATION_KEY_ID;
      return { hash: hmacHex((await keyFor(id))!, secret), keyId: id };
    },
    async verify(secret, stored) {
      const key = await keyFor(stored.keyId);
      if (!key) return false;
      // Bytes, not hex text: the stored hash compares the same whatever the case of its hex digits.
      return constantTimeEqual(Buffer.from(hmacHex(key, secret), 'hex'), Buffer.from(stored.hash, 'hex'));
    },
    async currentKeyId() {
      return current ?? INSTALLATION_KEY_ID;
    },
  };
}

export function newInstallationKey(): string {
  return randomBytes(32).toString('hex');
}
