/** Every SQL statement of MCP tokens, audits and the installation hashing key. Tenant reads filter by (app_handle, shop). */
import { type SQL, sql } from 'drizzle-orm';
import { cleanText } from '../db/text.ts';
import type { Database } from '../db/engine.ts';
import { type Tenant, isoTs, tenantWhere } from '../db/sql.ts';
import { INSTALLATION_KEY_ID, newInstallationKey } from './secret.ts';

export type TokenStatus = 'active' | 'disabled' | 'revoked';
export const TOKEN_STATUSES: readonly TokenStatus[] = ['active', 'disabled', 'revoked'];
export type AuditStatus = 'ok' | 'error' | 'denied' | 'timeout' | 'refused';
export type AuditKind = 'tool' | 'resource' | 'request';

type Query = Pick<Database, 'query'>;

/** Public metadata of a token: never the secret nor its hash. */
export interface TokenRecord {
  id: string;
  name: string;
  permissions: string[];
  status: TokenStatus;
  expiresAt: string | null;
  /** True when `expiresAt` has passed (evaluated by the database clock at read time). */
  expired: boolean;
  fingerprint: string;
  lastUsedAt: string | null;
  createdAt: string;
  updatedAt: string;
  revokedAt: string | null;
}

const TOKEN_COLUMNS = sql.join(
  [
    sql.raw('id, name, permissions, status, fingerprint'),
    sql`${isoTs('expires_at')} as "expiresAt"`,
    sql.raw('(expires_at is not null and expires_at <= now()) as expired'),
    sql`${isoTs('last_used_at')} as "lastUsedAt"`,
    sql`${isoTs('created_at')} as "createdAt"`,
    sql`${isoTs('updated_at')} as "updatedAt"`,
    sql`${isoTs('revoked_at')} as "revokedAt"`,
  ],
  sql`, `,
);

export async function insertToken(
  db: Query,
  row: {
    id: string;
    appHandle: string;
    shop: string;
    name: string;
    permissions: string[];
    hash: string;
    keyId: string;
    fingerprint: string;
    expiresAt: Date | null;
  },
): Promise<TokenRecord> {
  const [created] = await db.query<TokenRecord>(sql`
    insert into mcp_tokens (id, app_handle, shop, name, permissions, secret_hash, hash_key_id, fingerprint, expires_at)
    values (${row.id}::uuid, ${row.appHandle}, ${row.shop}, ${row.name}, ${JSON.stringify(row.permissions)}::jsonb, ${row.hash}, ${row.keyId},
      ${row.fingerprint}, ${row.expiresAt ? row.expiresAt.toISOString() : null}::timestamptz)
    returning ${TOKEN_COLUMNS}`);
  return created!;
}

export function listTokens(db: Query, t: Tenant<string>): Promise<TokenRecord[]> {
  return db.query<TokenRecord>(sql`select ${TOKEN_COLUMNS} from mcp_tokens where ${tenantWhere(t)} order by created_at desc, id`);
}

export async function getToken(db: Query, t: Tenant<string>, id: string): Promise<TokenRecord | undefined> {
  const [row] = await db.query<TokenRecord>(sql`select ${TOKEN_COLUMNS} from mcp_tokens where id = ${id}::uuid and ${tenantWhere(t)}`);
  return row;
}

/** Applies the given fields to a token that is not revoked; returns the row or undefined (missing or revoked, told apart by the caller). */
export async function updateToken(
  db: Query,
  t: Tenant<string>,
  id: string,
  fields: {
    name?: string;
    status?: 'active' | 'disabled';
    expiresAt?: Date | null;
    permissions?: string[];
    secret?: { hash: string; keyId: string; fingerprint: string };
  },
): Promise<TokenRecord | undefined> {
  const sets: SQL[] = [sql`updated_at = now()`];
  if (fields.name !== undefined) sets.push(sql`name = ${fields.name}`);
  if (fields.status !== undefined) sets.push(sql`status = ${fields.status}`);
  if (fields.expiresAt !== undefined) sets.push(sql`expires_at = ${fields.expiresAt ? fields.expiresAt.toISOString() : null}::timestamptz`);
  if (fields.permissions !== undefined) sets.push(sql`permissions = ${JSON.stringify(fields.permissions)}::jsonb`);
  if (fields.secret !== undefined) {
    sets.push(sql`secret_hash = ${fields.secret.hash}, hash_key_id = ${fields.secret.keyId}, fingerprint = ${fields.secret.fingerprint}`);
  }
  const [row] = await db.query<TokenRecord>(sql`
    update mcp_tokens set ${sql.join(sets, sql`, `)}
    where id = ${id}::uuid and ${tenantWhere(t)} and status <> 'revoked'
    returning ${TOKEN_COLUMNS}`);
  return row;
}

/** Revokes (idempotent); undefined when the token does not exist in this tenant. */
export async function revokeToken(db: Query, t: Tenant<string>, id: string): Promise<TokenRecord | undefined> {
  const [row] = await db.query<TokenRecord>(sql`
    update mcp_tokens set status = 'revoked', revoked_at = coalesce(revoked_at, now()), updated_at = case when status = 'revoked' then updated_at else now() end
    where id = ${id}::uuid and ${tenantWhere(t)}
    returning ${TOKEN_COLUMNS}`);
  return row;
}

/** What authentication needs about a token, in one primary-key read. Durations come from the database clock. */
export interface TokenAuthRow {
  id: string;
  appHandle: string;
  shop: string;
  name: string;
  permissions: string[];
  status: TokenStatus;
  secretHash: string;
  hashKeyId: string;
  /** Milliseconds until expiry (≤ 0: expired); null = never expires. */
  expiresInMs: number | null;
  /** Milliseconds since lastUsedAt; null = never used. */
  sinceUseMs: number | null;
}

