/**
 * Claiming ahead (worker.prefetch, docs/flows.md): with a backlog, one claim takes more runs than the free slots into a
 * local queue; queued runs are canceled, handed back on a graceful stop and handed back when they waited too long, and
 * never run twice. Real workers on both engines.
 */
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import type { WorkerConfig } from '../../src/app/types.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { cancelRun } from '../../src/flows/lifecycle.ts';
import { PREFETCH_MAX_WAIT_MS, type Worker, type WorkerOptions } from '../../src/worker/index.ts';
import { SHOP, type TestRuntime, startTestRuntime, testWorker, waitForRun } from '../helpers/runtime.ts';

/** Executions of the flow code per run id: a run executed twice shows 2. */
const executions = new Map<string, number>();
let releaseHeld: Array<() => void> = [];
const app = defineApp();
const instance = app.defineConfig({
  flows: {
    quick: app.defineFlow({
      name: 'quick',
      input: z.object({}),
      concurrency: null,
      run: (ctx) => {
        executions.set(ctx.runId, (executions.get(ctx.runId) ?? 0) + 1);
        return ctx.step('only', () => 'ok');
      },
    }),
    held: app.defineFlow({
      name: 'held',
      input: z.object({}),
      concurrency: null,
      run: (ctx) =>
        ctx.step(
          'held',
          ({ signal }) =>
            new Promise<string>((resolve, reject) => {
              releaseHeld.push(() => resolve('released'));
              signal.addEventListener('abort', () => reject(signal.reason));
            }),
        ),
    }),
  },
  worker: { pollIntervalMs: 5000, pollMaxIntervalMs: 5000, pollBackoffCoefficient: 1, leaseDurationMs: 3000, concurrency: 2 },
});

