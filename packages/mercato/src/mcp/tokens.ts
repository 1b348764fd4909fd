/**
 * Token administration (create, list, detail, edit, permissions, rotate, revoke) and MCP authentication.
 * Tokens belong to the (appHandle, shop) that created them; another tenant's token is indistinguishable from a missing one.
 */
import { randomUUID } from 'node:crypto';
import type { Database } from '../db/engine.ts';
import type { AuthCache, AuthEntry } from './auth-cache.ts';
import { ConflictError, InvalidInputError, NotFoundError } from '../errors.ts';
import { type Tenant, isUuid } from '../db/sql.ts';
import { bearerToken } from '../http/auth.ts';
import { parseInput } from '../input.ts';
import { AUTH_CACHE_TTL_MS } from './auth-cache.ts';
import {
  CREATE_NOT_AN_OBJECT,
  PATCH_NOT_AN_OBJECT,
  PERMISSIONS_NOT_AN_OBJECT,
  createTokenBody,
  patchTokenBody,
  permissionsBody,
} from './schemas.ts';
import { type SecretHasher, fingerprintOf, newSecret, tokenIdOf } from './secret.ts';
import {
  type AuditRecord,
  type TokenRecord,
  getToken,
  insertToken,
  latestAudits,
  listTokens,
  rehashToken,
  revokeToken,
  tokenForAuth,
  touchToken,
  updateToken,
} from './store.ts';

export const DEFAULT_EXPIRY_DAYS = 90;
export const AUDITS_IN_DETAIL = 10;
/** lastUsedAt is written at most once per this many seconds per token. */
export const LAST_USED_INTERVAL_SECONDS = 60;
export { MAX_EXPIRY_DAYS, MAX_NAME_LENGTH } from './schemas.ts';
const DAY_MS = 86_400_000;

export interface TokenServiceDeps {
  db: Database;
  hasher: SecretHasher;
  /** Every permission key a token may hold. */
  knownPermissions: () => ReadonlySet<string>;
  /** Apps still configured (a token of a removed app no longer authenticates). */
  hasApp: (appHandle: string) => boolean;
  /** Token rows kept between requests (absent: every request reads the database). */
  cache?: AuthCache;
  /** How long a cached row is used before it is read again (default AUTH_CACHE_TTL_MS). */
  cacheTtlMs?: number;
}

/** Permission keys must be known to the catalog; duplicates are dropped. */
function knownPermissions(value: string[], known: ReadonlySet<string>): string[] {
  const unknown = value.filter((p) => !known.has(p));
  if (unknown.length > 0) {
    throw new InvalidInputError(
      `permissions: unknown permission${unknown.length > 1 ? 's' : ''} ${unknown.map((p) => JSON.stringify(p)).join(', ')}`,
      {
        field: 'permissions',
        details: { unknownPermissions: unknown },
      },
    );
  }
  return [...new Set(value)];
}

/** The expiry of a parsed body: undefined when neither field is given, null for "never". */
function expiryOf(body: { expiresAt?: string | null; expiresInDays?: number | null }, now: number): Date | null | undefined {
  if (body.expiresAt !== undefined) {
    if (body.expiresAt === null) return null;
    const date = new Date(body.expiresAt);
    if (date.getTime() <= now) throw new InvalidInputError('expiresAt: must be in the future', { field: 'expiresAt' });
    return date;
  }
  if (body.expiresInDays !== undefined) return body.expiresInDays === null ? null : new Date(now + body.expiresInDays * DAY_MS);
  return undefined;
}

export interface AuthenticatedToken {
  id: string;
  appHandle: string;
  shop: string;
  name: string;
  permissions: string[];
}

export type AuthResult =
  | { ok: true; token: AuthenticatedToken }
  /** 403 names the token that was refused (its secret was right), so the refusal can be audited. */
  | { ok: false; status: 403; message: string; token: AuthenticatedToken }
  | { ok: false; status: 401; message: string };

const INVALID = 'Unknown or invalid MCP token';