export async function tokenForAuth(db: Query, id: string): Promise<TokenAuthRow | undefined> {
  const [row] = await db.query<TokenAuthRow>(sql`
    select id, app_handle as "appHandle", shop, name, permissions, status, secret_hash as "secretHash", hash_key_id as "hashKeyId",
      (extract(epoch from (expires_at - now())) * 1000)::float8 as "expiresInMs",
      (extract(epoch from (now() - last_used_at)) * 1000)::float8 as "sinceUseMs"
    from mcp_tokens where id = ${id}::uuid`);
  return row;
}

/** Sets last_used_at unless another request already did within the interval (so concurrent processes write once). */
export async function touchToken(db: Query, id: string, touchIntervalSeconds: number): Promise<void> {
  await db.query(sql`
    update mcp_tokens set last_used_at = now()
    where id = ${id}::uuid and (last_used_at is null or last_used_at <= now() - make_interval(secs => ${touchIntervalSeconds}))`);
}

/** Replaces a hash made under an older key (only if the row still holds that hash). */
export async function rehashToken(db: Query, id: string, from: string, to: { hash: string; keyId: string }): Promise<void> {
  await db.query(
    sql`update mcp_tokens set secret_hash = ${to.hash}, hash_key_id = ${to.keyId} where id = ${id}::uuid and secret_hash = ${from}`,
  );
}

export interface AuditInput {
  tokenId: string;
  appHandle: string;
  shop: string;
  kind: AuditKind;
  capability: string;
  permissions: readonly string[];
  requiredPermissions: readonly string[];
  status: AuditStatus;
  error: string | null;
  durationMs: number;
  requestId: string | null;
  targetShop: string | null;
}

/** Inserts audit records in one statement (the writer groups the records of concurrent calls). */
export async function insertAudits(db: Query, audits: readonly AuditInput[]): Promise<void> {
  if (audits.length === 0) return;
  // every text made storable (a NUL or a lone surrogate, which PostgreSQL refuses, becomes U+FFFD; cut after the
  // slice, which may split a surrogate pair): a tool name or an error text a caller chose never loses the record
  const text = (value: string, max = 1000) => cleanText(value.slice(0, max));
  const rows = audits.map(
    (
      a,
    ) => sql`(${a.tokenId}::uuid, ${text(a.appHandle)}, ${text(a.shop)}, ${a.kind}, ${text(a.capability, 200)}, ${JSON.stringify(a.permissions.map((p) => text(p)))}::jsonb,
      ${JSON.stringify(a.requiredPermissions.map((p) => text(p)))}::jsonb, ${a.status}, ${a.error === null ? null : text(a.error)}, ${Math.max(0, Math.round(a.durationMs))},
      ${a.requestId === null ? null : text(a.requestId, 200)}, ${a.targetShop === null ? null : text(a.targetShop)})`,
  );
  await db.query(sql`
    insert into mcp_audits (token_id, app_handle, shop, kind, capability, permissions, required_permissions, status, error, duration_ms, request_id, target_shop)
    values ${sql.join(rows, sql`, `)}`);
}

/**
 * Group commit of audit records: a call waits until its record is stored, and the records of calls finishing while a
 * write is in flight go together in the next statement (one commit instead of one per call).
 */
export function createAuditWriter(db: Query, maxBatch = 500): (audit: AuditInput) => Promise<void> {
  let queue: Array<{ audit: AuditInput; done: (error?: unknown) => void }> = [];
  let flushing = false;
  const flush = async () => {
    flushing = true;
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      try {
        await insertAudits(
          db,
          batch.map((b) => b.audit),
        );
        for (const b of batch) b.done();
      } catch (error) {
        // One bad record must not lose the others: write them one by one.
        if (batch.length === 1) batch[0]!.done(error);
        else for (const b of batch) await insertAudits(db, [b.audit]).then(() => b.done(), b.done);
      }
    }
    flushing = false;
  };
  return (audit) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ audit, done: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!flushing) void flush();
    });
}

export interface AuditRecord {
  id: number;
  kind: AuditKind;
  capability: string;
  permissions: string[];
  requiredPermissions: string[];
  status: AuditStatus;
  error: string | null;
  durationMs: number;
  requestId: string | null;
  targetShop: string | null;
  createdAt: string;
}

export function latestAudits(db: Query, t: Tenant<string>, tokenId: string, limit: number): Promise<AuditRecord[]> {
  return db.query<AuditRecord>(sql`
    select id, kind, capability, permissions, required_permissions as "requiredPermissions", status, error, duration_ms as "durationMs",
      request_id as "requestId", target_shop as "targetShop", ${isoTs('created_at')} as "createdAt"
    from mcp_audits where token_id = ${tokenId}::uuid and ${tenantWhere(t)}
    order by id desc limit ${limit}`);
}

/** The per-installation hashing key: created once (the first process to ask wins the insert), then read. */
export async function loadInstallationKey(db: Query): Promise<string> {
  await db.query(
    sql`insert into mcp_hash_keys (id, secret) values (${INSTALLATION_KEY_ID}, ${newInstallationKey()}) on conflict (id) do nothing`,
  );
  const [row] = await db.query<{ secret: string }>(sql`select secret from mcp_hash_keys where id = ${INSTALLATION_KEY_ID}`);
  if (!row) throw new Error('MCP installation key is missing');
  return row.secret;
}
