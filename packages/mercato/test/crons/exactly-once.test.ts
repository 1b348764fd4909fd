/**
 * The exactly-once proof: three schedulers driven concurrently through 300 simulated seconds (200 at random moments,
 * 100 in lockstep) of four crons over global, 'all', list and single-shop modes. Every (cron, shop, fire time) is
 * dispatched exactly once: one tick row, one run.
 * On PostgreSQL each scheduler has its own connection pool, so their dispatch transactions overlap and meet at the
 * claim's primary key. PGlite is one session: the three share it and their transactions take turns, so there the test
 * shows the read-then-claim race between schedulers (a claim found taken at the insert rolls its run back), not
 * transactions racing each other. The names say which.
 */
import { Cron } from 'croner';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CronEntry } from '../../src/app/types.ts';
import { type CronScheduler, type TickSummary, createScheduler } from '../../src/crons/index.ts';
import { type Database, openDatabase } from '../../src/db/engine.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { createDispatcher } from '../../src/flows/dispatch.ts';
import { silentLogger } from '../../src/logger.ts';
import { type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { Installations, S1, S2, S3, instance } from './fixture.ts';

const T0 = Date.parse('2030-01-01T10:00:00.000Z');
/** Phase 1: each scheduler at its own random moment after each fire time. */
const JITTERED = 200;
/** Phase 2: all three at the very same moment (lockstep), so they race at the insert itself. */
const LOCKSTEP = 100;
const SECONDS = JITTERED + LOCKSTEP;
const CRONS: CronEntry[] = [
  { schedule: '* * * * * *', flow: 'report' },
  { schedule: '*/2 * * * * *', flow: 'sync', shops: 'all' },
  { schedule: '*/3 * * * * *', flow: 'report', shops: [S1, S2], input: { kind: 'list' } },
  { schedule: '*/5 * * * * *', flow: 'sync', shops: S3 },
];
const SHOPS_PER_CRON = [1, 3, 2, 1];

describeEngines('cron exactly-once across schedulers', (get, kind) => {
  let t: TestRuntime;
  const pools: Database[] = [];

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db);
  });
  afterAll(async () => {
    for (const db of pools) await db.close();
    await t?.close();
  });

  const setting =
    kind === 'postgres'
      ? '3 schedulers with their own connection pools (overlapping transactions)'
      : '3 schedulers sharing the one PGlite session (their transactions take turns)';
  it(`${setting} x ${SECONDS} simulated seconds: every (cron, shop, fire time) dispatched once`, { timeout: 180_000 }, async () => {
    const app = t.runtime.platform.apps[0]!.handle;
    const installations = new Installations();
    installations.set(app, [S1, S2, S3]);
    const schedulers: CronScheduler[] = [];
    for (let i = 0; i < 3; i++) {
      const db = kind === 'postgres' ? await openDatabase({ url: get().url, poolSize: 4, applicationName: `cron-proof-${i}` }) : get().db;
      if (kind === 'postgres') pools.push(db);
      schedulers.push(
        createScheduler(
          {
            db,
            crons: CRONS,
            appHandles: [app],
            shops: installations,
            // The dispatch function over this scheduler's own pool (as runtime.dispatch is in its own process).
            dispatch: createDispatcher({
              db,
              registry: t.runtime.registry,
              config: t.runtime.config,
              appHandles: t.runtime.platform.apps.map((a) => a.handle),
            }),
            logger: silentLogger(),
          },
          { id: `s${i}`, catchUpMs: 0, concurrency: 4 },
        ),
      );
    }

    // Phase 1: each scheduler walks the simulated seconds on its own, a random fraction of a second after each fire
    // time, so the three reach the same claims at different moments.
    const drive = async (s: CronScheduler) => {
      const summaries: TickSummary[] = [await s.tick(new Date(T0))];
      for (let second = 1; second <= JITTERED; second++)
        summaries.push(await s.tick(new Date(T0 + second * 1000 + Math.floor(Math.random() * 900))));
      return summaries;
    };
    const results = await Promise.all(schedulers.map(drive));
    // Phase 2: lockstep, the three tick at the identical moment: they all pass the cheap "already claimed?" read and
    // meet at the insert, where the primary key lets exactly one through.
    for (let second = JITTERED + 1; second <= SECONDS; second++) {
      const now = new Date(T0 + second * 1000 + 100);
      const summaries = await Promise.all(schedulers.map((s) => s.tick(now)));
      summaries.forEach((summary, i) => results[i]!.push(summary));
    }

    const fireTimes = (schedule: string) =>
      new Cron(schedule, { paused: true }).nextRuns(SECONDS, new Date(T0)).filter((d) => d.getTime() <= T0 + SECONDS * 1000);
    const expected = CRONS.reduce((sum, c, i) => sum + fireTimes(c.schedule).length * SHOPS_PER_CRON[i]!, 0);
    expect(expected).toBe(300 + 150 * 3 + 100 * 2 + 60);

    const total = (field: 'dispatched' | 'alreadyClaimed' | 'lostRaces' | 'errors' | 'conflicts' | 'skipped' | 'failed') =>
      results.flat().reduce((sum, summary) => sum + summary[field], 0);
    expect(total('errors') + total('conflicts') + total('skipped') + total('failed')).toBe(0);
    expect(total('dispatched')).toBe(expected);
    // Every scheduler considered every claim: the two it did not win were found claimed.
    expect(total('alreadyClaimed')).toBe(2 * expected);
    // The races at the insert really happened (the unique key, not the read before it, decided them). On PGlite the
    // loser's transaction began after the winner's had committed; on PostgreSQL they can overlap (the loser's insert
    // then waits for the winner's commit).
    expect(total('lostRaces')).toBeGreaterThan(0);

    const [ticks] = await get().db.query<{ n: number; distinct_runs: number; dispatched: number }>(
      sql`select count(*)::int as n, count(distinct run_id)::int as distinct_runs, count(*) filter (where status = 'dispatched')::int as dispatched from cron_ticks`,
    );
    expect(ticks).toEqual({ n: expected, distinct_runs: expected, dispatched: expected });
    const [runs] = await get().db.query<{ n: number; linked: number }>(
      sql`select count(*)::int as n, count(*) filter (where id in (select run_id from cron_ticks))::int as linked from runs where trigger = 'cron'`,
    );
    expect(runs).toEqual({ n: expected, linked: expected });

    // Per cron and shop: exactly the fire times of the schedule, each once.
    for (const [i, cron] of CRONS.entries()) {
      const rows = await get().db.query<{ shop: string; n: number; first: string; last: string }>(sql`
        select shop, count(*)::int as n, min(to_json(fire_at) #>> '{}') as first, max(to_json(fire_at) #>> '{}') as last
        from cron_ticks where cron_key = ${`${cron.flow}:${cron.schedule}`} group by shop order by shop`);
      const times = fireTimes(cron.schedule);
      expect(rows).toHaveLength(SHOPS_PER_CRON[i]!);
      for (const row of rows) {
        expect(row.n).toBe(times.length);
        expect(new Date(row.first).toISOString()).toBe(times[0]!.toISOString());
        expect(new Date(row.last).toISOString()).toBe(times.at(-1)!.toISOString());
      }
    }
    const won = results.map((summaries) => summaries.reduce((sum, s) => sum + s.dispatched, 0));
    console.info(
      `[${kind}] dispatches won per scheduler: ${won.join(', ')} (of ${expected}); claims lost at the insert: ${total('lostRaces')}`,
    );
  });
});
