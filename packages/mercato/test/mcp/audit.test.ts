/** The audit writer: every call waits for its record; concurrent records share statements; one bad record loses no other. */
import { sql } from 'drizzle-orm';
import { expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { createSecretHasher } from '../../src/mcp/secret.ts';
import { type AuditInput, createAuditWriter, latestAudits } from '../../src/mcp/store.ts';
import { createTokenService } from '../../src/mcp/tokens.ts';

const TENANT = { appHandle: 'default', shop: 'shop-one.myshopify.com' };

describeEngines('MCP audit writer', (get) => {
  it('stores every record of concurrent calls, and rejects only the bad one of a batch', async () => {
    const db = get().db;
    const tokens = createTokenService({
      db,
      hasher: createSecretHasher({ installationKey: async () => 'c'.repeat(64) }),
      knownPermissions: () => new Set(),
      hasApp: () => true,
    });
    const { token } = await tokens.create(TENANT, { name: 'audited' });
    let statements = 0;
    const counting = { query: <T>(statement: ReturnType<typeof sql>) => (statements++, db.query<T>(statement)) };
    const write = createAuditWriter(counting);
    const audit = (i: number, status = 'ok'): AuditInput => ({
      ...TENANT,
      tokenId: token.id,
      kind: 'tool',
      capability: `tool.${i}`,
      permissions: ['a'],
      requiredPermissions: [],
      status: status as AuditInput['status'],
      error: null,
      durationMs: i,
      requestId: `r${i}`,
      targetShop: TENANT.shop,
    });
    await Promise.all(Array.from({ length: 50 }, (_, i) => write(audit(i))));
    expect(statements).toBeLessThan(50);
    const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from mcp_audits where token_id = ${token.id}::uuid`);
    expect(n).toBe(50);

    const results = await Promise.allSettled([write(audit(100)), write(audit(101)), write(audit(102, 'weird')), write(audit(103))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const latest = await latestAudits(db, TENANT, token.id, 10);
    expect(
      latest
        .map((a) => a.capability)
        .slice(0, 3)
        .sort(),
    ).toEqual(['tool.100', 'tool.101', 'tool.103'].sort());
    expect(latest.some((a) => a.capability === 'tool.102')).toBe(false);
  });
});
