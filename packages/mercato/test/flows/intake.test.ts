/**
 * Group commit of dispatches (flows/intake.ts): concurrent dispatches share one insert statement and one commit; a lone
 * one goes at once; a failing row fails only its own caller; every answered id is a committed row. Both engines.
 */
import { sql } from 'drizzle-orm';
import { beforeEach, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { type Exec, isPrepared } from '../../src/db/sql.ts';
import { intakeBatcher } from '../../src/flows/intake.ts';
import type { NewRun } from '../../src/flows/store/runs.ts';

const run = (n: number, extra: Partial<NewRun> = {}): NewRun => ({
  appHandle: 'default',
  shop: 'demo-1.myshopify.com',
  flowName: 'work',
  trigger: 'api',
  input: { n },
  retryPolicy: { maxAttempts: 1, initialIntervalMs: 1000, backoffCoefficient: 2, maxIntervalMs: 1000 },
  ...extra,
});

describeEngines('dispatch intake: group commit', (get) => {
  let seen: string[] = [];
  const counting: Exec = (statement) => {
    seen.push(isPrepared(statement) ? statement.name : 'sql');
    return get().db.query(statement);
  };
  beforeEach(async () => {
    seen = [];
    await get().reset();
  });

  it('a lone dispatch is inserted at once with its NOTIFY; concurrent ones share statements', async () => {
    const intake = intakeBatcher(counting);
    const lone = await intake.insert(run(0), true);
    expect(seen).toEqual(['mercato_insert_run_notify']);
    seen = [];
    const ids = await Promise.all(Array.from({ length: 60 }, (_, n) => intake.insert(run(n + 1), n === 0)));
    expect(new Set([lone, ...ids]).size).toBe(61);
    // far fewer statements than dispatches: each batch is one statement and one commit
    expect(seen.length).toBeLessThanOrEqual(5);
    const rows = await get().db.query<{ id: string; n: number; status: string }>(
      sql`select id, (input->>'n')::int as n, status from runs order by (input->>'n')::int`,
    );
    expect(rows.map((r) => r.n)).toEqual(Array.from({ length: 61 }, (_, n) => n));
    expect(rows.every((r) => r.status === 'pending')).toBe(true);
    // each caller got the id of its own row
    for (const [n, id] of ids.entries()) expect(rows.find((r) => r.id === id)?.n).toBe(n + 1);
  });

  it("a row that fails fails only its own dispatch; the batch's other runs are stored", async () => {
    const intake = intakeBatcher(counting);
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, n) => intake.insert(run(n, n === 4 ? { priority: 40_000 } : {}), false)),
    );
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect(results[4].status).toBe('rejected');
    const [count] = await get().db.query<{ n: number }>(sql`select count(*)::int as n from runs`);
    expect(count.n).toBe(9);
  });
});
