/**
 * GET /api/stats/runs and GET /api/stats/flows over real HTTP: runs seeded with known statuses, creation times and
 * durations give the exact counts per bucket and status, failure and success rates, p50/p95 and sparklines; the runs of
 * other tenants (another shop, the same shop of another app, global runs) are never counted; bad query parameters are
 * refused with 400.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import type { FlowStatsResponse, RunStatsResponse, RunStatus } from '../../src/api/types.ts';
import { defineApp } from '../../src/app/app.ts';
import type { Database } from '../../src/db/engine.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    alpha: app.defineFlow({ name: 'alpha', input: z.object({}), run: async () => 'ok' }),
    beta: app.defineFlow({ name: 'beta', input: z.object({}), run: async () => 'ok' }),
  },
});

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

/** A run to seed: its flow, status, age (ms before the test's start) and duration (ms; null: never finished or started). */
interface Seed {
  flow: string;
  status: RunStatus;
  age: number;
  durationMs: number | null;
}

/** Tenant A's runs (app `default`, SHOP). */
const A: Seed[] = [
  { flow: 'alpha', status: 'completed', age: 10 * MIN, durationMs: 1000 },
  { flow: 'alpha', status: 'completed', age: 20 * MIN, durationMs: 2000 },
  { flow: 'alpha', status: 'completed', age: 130 * MIN, durationMs: 3000 },
  { flow: 'alpha', status: 'failed', age: 200 * MIN, durationMs: 4000 },
  { flow: 'alpha', status: 'running', age: 5 * MIN, durationMs: null },
  // canceled: counted as a run, not in the rates or the durations
  { flow: 'alpha', status: 'canceled', age: 300 * MIN, durationMs: 500 },
  { flow: 'beta', status: 'completed', age: 30 * MIN, durationMs: 100 },
  { flow: 'beta', status: 'failed', age: 40 * MIN, durationMs: 300 },
  { flow: 'beta', status: 'pending', age: 1 * MIN, durationMs: null },
  { flow: 'beta', status: 'sleeping', age: 50 * MIN, durationMs: null },
  // outside 24 hours, inside 7 days
  { flow: 'beta', status: 'completed', age: 25 * HOUR, durationMs: 9999 },
  { flow: 'beta', status: 'failed', age: 3 * DAY, durationMs: 9999 },
  // outside both windows
  { flow: 'beta', status: 'completed', age: 8 * DAY, durationMs: 9999 },
];

/** Runs of every status that no answer for A may count. */
const NOISE: Seed[] = (['completed', 'failed', 'running', 'pending', 'canceled'] as const).map((status, i) => ({
  flow: 'alpha',
  status,
  age: (i + 1) * 7 * MIN,
  durationMs: status === 'completed' || status === 'failed' ? 50_000 : null,
}));

async function insert(db: Database, now: number, appHandle: string, shop: string | null, seeds: Seed[]) {
  for (const s of seeds) {
    const created = new Date(now - s.age);
    const started = s.status === 'pending' ? null : new Date(created.getTime() + 50);
    const finished =
      started && s.durationMs !== null && ['completed', 'failed', 'canceled'].includes(s.status)
        ? new Date(started.getTime() + s.durationMs)
        : null;
    await db.query(sql`
      insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, attempt, created_at, started_at, finished_at)
      values (${appHandle}, ${shop}, ${s.flow}, 'api', '{}'::jsonb, '{}'::jsonb, ${s.status}, 1, ${created.toISOString()}::timestamptz,
              ${started?.toISOString() ?? null}::timestamptz, ${finished?.toISOString() ?? null}::timestamptz)`);
  }
}

const STATUSES: RunStatus[] = ['pending', 'running', 'sleeping', 'completed', 'failed', 'canceled'];
const zero = () => Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<RunStatus, number>;

/** What GET /api/stats/runs must answer for `seeds`, given the window it reports (`since`, bucket size). */
function expectedRuns(seeds: Seed[], now: number, answer: RunStatsResponse, range: '24h' | '7d') {
  const bucketMs = (range === '24h' ? 60 : 360) * MIN;
  const since = Date.parse(answer.since);
  const n = range === '24h' ? 24 : 28;
  const buckets = Array.from({ length: n }, (_, i) => ({ start: new Date(since + i * bucketMs).toISOString(), counts: zero(), total: 0 }));
  const counts = zero();
  for (const s of seeds) {
    const i = Math.floor((now - s.age - since) / bucketMs);
    if (i < 0) continue;
    buckets[i].counts[s.status]++;
    buckets[i].total++;
    counts[s.status]++;
  }
  return { buckets, counts };
}

