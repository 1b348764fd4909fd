/**
 * Finding F6 of the reliability probe: a dead worker's runs come back when their lease expires, not at some later idle
 * poll. An idle worker whose poll backstop is far away (30 s) must still pick up a run whose lease expires in 1.5 s.
 * The chaos suite (test/chaos/) measures the same with SIGKILLed worker processes.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { RUNS_CHANNEL } from '../../src/flows/store/index.ts';
import { SHOP, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';

const app = defineApp();
const instance = app.defineConfig({
  flows: { hello: app.defineFlow({ name: 'hello', input: z.object({}), run: async () => 'hi' }) },
  worker: { pollIntervalMs: 500, pollBackoffCoefficient: 60, pollMaxIntervalMs: 30_000 },
});

describeEngines('reclaiming a dead worker’s runs', (get) => {
  let t: TestRuntime;
  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: { concurrency: 2 } });
  });
  afterAll(() => t?.close());

  it('an idle worker wakes when a lease expires and reclaims the run then, not at its next backstop poll', async () => {
    const { db } = get();
    await new Promise((r) => setTimeout(r, 1200)); // idle: its next backstop poll is 30 s away
    // a run another worker claimed and then died with (its lease expires in 1.5 s); the claim notified the workers
    const [row] = await db.query<{ id: string }>(sql`
      insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, attempt, lease_owner, lease_expires_at, started_at)
      values ('default', ${SHOP}, 'hello', 'api', '{}'::jsonb, '{"maxAttempts":1}'::jsonb,
              'running', 1, 'dead-worker/1', now() + interval '1500 milliseconds', now())
      returning id`);
    await db.notify(RUNS_CHANNEL);
    // nothing else wakes the worker: without a wake-up planned from the lease it would look again in 30 s
    const status = async () =>
      (await db.query<{ status: string; lost: number }>(sql`select status, lost_leases as lost from runs where id = ${row.id}`))[0];
    await expect.poll(status, { timeout: 8000, interval: 100 }).toEqual({ status: 'completed', lost: 1 });
  });
});
