/** Token secrets and hashing keys: format, constant-time keyed hash, and the move between keys without locking tokens out. */
import { sql } from 'drizzle-orm';
import { expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { createSecretHasher, fingerprintOf, newSecret, tokenIdOf } from '../../src/mcp/secret.ts';
import { loadInstallationKey } from '../../src/mcp/store.ts';
import { createTokenService } from '../../src/mcp/tokens.ts';

const KEY_A = 'a1'.repeat(32);
const KEY_B = 'b2'.repeat(32);
const TENANT = { appHandle: 'default', shop: 'shop-one.myshopify.com' };

it('secrets carry the token id, 256 random bits in base62, and a fingerprint that changes with the secret', () => {
  const id = '0b8e5c2e-3c1d-4a5e-9f7a-1b2c3d4e5f60';
  const a = newSecret(id);
  const b = newSecret(id);
  expect(a).toMatch(/^mcp_0b8e5c2e3c1d4a5e9f7a1b2c3d4e5f60_[0-9A-Za-z]{43}$/);
  expect(a).not.toBe(b);
  expect(tokenIdOf(a)).toBe(id);
  expect(tokenIdOf(`${a}x`)).toBeNull();
  expect(tokenIdOf(a.toUpperCase())).toBeNull();
  expect(fingerprintOf(a)).toBe(`mcp_0b8e5c2e…${a.slice(-6)}`);
  expect(fingerprintOf(a)).not.toBe(fingerprintOf(b));
  // Every base62 character appears over many secrets (no biased alphabet).
  const chars = new Set([...Array.from({ length: 200 }, () => newSecret(id).slice(37)).join('')]);
  expect(chars.size).toBe(62);
});

describeEngines('MCP token hashing keys', (get) => {
  const service = (keys: { encryptionKey?: string; previousKeys?: string[] }) => {
    const db = get().db;
    return createTokenService({
      db,
      hasher: createSecretHasher({ ...keys, installationKey: () => loadInstallationKey(db) }),
      knownPermissions: () => new Set(['read_logs']),
      hasApp: () => true,
    });
  };
  const keyIdOf = async (id: string) =>
    (await get().db.query<{ hash_key_id: string }>(sql`select hash_key_id from mcp_tokens where id = ${id}::uuid`))[0]!.hash_key_id;

  it('the installation key is created once and shared by every process', async () => {
    const [a, b] = await Promise.all([loadInstallationKey(get().db), loadInstallationKey(get().db)]);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(b).toBe(a);
  });

  it('verification is exact and per key', async () => {
    const hasher = createSecretHasher({ encryptionKey: KEY_A, installationKey: async () => KEY_B });
    const secret = newSecret('0b8e5c2e-3c1d-4a5e-9f7a-1b2c3d4e5f60');
    const stored = await hasher.hash(secret);
    expect(stored.keyId).toMatch(/^env:/);
    expect(await hasher.verify(secret, stored)).toBe(true);
    expect(await hasher.verify(`${secret.slice(0, -1)}${secret.endsWith('0') ? '1' : '0'}`, stored)).toBe(false);
    expect(await hasher.verify(secret, { ...stored, keyId: 'env:00000000' })).toBe(false);
    expect(await hasher.verify(secret, { ...stored, hash: 'abcd' })).toBe(false);
    const other = createSecretHasher({ encryptionKey: KEY_B, installationKey: async () => KEY_A });
    expect(await other.verify(secret, stored)).toBe(false);
  });

  it('a token made without ENCRYPTION_KEY keeps working once one is set, and moves to it; a key rotation keeps it too', async () => {
    const { token, secret } = await service({}).create(TENANT, { name: 'old', permissions: ['read_logs'] });
    expect(await keyIdOf(token.id)).toBe('installation');

    const withA = service({ encryptionKey: KEY_A });
    expect(await withA.authenticate(`Bearer ${secret}`)).toMatchObject({ ok: true });
    const keyA = await keyIdOf(token.id);
    expect(keyA).toMatch(/^env:/);

    // Rotation: B is current, A is still accepted as a previous key; the token moves to B.
    const withB = service({ encryptionKey: KEY_B, previousKeys: [KEY_A] });
    expect(await withB.authenticate(`Bearer ${secret}`)).toMatchObject({ ok: true });
    expect(await keyIdOf(token.id)).not.toBe(keyA);
    // Once A is dropped, nothing breaks: the token is already under B.
    expect(await service({ encryptionKey: KEY_B }).authenticate(`Bearer ${secret}`)).toMatchObject({ ok: true });
    // A server that never knew B cannot verify it.
    expect(await service({ encryptionKey: KEY_A }).authenticate(`Bearer ${secret}`)).toMatchObject({ ok: false, status: 401 });
  });

  it('authentication answers: missing, scheme, malformed, unknown, invalid → 401; an app no longer configured → 403', async () => {
    const svc = service({ encryptionKey: KEY_A });
    const { secret } = await svc.create(TENANT, { name: 'auth' });
    expect(await svc.authenticate(undefined)).toEqual({ ok: false, status: 401, message: 'Missing bearer token' });
    expect(await svc.authenticate(`Token ${secret}`)).toMatchObject({ ok: false, status: 401 });
    expect(await svc.authenticate('Bearer mcp_123')).toEqual({ ok: false, status: 401, message: 'Malformed MCP token' });
    expect(await svc.authenticate(`Bearer mcp_${'0'.repeat(32)}_${secret.slice(-43)}`)).toMatchObject({ ok: false, status: 401 });
    expect(await svc.authenticate(`Bearer ${secret.slice(0, -1)}${secret.endsWith('Q') ? 'R' : 'Q'}`)).toMatchObject({
      ok: false,
      status: 401,
    });
    expect(await svc.authenticate(`bearer   ${secret}`)).toMatchObject({
      ok: true,
      token: { appHandle: 'default', shop: TENANT.shop, permissions: [] },
    });
    const gone = createTokenService({
      db: get().db,
      hasher: createSecretHasher({ encryptionKey: KEY_A, installationKey: async () => KEY_B }),
      knownPermissions: () => new Set(),
      hasApp: () => false,
    });
    expect(await gone.authenticate(`Bearer ${secret}`)).toMatchObject({ ok: false, status: 403 });
  });
});
