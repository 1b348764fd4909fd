/**
 * Two runtimes (two processes' worth: separate connection pools, separate installers) on one PostgreSQL database:
 * concurrent first requests of a shop to both exchange its session token once. Needs DATABASE_URL.
 */
import { sql } from 'drizzle-orm';
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { type Database, openDatabase } from '../../src/db/engine.ts';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { SHOP, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { ENCRYPTION_KEY, installationRow, startSim } from './helpers.ts';

const app = defineApp();
const instance = app.defineConfig({ flows: { noop: app.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) } });

/** The install-lock connections of this database and the last query each sent. */
function lockConnections(db: Database) {
  return db.query<{ query: string }>(
    sql`select query from pg_stat_activity where datname = current_database() and application_name like '%-install-lock'`,
  );
}

describe.skipIf(!process.env.DATABASE_URL)('installations across processes [postgres]', () => {
  let sim: PlatformSim;
  let test: TestDatabase;
  let second: Database;
  let one: TestRuntime;
  let two: TestRuntime;

  beforeAll(async () => {
    sim = await startSim();
    test = await createTestDatabase('postgres');
    second = await openDatabase({ url: test.url, poolSize: 10, applicationName: 'mercato-test-2' });
    const env = { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY };
    one = await startTestRuntime(instance, test.db, { http: true, env });
    two = await startTestRuntime(instance, second, { http: true, env });
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await second?.close();
    await test?.drop();
    await sim?.close();
  });

  it('concurrent first requests to two processes exchange the session token once', async () => {
    const hold = sim.hold('token');
    let answers: Response[];
    try {
      const pending = Promise.all([one, two].flatMap((t) => Array.from({ length: 4 }, () => t.api('/api/pages'))));
      // one process is exchanging (held by the platform) while the other polls for the lock it holds
      await expect
        .poll(
          async () =>
            hold.arrived > 0 && (await lockConnections(test.db)).filter((c) => c.query.includes('pg_try_advisory_lock')).length === 2,
          { timeout: 10_000, interval: 20 },
        )
        .toBe(true);
      expect(hold.arrived).toBe(1);
      hold.release();
      answers = await pending;
    } finally {
      hold.release();
    }
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(sim.state.tokenExchanges.filter((e) => e.shop === SHOP)).toEqual([expect.objectContaining({ status: 200 })]);
    expect((await installationRow(test.db, SHOP))?.status).toBe('active');
    // the lock connections are closed once no installation is under way
    await expect.poll(async () => (await lockConnections(test.db)).length, { timeout: 10_000, interval: 20 }).toBe(0);
  });
});