describeEngines('charts API (/api/stats)', (get) => {
  let t: TestRuntime;
  let now: number;

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { http: true });
    now = Date.now();
    await insert(get().db, now, 'default', SHOP, A);
    await insert(get().db, now, 'default', OTHER_SHOP, NOISE);
    await insert(get().db, now, 'other-app', SHOP, NOISE);
    await insert(get().db, now, 'default', null, NOISE);
  });
  afterAll(() => t?.close());

  it('runs per hour by status over 24 hours, and the failure rate', async () => {
    const { status, body } = await json(await t.api('/api/stats/runs?range=24h'));
    expect(status).toBe(200);
    const answer = body as RunStatsResponse;
    expect(answer.range).toBe('24h');
    expect(answer.bucketMinutes).toBe(60);
    const since = Date.parse(answer.since);
    // whole hours, the last one holding now
    expect(since % HOUR).toBe(0);
    expect(Date.parse(answer.until) - since).toBe(DAY);
    expect(Date.parse(answer.until)).toBeGreaterThan(now);
    expect(Date.parse(answer.until) - HOUR).toBeLessThanOrEqual(Date.now());
    const expected = expectedRuns(A, now, answer, '24h');
    expect(answer.buckets).toEqual(expected.buckets);
    expect(answer.counts).toEqual({ pending: 1, running: 1, sleeping: 1, completed: 4, failed: 2, canceled: 1 });
    expect(answer.counts).toEqual(expected.counts);
    expect(answer.total).toBe(10);
    expect(answer.failureRate).toBe(0.3333);
    // the default range is 24h
    expect((await json(await t.api('/api/stats/runs'))).body).toEqual(answer);
  });

  it('runs per 6 hours by status over 7 days', async () => {
    const { status, body } = await json(await t.api('/api/stats/runs?range=7d'));
    expect(status).toBe(200);
    const answer = body as RunStatsResponse;
    expect(answer.bucketMinutes).toBe(360);
    expect(answer.buckets).toHaveLength(28);
    expect(Date.parse(answer.since) % (6 * HOUR)).toBe(0);
    expect(answer.buckets).toEqual(expectedRuns(A, now, answer, '7d').buckets);
    expect(answer.counts).toEqual({ pending: 1, running: 1, sleeping: 1, completed: 5, failed: 3, canceled: 1 });
    expect(answer.total).toBe(12);
    expect(answer.failureRate).toBe(0.375);
  });

  it('per flow over 24 hours: runs, success rate, p50/p95 and runs per hour', async () => {
    const { status, body } = await json(await t.api('/api/stats/flows'));
    expect(status).toBe(200);
    const answer = body as FlowStatsResponse;
    expect(answer.bucketMinutes).toBe(60);
    const since = Date.parse(answer.since);
    const hourly = (flow: string) => {
      const h = new Array<number>(24).fill(0);
      for (const s of A) {
        const i = Math.floor((now - s.age - since) / HOUR);
        if (s.flow === flow && i >= 0) h[i]++;
      }
      return h;
    };
    expect(answer.flows).toEqual([
      // durations 1000, 2000, 3000 (completed) and 4000 (failed): interpolated p50 2500, p95 3000 + 0.85 × 1000
      { flowName: 'alpha', runs: 6, completed: 3, failed: 1, successRate: 0.75, p50Ms: 2500, p95Ms: 3850, hourly: hourly('alpha') },
      // 100 and 300: p50 200, p95 100 + 0.95 × 200
      { flowName: 'beta', runs: 4, completed: 1, failed: 1, successRate: 0.5, p50Ms: 200, p95Ms: 290, hourly: hourly('beta') },
    ]);
    expect(answer.flows[0].hourly.reduce((a, b) => a + b, 0)).toBe(6);
  });

  it('another shop sees its own runs only, and a shop without runs sees zeros', async () => {
    const other = (await json(await t.api('/api/stats/runs', { shop: OTHER_SHOP }))).body as RunStatsResponse;
    expect(other.counts).toEqual({ pending: 1, running: 1, sleeping: 0, completed: 1, failed: 1, canceled: 1 });
    expect(other.failureRate).toBe(0.5);
    const otherFlows = (await json(await t.api('/api/stats/flows', { shop: OTHER_SHOP }))).body as FlowStatsResponse;
    expect(otherFlows.flows.map((f) => [f.flowName, f.runs, f.p50Ms])).toEqual([['alpha', 5, 50_000]]);

    const empty = (await json(await t.api('/api/stats/runs?range=7d', { shop: 'empty-shop.myshopify.com' }))).body as RunStatsResponse;
    expect(empty.total).toBe(0);
    expect(empty.counts).toEqual(zero());
    expect(empty.failureRate).toBeNull();
    expect(empty.buckets.every((b) => b.total === 0)).toBe(true);
    const emptyFlows = (await json(await t.api('/api/stats/flows', { shop: 'empty-shop.myshopify.com' }))).body as FlowStatsResponse;
    expect(emptyFlows.flows).toEqual([]);
  });

  it('refuses bad query parameters with 400 and says which', async () => {
    expect(await json(await t.api('/api/stats/runs?range=30d'))).toEqual({
      status: 400,
      body: expect.objectContaining({ field: 'range', error: 'range: must be one of 24h, 7d' }),
    });
    expect(await json(await t.api('/api/stats/runs?range=24h&shop=x'))).toEqual({
      status: 400,
      body: expect.objectContaining({ field: 'shop', error: expect.stringContaining('shop') }),
    });
    expect(await json(await t.api('/api/stats/flows?range=7d'))).toEqual({
      status: 400,
      body: expect.objectContaining({ field: 'range', error: expect.stringContaining('range') }),
    });
    // without a session token: 401, as every /api route
    expect((await fetch(`${t.url}/api/stats/runs`)).status).toBe(401);
  });
});
