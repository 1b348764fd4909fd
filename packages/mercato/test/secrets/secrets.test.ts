import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.ts';
import { PLAINTEXT_WARNING, createSecrets, keyId, reencrypt } from '../../src/secrets/index.ts';
import { SecretError, type Secrets, type StoredSecret } from '../../src/secrets/types.ts';
import { capturingLogger, thrown } from '../kit/index.ts';

const KEY = '1f'.repeat(32);
const OLD_KEY = 'c0ffee00'.repeat(8);
const OWNER = 'provider:main:shop-a.example:stripe';
const OTHER_OWNER = 'provider:main:shop-b.example:stripe';
const VALUE = { apiKey: 'sk_live_very_secret_value', nested: { count: 3, flags: [true, null] } };

function secretsWith(key: string | undefined, previousKeys: string[] = []) {
  return createSecrets({ key, previousKeys, production: false, logger: silentLogger() });
}

function v1(stored: StoredSecret) {
  if (stored.v !== 1) throw new Error('expected an encrypted value');
  return stored;
}

/** Flip one bit of a base64 field. */
function flip(base64: string, index = 0): string {
  const bytes = Buffer.from(base64, 'base64');
  bytes[index] ^= 0x01;
  return bytes.toString('base64');
}

describe('encryption with a key', () => {
  it('round-trips JSON values', () => {
    const secrets = secretsWith(KEY);
    expect(secrets.encrypting).toBe(true);
    for (const value of [VALUE, 'a string', 42, null, [1, 'two'], { unicode: 'Grüße ✓' }]) {
      expect(secrets.decrypt(secrets.encrypt(value, OWNER), OWNER)).toEqual(value);
    }
  });

  it('stores the v1 format: key id, 12-byte IV, 16-byte tag, base64 ciphertext', () => {
    const stored = v1(secretsWith(KEY).encrypt(VALUE, OWNER));
    expect(Object.keys(stored).sort()).toEqual(['ct', 'iv', 'kid', 'tag', 'v']);
    expect(stored.kid).toBe(keyId(KEY));
    expect(stored.kid).toMatch(/^[0-9a-f]{8}$/);
    expect(Buffer.from(stored.iv, 'base64')).toHaveLength(12);
    expect(Buffer.from(stored.tag, 'base64')).toHaveLength(16);
    // The value survives a JSON (jsonb) round trip.
    expect(secretsWith(KEY).decrypt(JSON.parse(JSON.stringify(stored)), OWNER)).toEqual(VALUE);
  });

  it('never contains the plaintext, and uses a fresh IV per value', () => {
    const secrets = secretsWith(KEY);
    const a = v1(secrets.encrypt(VALUE, OWNER));
    const b = v1(secrets.encrypt(VALUE, OWNER));
    const serialised = JSON.stringify(a);
    expect(serialised).not.toContain('sk_live_very_secret_value');
    expect(serialised).not.toContain(Buffer.from('sk_live_very_secret_value').toString('base64').slice(0, 12));
    expect(serialised).not.toContain(KEY);
    expect(a.iv).not.toBe(b.iv);
    expect(a.ct).not.toBe(b.ct);
  });

  it('refuses a value stored for another owner (copied to another tenant row)', () => {
    const secrets = secretsWith(KEY);
    const stored = secrets.encrypt(VALUE, OWNER);
    const error = thrown(() => secrets.decrypt(stored, OTHER_OWNER), SecretError);
    expect(error.message).toMatch(/the owner, key or ciphertext do not match/);
    expect(error.message).not.toContain('sk_live');
  });

  it.each(['ct', 'tag', 'iv'] as const)('refuses a tampered %s', (field) => {
    const secrets = secretsWith(KEY);
    const stored = v1(secrets.encrypt(VALUE, OWNER));
    const tampered = { ...stored, [field]: flip(stored[field]) };
    expect(thrown(() => secrets.decrypt(tampered, OWNER), SecretError).message).toMatch(/do not match/);
  });

  it('refuses a value encrypted with another key carrying the same key id', () => {
    const stored = v1(secretsWith(KEY).encrypt(VALUE, OWNER));
    const forged = { ...v1(secretsWith(OLD_KEY).encrypt(VALUE, OWNER)), kid: stored.kid };
    expect(thrown(() => secretsWith(KEY).decrypt(forged, OWNER), SecretError).message).toMatch(/do not match/);
  });

  it('refuses malformed stored values', () => {
    const secrets = secretsWith(KEY);
    const stored = v1(secrets.encrypt(VALUE, OWNER));
    expect(thrown(() => secrets.decrypt(null as never, OWNER), SecretError).message).toMatch(/malformed/);
    expect(thrown(() => secrets.decrypt({ v: 2 } as never, OWNER), SecretError).message).toMatch(/unknown format version 2/);
    expect(thrown(() => secrets.decrypt({ ...stored, iv: Buffer.alloc(8).toString('base64') }, OWNER), SecretError).message).toMatch(
      /"iv" must be 12 bytes/,
    );
    expect(thrown(() => secrets.decrypt({ ...stored, ct: '%%%' }, OWNER), SecretError).message).toMatch(/"ct" is not base64/);
    expect(thrown(() => secrets.decrypt({ v: 0 } as never, OWNER), SecretError).message).toMatch(/without "plain"/);
  });

  it('requires a non-empty owner and a JSON-serialisable value', () => {
    const secrets = secretsWith(KEY);
    expect(() => secrets.encrypt(VALUE, '')).toThrow(SecretError);
    expect(() => secrets.encrypt(undefined, OWNER)).toThrow(/JSON-serialisable/);
    expect(() => secrets.encrypt(10n, OWNER)).toThrow(/JSON-serialisable/);
  });

  it('rejects a malformed key without echoing it', () => {
    const bad = 'ab'.repeat(20);
    const error = thrown(() => secretsWith(bad), SecretError);
    expect(error.message).toBe('ENCRYPTION_KEY must be exactly 64 hex characters (32 bytes)');
    expect(() => secretsWith(KEY, ['xyz'])).toThrow('ENCRYPTION_KEY_PREVIOUS entry 1 must be exactly 64 hex characters (32 bytes)');
  });

  it('never logs with a key configured', () => {
    const { logger, raw } = capturingLogger('trace');
    const secrets = createSecrets({ key: KEY, production: true, logger });
    secrets.decrypt(secrets.encrypt(VALUE, OWNER), OWNER);
    expect(raw).toEqual([]);
  });
});

