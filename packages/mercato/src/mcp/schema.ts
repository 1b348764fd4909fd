import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * An MCP token of one tenant (app_handle, shop). Only a keyed hash of the secret is stored (see docs/mcp.md, "Token
 * secrets"); `hash_key_id` names the key that made it, so a key change does not lock tokens out.
 */
export const mcpTokens = pgTable(
  'mcp_tokens',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    appHandle: text('app_handle').notNull(),
    shop: text('shop').notNull(),
    name: text('name').notNull(),
    /** Array of permission keys. */
    permissions: jsonb('permissions').notNull(),
    status: text('status').notNull().default('active'),
    /** Hex HMAC-SHA256 of the whole secret. */
    secretHash: text('secret_hash').notNull(),
    hashKeyId: text('hash_key_id').notNull(),
    fingerprint: text('fingerprint').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('mcp_tokens_status_check', sql`${t.status} in ('active','disabled','revoked')`),
    index('mcp_tokens_tenant_created_idx').on(t.appHandle, t.shop, t.createdAt.desc()),
  ],
);

/** One tool or resource call made with a token (also the failed and denied ones). */
export const mcpAudits = pgTable(
  'mcp_audits',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    tokenId: uuid('token_id')
      .notNull()
      .references(() => mcpTokens.id, { onDelete: 'cascade' }),
    appHandle: text('app_handle').notNull(),
    shop: text('shop').notNull(),
    /** `tool`, `resource`, or `request` (a request refused with 403 before reaching a tool or resource). */
    kind: text('kind').notNull(),
    /** Tool name or resource URI, as requested (cut to 200 characters). */
    capability: text('capability').notNull(),
    /** The token's grants at the time of the call. */
    permissions: jsonb('permissions').notNull(),
    /** What the capability requires (empty for an unknown capability). */
    requiredPermissions: jsonb('required_permissions').notNull(),
    status: text('status').notNull(),
    error: text('error'),
    durationMs: integer('duration_ms').notNull(),
    requestId: text('request_id'),
    /** The shop the call acted on (the token's shop, or the `shop` argument of the GraphQL tool). */
    targetShop: text('target_shop'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('mcp_audits_kind_check', sql`${t.kind} in ('tool','resource','request')`),
    check('mcp_audits_status_check', sql`${t.status} in ('ok','error','denied','timeout','refused')`),
    index('mcp_audits_token_idx').on(t.tokenId, t.id.desc()),
    // Retention (docs/retention.md): oldest first.
    index('mcp_audits_created_idx').on(t.createdAt),
  ],
);

/** The per-installation hashing key, used only when ENCRYPTION_KEY is not set (one row, id `installation`). */
export const mcpHashKeys = pgTable('mcp_hash_keys', {
  id: text('id').primaryKey(),
  /** 64 hex characters. */
  secret: text('secret').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});
