/**
 * SIGTERM under load (`npm run test:chaos`): a `mercato worker` process stopped gracefully while it executes runs
 * finishes what it can within its grace period (the lease, 10 s by default: `Worker.stop` in src/worker/worker.ts), hands
 * back the rest, and exits 0; another worker completes the handed-back runs. Nothing is left running, a hand-back is
 * neither a lost lease nor a new attempt, and no completed step runs again.
 *
 * The victim holds a few `slow` runs (a step of CHAOS_SLOW_MS = 20 s, longer than the grace period, so they must be
 * handed back) and executes a stream of `chain` runs (short, so those in flight finish within the grace period); it gets
 * SIGTERM once it executes at least 3 of them, and the other worker is started at the same moment.
 * Size: MERCATO_CHAOS_SIGTERM_RUNS (default 300 chain runs).
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_WORKER } from '../../src/app/defaults.ts';
import { type Cluster, describeWithCluster, startCluster } from '../kit/cluster.ts';
import {
  type TestSide,
  auditSteps,
  envNumber,
  fmt,
  killAll,
  openRuns,
  openTestSide,
  progress,
  settle,
  sleep,
  startWorkerProcess,
  stopProcess,
  unexpectedExits,
} from './harness.ts';

const CHAIN_RUNS = envNumber('MERCATO_CHAOS_SIGTERM_RUNS', 300);
const SLOW_RUNS = 4;
const SLOW_MS = 20_000;
const CONCURRENCY = 10;
const GRACE_MS = DEFAULT_WORKER.leaseDurationMs;

describeWithCluster('chaos: SIGTERM a worker under load', () => {
  let cluster: Cluster;
  let side: TestSide;
  let url: string;

  beforeAll(async () => {
    cluster = await startCluster();
    url = await cluster.createDatabase();
    side = await openTestSide(url);
  });

  afterAll(async () => {
    await settle('stopping the processes', killAll);
    await settle("closing the test process's runtime and pool", async () => side?.close());
    await cluster?.destroy();
  });

  it('the stopped worker finishes or hands back every run within its grace period and exits', { timeout: 300_000 }, async () => {
    const env = { CHAOS_SLOW_MS: String(SLOW_MS) };
    const victim = startWorkerProcess(url, CONCURRENCY, env);
    await victim.ready;
    const pattern = `%:${victim.pid}:%`;

    // the victim holds the slow runs before the other worker exists
    const slowIds = await Promise.all(Array.from({ length: SLOW_RUNS }, (_, n) => side.dispatch('slow', n)));
    for (const deadline = Date.now() + 30_000; ;) {
      const [row] = await side.db.query<{ n: number }>(
        sql`select count(*)::int as n from runs where flow_name = 'slow' and status = 'running' and lease_owner like ${pattern}`,
      );
      if (row!.n === SLOW_RUNS) break;
      if (Date.now() > deadline) throw new Error(`the victim did not claim the ${SLOW_RUNS} slow runs:\n${victim.output()}`);
      await sleep(50);
    }
    progress(`victim ${victim.pid} holds ${SLOW_RUNS} slow runs; dispatching ${CHAIN_RUNS} chain runs over 6 s`);

    // a stream of short runs; the SIGTERM lands once the victim executes some of them too
    const dispatching = Promise.all(
      Array.from({ length: CHAIN_RUNS }, async (_, n) => {
        await sleep((n * 6000) / CHAIN_RUNS);
        return side.dispatch('chain', n);
      }),
    );
    for (const deadline = Date.now() + 30_000; ;) {
      const [row] = await side.db.query<{ n: number }>(
        sql`select count(*)::int as n from runs where flow_name = 'chain' and status = 'running' and lease_owner like ${pattern}`,
      );
      if (row!.n >= 3) break;
      if (Date.now() > deadline) throw new Error(`the victim did not execute chain runs:\n${victim.output()}`);
      await sleep(10);
    }
    victim.expectExit();
    victim.child.kill('SIGTERM');
    const sigtermAt = Date.now();
    const sigtermDb = await side.now();
    // the victim claims nothing after the signal: what it holds now is what it must finish or hand back
    const held = (
      await side.db.query<{ id: string }>(sql`select id from runs where status = 'running' and lease_owner like ${pattern}`)
    ).map((r) => r.id);
    // the other worker, which completes what the victim hands back and what is still queued
    const helper = startWorkerProcess(url, CONCURRENCY, env);
    await helper.ready;
    const exit = await victim.exited;
    const exitMs = exit.at - sigtermAt;
    progress(`SIGTERM to the victim while it held ${held.length} runs; it exited (code ${exit.code}) after ${fmt(exitMs)}`);
    await dispatching;

    for (const deadline = Date.now() + 120_000; (await openRuns(side.db)) > 0;) {
      if (Date.now() > deadline) break;
      await sleep(500);
    }
    const helperExit = await stopProcess(helper);

    // what the victim said about the hand-back (pino JSON lines)
    const handBack = victim
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; released?: number })
      .find((l) => l.msg?.includes('handed back'));
    // each run held at the signal: finished by the victim (no later claim by another worker) or handed back
    const fates = await side.db.query<{
      id: string;
      flow: string;
      status: string;
      handedBackMs: number | null;
      finishedMs: number | null;
    }>(sql`
      select r.id, r.flow_name as flow, r.status,
        (select (extract(epoch from min(c.at)) * 1000)::float8 - ${sigtermDb} from chaos_claims c
          where c.run_id = r.id and c.lease_owner not like ${pattern} and c.at > to_timestamp(${sigtermDb / 1000})) as "handedBackMs",
        (extract(epoch from r.finished_at) * 1000)::float8 - ${sigtermDb} as "finishedMs"
      from runs r where r.id in (select value::uuid from jsonb_array_elements_text(${JSON.stringify(held)}::jsonb))`);
    const handedBack = fates.filter((f) => f.handedBackMs !== null);
    const finishedByVictim = fates.filter((f) => f.handedBackMs === null);
    const [stats] = await side.db.query<{ notCompleted: number; lostLeases: number; extraAttempts: number }>(sql`
      select count(*) filter (where status <> 'completed')::int as "notCompleted",
        coalesce(sum(lost_leases), 0)::int as "lostLeases",
        count(*) filter (where attempt - attempt_base <> 1)::int as "extraAttempts"
      from runs`);
    const audit = await auditSteps(side.db);
    const report = [
      `SIGTERM figures (${CHAIN_RUNS} chain + ${SLOW_RUNS} slow runs of ${SLOW_MS / 1000} s, concurrency ${CONCURRENCY}, grace = lease ${GRACE_MS} ms):`,
      `  victim: held ${held.length} runs at the SIGTERM (${fates.filter((f) => f.flow === 'slow').length} slow), exited with code ${exit.code} after ${fmt(exitMs)}`,
      `  finished by the victim after the SIGTERM: ${finishedByVictim.length} (the last ${fmt(Math.max(...finishedByVictim.map((f) => f.finishedMs ?? Number.NaN)))} after it); handed back: ${handedBack.length} (its log says released ${handBack?.released}), claimed by the other worker ${fmt(Math.min(...handedBack.map((f) => f.handedBackMs!)))} after the SIGTERM`,
      `  all runs: not completed ${stats!.notCompleted}, lost leases ${stats!.lostLeases}, runs with more than one attempt ${stats!.extraAttempts}, open ${await openRuns(side.db)}`,
      `  steps: committed twice ${audit.committedTwice}, executed after commit ${audit.executedAfterCommit}, executions not committed (handed-back steps, allowed) ${audit.uncommittedExecutions}`,
    ].join('\n');
    progress(report);

    expect(exit, report).toMatchObject({ code: 0, signal: null });
    expect(exitMs, report).toBeLessThanOrEqual(GRACE_MS + 5_000);
    // the short runs in flight finished within the grace period; the slow ones could not: handed back, as the log says
    expect(finishedByVictim.length, report).toBeGreaterThan(0);
    expect(
      finishedByVictim.filter((f) => f.flow !== 'chain' || f.finishedMs === null || f.finishedMs > GRACE_MS),
      report,
    ).toEqual([]);
    expect(
      handedBack.map((f) => f.flow),
      report,
    ).toEqual(slowIds.map(() => 'slow'));
    expect(handBack?.released, report).toBe(SLOW_RUNS);
    // another worker completed everything; a hand-back is not a lost lease nor a new attempt
    expect(
      fates.map((f) => f.status),
      report,
    ).toEqual(held.map(() => 'completed'));
    expect(await openRuns(side.db), report).toBe(0);
    expect(stats!.notCompleted, report).toBe(0);
    expect(stats!.lostLeases, report).toBe(0);
    expect(stats!.extraAttempts, report).toBe(0);
    expect(audit.committedTwice, report).toBe(0);
    expect(audit.executedAfterCommit, report).toBe(0);
    expect(audit.resultWithoutExecution, report).toBe(0);
    expect(audit.uncommittedExecutions, report).toBeGreaterThanOrEqual(SLOW_RUNS);
    expect(helperExit.code, report).toBe(0);
    expect(unexpectedExits(), report).toEqual([]);
  });
});