describeEngines('worker: claiming ahead', (get) => {
  let t: TestRuntime;
  const workers: Worker[] = [];
  const newWorker = (config: Partial<WorkerConfig> = {}, overrides: Partial<WorkerOptions> = {}) => {
    const w = testWorker(t.runtime, get().db, { config, ...overrides });
    workers.push(w);
    return w;
  };
  const tenant = { appHandle: 'default', shop: SHOP };
  const dispatch = (flowName: string) => t.runtime.dispatch({ ...tenant, flowName, input: {}, trigger: 'api' }).then((r) => r.runId);
  const dispatchMany = async (flowName: string, n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(await dispatch(flowName));
    return ids;
  };
  const statusCounts = async () => {
    const rows = await get().db.query<{ status: string; n: number }>(sql`select status, count(*)::int as n from runs group by status`);
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  };
  /** Runs a few quick runs so the worker knows how long a run takes (it claims nothing ahead before that). */
  const warmUp = async (w: Worker) => {
    const ids = await dispatchMany('quick', 4);
    for (const id of ids) await waitForRun(get().db, id, (r) => r.status === 'completed', 5000);
    await expect.poll(() => w.activeCount).toBe(0);
  };

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db);
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    executions.clear();
    releaseHeld = [];
    await get().reset();
  });
  afterEach(async () => {
    for (const release of releaseHeld.splice(0)) release();
    await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 2000 })));
  });

  it('with a backlog, one claim takes more runs than the free slots, and every run runs exactly once', async () => {
    const ids = await dispatchMany('quick', 120);
    const w = newWorker({ prefetch: 50 });
    await w.start();
    await expect.poll(async () => (await statusCounts()).completed ?? 0, { timeout: 30_000 }).toBe(120);
    // 2 slots: claiming only free slots takes at least 60 claim statements (the next test); ahead, a few
    expect(w.stats.claimed).toBe(120);
    expect(w.stats.polls).toBeLessThan(30);
    expect(ids.every((id) => executions.get(id) === 1)).toBe(true);
    const [steps] = await get().db.query<{ n: number; attempts: number }>(
      sql`select count(*)::int as n, max(attempt)::int as attempts from steps`,
    );
    expect(steps).toEqual({ n: 120, attempts: 1 });
  });

  it('prefetch 0 claims at most the free slots', async () => {
    await dispatchMany('quick', 120);
    const w = newWorker({ prefetch: 0 });
    await w.start();
    await expect.poll(async () => (await statusCounts()).completed ?? 0, { timeout: 30_000 }).toBe(120);
    expect(w.stats.polls).toBeGreaterThanOrEqual(60);
    expect(w.queuedCount).toBe(0);
  });

  it('a run canceled while queued never starts; the others run once their slot frees', async () => {
    const w = newWorker({ prefetch: 50, concurrency: 1 });
    await w.start();
    await warmUp(w);
    const held = await dispatch('held');
    await expect.poll(() => releaseHeld.length).toBe(1);
    const queued = await dispatchMany('quick', 5);
    await expect.poll(() => w.queuedCount, { timeout: 5000 }).toBe(5);
    // claimed ahead: leased to this worker in the database, not executed
    const [leased] = await get().db.query<{ n: number }>(
      sql`select count(*)::int as n from runs where status = 'running' and lease_owner is not null and flow_name = 'quick'`,
    );
    expect(leased.n).toBe(5);
    expect(queued.some((id) => executions.has(id))).toBe(false);

    await cancelRun(get().db, tenant, queued[2]);
    await expect.poll(() => w.queuedCount).toBe(4);
    releaseHeld[0]();
    await waitForRun(get().db, held, (r) => r.status === 'completed', 5000);
    for (const id of queued.filter((_, i) => i !== 2)) await waitForRun(get().db, id, (r) => r.status === 'completed', 5000);
    expect(executions.has(queued[2])).toBe(false);
    const [canceled] = await get().db.query<{ status: string; steps: number }>(
      sql`select status, (select count(*)::int from steps where run_id = runs.id) as steps from runs where id = ${queued[2]}::uuid`,
    );
    expect(canceled).toEqual({ status: 'canceled', steps: 0 });
  });

  it('a graceful stop hands queued runs back unstarted, for the same attempt', async () => {
    const w = newWorker({ prefetch: 50, concurrency: 1 });
    await w.start();
    await warmUp(w);
    await dispatch('held');
    await expect.poll(() => releaseHeld.length).toBe(1);
    const queued = await dispatchMany('quick', 3);
    await expect.poll(() => w.queuedCount, { timeout: 5000 }).toBe(3);
    const result = await w.stop({ graceMs: 100 });
    expect(result.released).toBe(4); // the held run and the 3 queued ones
    const rows = await get().db.query<{ status: string; same_attempt: boolean; lease_owner: string | null }>(
      sql`select status, same_attempt, lease_owner from runs where id in (${sql.join(
        queued.map((id) => sql`${id}::uuid`),
        sql`, `,
      )})`,
    );
    expect(rows).toEqual(Array(3).fill({ status: 'pending', same_attempt: true, lease_owner: null }));
    expect(queued.some((id) => executions.has(id))).toBe(false);
    // the next worker runs them as their first attempt
    await newWorker({ prefetch: 0 }).start();
    for (const id of queued) await waitForRun(get().db, id, (r) => r.status === 'completed' && r.attempt === 1, 5000);
  });

  it(`a queued run that waited ${PREFETCH_MAX_WAIT_MS} ms is handed back, and another worker runs it`, async () => {
    const hoarder = newWorker({ prefetch: 50, concurrency: 1 }, { heartbeatIntervalMs: 200 });
    await hoarder.start();
    await warmUp(hoarder);
    await dispatch('held'); // holds the hoarder's only slot
    await expect.poll(() => releaseHeld.length).toBe(1);
    const queued = await dispatchMany('quick', 3);
    await expect.poll(() => hoarder.queuedCount, { timeout: 5000 }).toBe(3);
    await expect.poll(() => hoarder.stats.handedBack, { timeout: PREFETCH_MAX_WAIT_MS + 3000 }).toBe(3);
    expect(hoarder.queuedCount).toBe(0);
    await newWorker({ prefetch: 0 }).start();
    for (const id of queued) await waitForRun(get().db, id, (r) => r.status === 'completed' && r.attempt === 1, 5000);
    expect(queued.every((id) => executions.get(id) === 1)).toBe(true);
    expect(releaseHeld).toHaveLength(1); // the held run still holds the hoarder's slot
  });
});