export function createTokenService(deps: TokenServiceDeps) {
  const { db, hasher } = deps;

  async function mustExist(t: Tenant<string>, id: string): Promise<TokenRecord> {
    const token = isUuid(id) ? await getToken(db, t, id) : undefined;
    if (!token) throw new NotFoundError('MCP token not found');
    return token;
  }

  /** Runs an update of a non-revoked token: 404 when missing, 409 when revoked. */
  async function edit(t: Tenant<string>, id: string, fields: Parameters<typeof updateToken>[3]): Promise<TokenRecord> {
    const existing = await mustExist(t, id);
    if (existing.status === 'revoked') throw new ConflictError('MCP token is revoked: it can no longer be edited or rotated');
    const updated = await updateToken(db, t, id, fields);
    await deps.cache?.invalidate(id);
    if (!updated) throw new ConflictError('MCP token is revoked: it can no longer be edited or rotated');
    return updated;
  }

  /** The token row, from the cache when fresh, else from the database (then cached). */
  async function load(id: string): Promise<AuthEntry | undefined> {
    const now = Date.now();
    const cached = deps.cache?.get(id, now, deps.cacheTtlMs ?? AUTH_CACHE_TTL_MS);
    if (cached) return cached;
    const readAt = deps.cache?.epoch() ?? 0;
    const row = await tokenForAuth(db, id);
    if (!row) return undefined;
    const entry: AuthEntry = {
      row,
      loadedAt: now,
      expiresAt: row.expiresInMs === null ? null : now + row.expiresInMs,
      nextTouchAt: row.sinceUseMs === null ? now : now + Math.max(0, LAST_USED_INTERVAL_SECONDS * 1000 - row.sinceUseMs),
    };
    deps.cache?.set(id, entry, readAt);
    return entry;
  }

  async function issueSecret(id: string) {
    const secret = newSecret(id);
    const { hash, keyId } = await hasher.hash(secret);
    return { secret, hash, keyId, fingerprint: fingerprintOf(secret) };
  }

  return {
    list: (t: Tenant<string>) => listTokens(db, t),

    async create(t: Tenant<string>, raw: unknown): Promise<{ token: TokenRecord; secret: string }> {
      const body = parseInput(createTokenBody, raw, { notAnObject: CREATE_NOT_AN_OBJECT });
      const permissions = body.permissions === undefined ? [] : knownPermissions(body.permissions, deps.knownPermissions());
      const now = Date.now();
      const expiry = expiryOf(body, now);
      const expiresAt = expiry === undefined ? new Date(now + DEFAULT_EXPIRY_DAYS * DAY_MS) : expiry;
      const id = randomUUID();
      const s = await issueSecret(id);
      const token = await insertToken(db, {
        id,
        appHandle: t.appHandle,
        shop: t.shop,
        name: body.name,
        permissions,
        hash: s.hash,
        keyId: s.keyId,
        fingerprint: s.fingerprint,
        expiresAt,
      });
      return { token, secret: s.secret };
    },

    async detail(t: Tenant<string>, id: string): Promise<TokenRecord & { audits: AuditRecord[] }> {
      const token = await mustExist(t, id);
      return { ...token, audits: await latestAudits(db, t, id, AUDITS_IN_DETAIL) };
    },

    async patch(t: Tenant<string>, id: string, raw: unknown): Promise<TokenRecord> {
      const body = parseInput(patchTokenBody, raw, { notAnObject: PATCH_NOT_AN_OBJECT });
      const fields: Parameters<typeof updateToken>[3] = {};
      if (body.name !== undefined) fields.name = body.name;
      if (body.status !== undefined) fields.status = body.status;
      const expiry = expiryOf(body, Date.now());
      if (expiry !== undefined) fields.expiresAt = expiry;
      return edit(t, id, fields);
    },

    async setPermissions(t: Tenant<string>, id: string, raw: unknown): Promise<TokenRecord> {
      const body = parseInput(permissionsBody, raw, { notAnObject: PERMISSIONS_NOT_AN_OBJECT });
      return edit(t, id, { permissions: knownPermissions(body.permissions, deps.knownPermissions()) });
    },

    async rotate(t: Tenant<string>, id: string): Promise<{ token: TokenRecord; secret: string }> {
      const s = await issueSecret((await mustExist(t, id)).id);
      const token = await edit(t, id, { secret: { hash: s.hash, keyId: s.keyId, fingerprint: s.fingerprint } });
      return { token, secret: s.secret };
    },

    async revoke(t: Tenant<string>, id: string): Promise<TokenRecord> {
      const token = isUuid(id) ? await revokeToken(db, t, id) : undefined;
      if (!token) throw new NotFoundError('MCP token not found');
      await deps.cache?.invalidate(id);
      return token;
    },

    /** Checks an Authorization header: 401 for missing, malformed, unknown or invalid; 403 for disabled, revoked, expired. */
    async authenticate(header: string | undefined): Promise<AuthResult> {
      if (header === undefined || header.trim() === '') return { ok: false, status: 401, message: 'Missing bearer token' };
      const secret = bearerToken(header);
      if (!secret) return { ok: false, status: 401, message: 'Authorization must be "Bearer <MCP token>"' };
      const id = tokenIdOf(secret);
      if (!id) return { ok: false, status: 401, message: 'Malformed MCP token' };
      const entry = await load(id);
      // Unknown and wrong secrets get the same answer, so the id inside a secret reveals nothing.
      if (!entry || !(await hasher.verify(secret, { hash: entry.row.secretHash, keyId: entry.row.hashKeyId })))
        return { ok: false, status: 401, message: INVALID };
      const { row } = entry;
      const now = Date.now();
      const token = { id: row.id, appHandle: row.appHandle, shop: row.shop, name: row.name, permissions: row.permissions };
      const refused = (message: string) => ({ ok: false as const, status: 403 as const, message, token });
      if (row.status === 'revoked') return refused('MCP token is revoked');
      if (row.status === 'disabled') return refused('MCP token is disabled');
      if (entry.expiresAt !== null && now >= entry.expiresAt) return refused('MCP token has expired');
      if (!deps.hasApp(row.appHandle)) return refused('The app of this MCP token is no longer configured');
      if (now >= entry.nextTouchAt) {
        entry.nextTouchAt = now + LAST_USED_INTERVAL_SECONDS * 1000;
        await touchToken(db, row.id, LAST_USED_INTERVAL_SECONDS);
      }
      if (row.hashKeyId !== (await hasher.currentKeyId())) {
        const next = await hasher.hash(secret);
        await rehashToken(db, row.id, row.secretHash, next);
        row.secretHash = next.hash;
        row.hashKeyId = next.keyId;
      }
      return { ok: true, token };
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
