/** The worker's poll loop: empty-poll backoff, waiting while every slot is busy, and reclaiming dead runs meanwhile. */
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { emptyPollDelayMs } from '../../src/worker/worker.ts';
import type { Worker } from '../../src/worker/index.ts';
import { SHOP, type TestRuntime, startTestRuntime, testWorker, waitForRun } from '../helpers/runtime.ts';

let holds: Array<() => void> = [];
const app = defineApp();
const instance = app.defineConfig({
  flows: {
    held: app.defineFlow({
      name: 'held',
      input: z.object({}),
      concurrency: null,
      run: (ctx) =>
        ctx.step(
          'held',
          ({ signal }) =>
            new Promise<void>((resolve, reject) => {
              holds.push(resolve);
              signal.addEventListener('abort', () => reject(signal.reason));
            }),
        ),
    }),
  },
  worker: { pollIntervalMs: 40, pollMaxIntervalMs: 300, pollBackoffCoefficient: 2, leaseDurationMs: 3000, concurrency: 1 },
});

describeEngines('worker poll loop', (get) => {
  let t: TestRuntime;
  const workers: Worker[] = [];
  const newWorker = (onPollWait: (delayMs: number, reason: string) => void) => {
    const w = testWorker(t.runtime, get().db, { onPollWait });
    workers.push(w);
    return w;
  };

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db);
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    holds = [];
    await get().reset();
  });
  afterEach(async () => {
    for (const h of holds) h();
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });

  it('computes the empty-poll delay by coefficient up to the maximum, never beyond a Node.js timer', () => {
    const config = { pollIntervalMs: 40, pollBackoffCoefficient: 2, pollMaxIntervalMs: 300 };
    expect([1, 2, 3, 4, 5, 50].map((n) => emptyPollDelayMs(config, n))).toEqual([40, 80, 160, 300, 300, 300]);
    expect(emptyPollDelayMs({ pollIntervalMs: 1000, pollBackoffCoefficient: 1e6, pollMaxIntervalMs: 2 ** 31 - 1 }, 5000)).toBe(2 ** 31 - 1);
  });

  it('backs off on empty polls by the coefficient up to pollMaxIntervalMs', async () => {
    const waits: Array<[number, string]> = [];
    await newWorker((ms, reason) => waits.push([ms, reason])).start();
    await expect.poll(() => waits.length, { timeout: 5000 }).toBeGreaterThanOrEqual(6);
    expect(waits.slice(0, 6)).toEqual([
      [40, 'empty'],
      [80, 'empty'],
      [160, 'empty'],
      [300, 'empty'],
      [300, 'empty'],
      [300, 'empty'],
    ]);
  });

  it('waits pollIntervalMs while every slot is busy, and still reclaims a dead run meanwhile', async () => {
    const waits: Array<[number, string]> = [];
    const w = newWorker((ms, reason) => waits.push([ms, reason]));
    await w.start();
    const busyRun = (await t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName: 'held', input: {}, trigger: 'api' })).runId;
    await expect.poll(() => holds.length, { timeout: 3000 }).toBe(1);
    expect(w.activeCount).toBe(1); // its only slot
    waits.length = 0;
    await expect.poll(() => waits.length, { timeout: 3000 }).toBeGreaterThanOrEqual(3);
    expect(waits.slice(0, 3)).toEqual([
      [40, 'busy'],
      [40, 'busy'],
      [40, 'busy'],
    ]);

    // a run whose worker died: recovered (back to pending) although this worker has no free slot
    const [dead] = await get().db.query<{ id: string }>(sql`
      insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, attempt, lease_owner, lease_expires_at)
      values ('default', ${SHOP}, 'held', 'api', '{}'::jsonb, ${JSON.stringify({ maxAttempts: 1, initialIntervalMs: 10, backoffCoefficient: 2, maxIntervalMs: 100 })}::jsonb,
              'running', 1, 'dead-worker/1', now() - interval '1 second')
      returning id`);
    const recovered = await waitForRun(get().db, dead.id, (r) => r.status === 'pending', 5000);
    expect(recovered.lost_leases).toBe(1);
    expect(w.activeCount).toBe(1);
    expect((await waitForRun(get().db, busyRun, () => true)).status).toBe('running');
  });
});
