/**
 * A noisy neighbour in the metrics without a label per shop (docs/observability.md): runs dispatched through the API for
 * four shops (one of them a storm of 30, three of 2 each, over two flows), scraped over real HTTP, read as 4 tenants
 * waiting, a largest tenant of 30 and a share of 30/36; runs that are not due do not count; no label or value names a
 * shop. Then the function itself: the counts are over the capped oldest due runs, a global tenant (shop null) is a
 * tenant, an empty queue reads 0; and the registry leaves the gauges out when the query fails.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { queuedRunsByFlow } from '../../src/flows/store/queue.ts';
import { createMetrics } from '../../src/metrics/index.ts';
import { type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';
import { type Sample, parseExposition, valueOf } from './exposition.ts';

const METRICS_TOKEN = 'metrics-token-tenants-0123456789';
const NOISY = 'noisy-storm.myshopify.com';
const QUIET = ['quiet-one.myshopify.com', 'quiet-two.myshopify.com', 'quiet-three.myshopify.com'];
const TENANT_GAUGES = ['mercato_queue_tenants_waiting', 'mercato_queue_largest_tenant_depth', 'mercato_queue_largest_tenant_share_ratio'];

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    sync: app.defineFlow({ name: 'sync', input: z.object({}), concurrency: null, run: () => null }),
    mail: app.defineFlow({ name: 'mail', input: z.object({}), concurrency: null, run: () => null }),
  },
});

async function scrape(url: string): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return { text, samples: parseExposition(text) };
}

describeEngines('queue metrics: tenants waiting, the largest tenant and its share', (get) => {
  let t: TestRuntime;
  const dispatch = async (shop: string, flow: string) => {
    const { status, body } = await json(await t.api(`/api/flows/${flow}/run`, { method: 'POST', shop, json: { input: {} } }));
    expect(status, JSON.stringify(body)).toBe(202);
    return body.runId as string;
  };

  beforeAll(async () => {
    // no worker: every dispatched run stays due
    t = await startTestRuntime(instance, get().db, { http: true, env: { MERCATO_METRICS_TOKEN: METRICS_TOKEN } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('a storm of one shop: 4 tenants waiting, the largest holds 30 of the 36 due runs; no label names a shop', async () => {
    // the noisy shop: 15 runs of each flow; three quiet shops: one of each (per flow 18 and 18, per tenant 30, 2, 2, 2)
    for (let i = 0; i < 15; i++) {
      await dispatch(NOISY, 'sync');
      await dispatch(NOISY, 'mail');
    }
    for (const shop of QUIET) {
      await dispatch(shop, 'sync');
      await dispatch(shop, 'mail');
    }
    // runs of a quiet shop that are not due: asleep until later, running, finished. None of them counts.
    const notDue = [await dispatch(QUIET[0]!, 'sync'), await dispatch(QUIET[0]!, 'sync'), await dispatch(QUIET[0]!, 'sync')];
    await t.runtime.db.query(
      sql`update runs set status = 'sleeping', available_at = now() + interval '1 hour' where id = ${notDue[0]!}::uuid`,
    );
    await t.runtime.db.query(
      sql`update runs set status = 'running', lease_owner = 'w/1', lease_expires_at = now() + interval '1 hour' where id = ${notDue[1]!}::uuid`,
    );
    await t.runtime.db.query(sql`update runs set status = 'completed', finished_at = now() where id = ${notDue[2]!}::uuid`);

    const { text, samples } = await scrape(t.url!);
    expect(valueOf(samples, 'mercato_queue_tenants_waiting')).toBe(4);
    expect(valueOf(samples, 'mercato_queue_largest_tenant_depth')).toBe(30);
    expect(valueOf(samples, 'mercato_queue_largest_tenant_share_ratio')).toBeCloseTo(30 / 36, 12);
    // the per-flow gauges stay as they were, from the same reading
    expect(valueOf(samples, 'mercato_queue_depth', { flow: 'sync' })).toBe(18);
    expect(valueOf(samples, 'mercato_queue_depth', { flow: 'mail' })).toBe(18);

    // one series each, without any label; no shop anywhere in the exposition
    for (const name of TENANT_GAUGES) {
      const series = samples.filter((s) => s.name === name);
      expect(series, name).toHaveLength(1);
      expect(series[0]!.labels, name).toEqual({});
      expect(text).toMatch(new RegExp(`^# TYPE ${name} gauge$`, 'm'));
    }
    for (const shop of [NOISY, ...QUIET]) expect(text).not.toContain(shop);
    const labelNames = new Set(samples.flatMap((s) => Object.keys(s.labels)));
    for (const name of ['shop', 'app', 'app_handle', 'tenant']) expect(labelNames.has(name), name).toBe(false);
  });

  it('the counts are over the capped oldest due runs; a global tenant counts; an empty queue reads 0', async () => {
    const exec = t.runtime.db.query;
    // the quiet shops' runs became due an hour ago: the oldest 10 are their 6 and 4 of the storm's
    await exec(sql`update runs set available_at = now() - interval '1 hour' where shop <> ${NOISY} and status = 'pending'`);
    let reading = await queuedRunsByFlow(exec, 10);
    expect(reading.tenants).toEqual({ waiting: 4, largest: 4, total: 10 });
    expect(reading.flows.reduce((n, f) => n + f.depth, 0)).toBe(10);
    reading = await queuedRunsByFlow(exec, 6);
    expect(reading.tenants).toEqual({ waiting: 3, largest: 2, total: 6 });

    // a global run (shop null) is a tenant of its own
    await t.runtime.dispatch({ appHandle: undefined, shop: null, flowName: 'sync', input: {}, trigger: 'api' });
    reading = await queuedRunsByFlow(exec);
    expect(reading.tenants).toEqual({ waiting: 5, largest: 30, total: 37 });
    expect(Object.fromEntries(reading.flows.map((f) => [f.flow, f.depth]))).toEqual({ sync: 19, mail: 18 });
    for (const f of reading.flows) expect(f.oldestAgeSeconds).toBeGreaterThanOrEqual(3599);

    await exec(sql`update runs set status = 'canceled', finished_at = now() where status in ('pending','sleeping')`);
    expect(await queuedRunsByFlow(exec)).toEqual({ flows: [], tenants: { waiting: 0, largest: 0, total: 0 } });
  });
});

it('the registry: 0 for an empty queue, no sample while the query fails, the share is largest / total', async () => {
  let answer: () => Promise<any> = async () => ({ flows: [], tenants: { waiting: 0, largest: 0, total: 0 } });
  const metrics = createMetrics({ version: 'test', defaultMetrics: false, queueCacheMs: 0, queue: () => answer() });
  const read = async () => parseExposition(await metrics.scrape());

  let samples = await read();
  for (const name of TENANT_GAUGES) expect(valueOf(samples, name), name).toBe(0);

  answer = async () => ({ flows: [{ flow: 'sync', depth: 40, oldestAgeSeconds: 3 }], tenants: { waiting: 3, largest: 10, total: 40 } });
  samples = await read();
  expect(valueOf(samples, 'mercato_queue_tenants_waiting')).toBe(3);
  expect(valueOf(samples, 'mercato_queue_largest_tenant_depth')).toBe(10);
  expect(valueOf(samples, 'mercato_queue_largest_tenant_share_ratio')).toBe(0.25);

  answer = async () => {
    throw new Error('the database is away');
  };
  samples = await read();
  for (const name of [...TENANT_GAUGES, 'mercato_queue_depth']) expect(valueOf(samples, name), name).toBeUndefined();
});