describe('key rotation', () => {
  it('decrypts values of a previous key and encrypts new values with the current one', () => {
    const old = secretsWith(OLD_KEY).encrypt(VALUE, OWNER);
    const rotated = secretsWith(KEY, [OLD_KEY]);
    expect(rotated.decrypt(old, OWNER)).toEqual(VALUE);
    expect(v1(rotated.encrypt(VALUE, OWNER)).kid).toBe(keyId(KEY));
    expect(rotated.currentKeyId).toBe(keyId(KEY));
  });

  it('names the missing key id when the key is unknown', () => {
    const old = v1(secretsWith(OLD_KEY).encrypt(VALUE, OWNER));
    const error = thrown(() => secretsWith(KEY).decrypt(old, OWNER), SecretError);
    expect(error.message).toContain(`key id ${old.kid}, which is missing`);
    expect(error.message).toContain('ENCRYPTION_KEY_PREVIOUS');
    expect(error.message).not.toContain(OLD_KEY);
    expect(thrown(() => secretsWith(undefined).decrypt(old, OWNER), SecretError).message).toContain('ENCRYPTION_KEY is not set');
  });

  it('re-encrypts a previous-key value under the current key, keeping the owner binding', () => {
    const old = secretsWith(OLD_KEY).encrypt(VALUE, OWNER);
    const rotated = secretsWith(KEY, [OLD_KEY]);
    expect(rotated.needsReencrypt(old)).toBe(true);
    const fresh = rotated.reencrypt(old, OWNER);
    expect(v1(fresh).kid).toBe(keyId(KEY));
    expect(rotated.needsReencrypt(fresh)).toBe(false);
    // After the rotation the old key can go.
    expect(secretsWith(KEY).decrypt(fresh, OWNER)).toEqual(VALUE);
    expect(() => secretsWith(KEY).decrypt(fresh, OTHER_OWNER)).toThrow(SecretError);
    // Re-encryption checks the owner too.
    expect(() => rotated.reencrypt(old, OTHER_OWNER)).toThrow(SecretError);
  });

  it('leaves a current value unchanged, and the standalone helper works on any Secrets', () => {
    const secrets = secretsWith(KEY, [OLD_KEY]);
    const current = secrets.encrypt(VALUE, OWNER);
    expect(secrets.reencrypt(current, OWNER)).toBe(current);
    const old = secretsWith(OLD_KEY).encrypt(VALUE, OWNER);
    expect(v1(reencrypt(secrets, old, OWNER)).kid).toBe(keyId(KEY));
    const plain: Secrets = { encrypting: true, encrypt: secrets.encrypt, decrypt: secrets.decrypt };
    expect(v1(reencrypt(plain, old, OWNER)).kid).toBe(keyId(KEY));
  });
});

describe('without a key', () => {
  it('development stores plaintext and logs exactly one warning', () => {
    const { logger, lines, raw } = capturingLogger('trace');
    const secrets = createSecrets({ production: false, logger });
    expect(secrets.encrypting).toBe(false);
    const a = secrets.encrypt(VALUE, OWNER);
    secrets.encrypt({ other: 1 }, OTHER_OWNER);
    expect(a).toEqual({ v: 0, plain: VALUE });
    expect(secrets.decrypt(a, OWNER)).toEqual(VALUE);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, msg: PLAINTEXT_WARNING });
    expect(raw.join('')).not.toContain('sk_live');
  });

  it('stores a JSON copy, not the live object', () => {
    const secrets = secretsWith(undefined);
    const value = { when: new Date(0), list: [1] };
    const stored = secrets.encrypt(value, OWNER);
    value.list.push(2);
    expect(stored).toEqual({ v: 0, plain: { when: '1970-01-01T00:00:00.000Z', list: [1] } });
  });

  it('production refuses to start', () => {
    const { logger } = capturingLogger('trace');
    expect(() => createSecrets({ production: true, logger })).toThrow(/ENCRYPTION_KEY is required in production/);
    expect(() => createSecrets({ key: '', production: true, logger })).toThrow(SecretError);
  });

  it('a plaintext value stays readable once a key is configured, and is encrypted on the next write', () => {
    const plain = secretsWith(undefined).encrypt(VALUE, OWNER);
    const secrets = secretsWith(KEY);
    expect(secrets.decrypt(plain, OWNER)).toEqual(VALUE);
    expect(secrets.needsReencrypt(plain)).toBe(true);
    const migrated = secrets.reencrypt(plain, OWNER);
    expect(v1(migrated).kid).toBe(keyId(KEY));
    expect(JSON.stringify(migrated)).not.toContain('sk_live');
  });
});
