/**
 * Fair to every shop (docs/flows.md, "Fairness and load shaping"): one shop's backlog never holds up another shop's run;
 * priority orders a shop's own runs; keyed concurrency, rate limits and debounce hold across workers (on PostgreSQL,
 * workers on connections of their own); a waiting run says why. Real workers on both engines.
 */
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { type Database, openDatabase } from '../../src/db/engine.ts';
import { describeEngines } from '../../src/db/testing.ts';
import type { Worker } from '../../src/worker/index.ts';
import { type Backlog, type ClaimCursor, START_CURSOR, WALK_MAX_TENANTS, claimFair, skipKey } from '../../src/flows/store/claim.ts';
import { OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime, testWorker, waitForRun } from '../helpers/runtime.ts';

/** When each run's flow body started (ms, performance clock) and which key it had. */
const starts = new Map<string, number>();
let executing = new Map<string, number>();
let maxExecuting = new Map<string, number>();
const startOrder: string[] = [];
const debouncedInputs: Array<{ runId: string; n: number }> = [];

function track(key: string) {
  const n = (executing.get(key) ?? 0) + 1;
  executing.set(key, n);
  maxExecuting.set(key, Math.max(maxExecuting.get(key) ?? 0, n));
  return () => executing.set(key, (executing.get(key) ?? 1) - 1);
}

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    work: app.defineFlow({
      name: 'work',
      input: z.object({ ms: z.number().default(5), tag: z.string().optional() }),
      concurrency: null,
      run: async (ctx, input) => {
        starts.set(ctx.runId, performance.now());
        startOrder.push(input.tag ?? ctx.runId);
        await ctx.step('work', () => new Promise((r) => setTimeout(r, input.ms)));
        return 'ok';
      },
    }),
    limited: app.defineFlow({
      name: 'limited',
      input: z.object({ customer: z.string(), ms: z.number().default(400) }),
      concurrency: { limit: 2, key: (input) => input.customer },
      run: async (ctx, input) => {
        const done = track(`${ctx.shop}/${input.customer}`);
        try {
          await ctx.step('hold', () => new Promise((r) => setTimeout(r, input.ms)));
        } finally {
          done();
        }
      },
    }),
    limitedByShop: app.defineFlow({
      name: 'limitedByShop',
      input: z.object({}),
      concurrency: { limit: 1 },
      run: async (ctx) => {
        const done = track(`shop:${ctx.shop}`);
        try {
          await ctx.step('hold', () => new Promise((r) => setTimeout(r, 80)));
        } finally {
          done();
        }
      },
    }),
    throttled: app.defineFlow({
      name: 'throttled',
      input: z.object({}),
      concurrency: null,
      rateLimit: { limit: 3, period: '600ms' },
      run: (ctx) => {
        starts.set(ctx.runId, performance.now());
        return 'ok';
      },
    }),
    rateOnly: app.defineFlow({
      name: 'rateOnly',
      input: z.object({}),
      rateLimit: { limit: 100, period: '1s' },
      run: () => 'ok',
    }),
    debounced: app.defineFlow({
      name: 'debounced',
      input: z.object({ productId: z.number(), n: z.number() }),
      concurrency: null,
      debounce: { period: 300, key: (input) => String(input.productId) },
      run: (ctx, input) => {
        debouncedInputs.push({ runId: ctx.runId, n: input.n });
        return input.n;
      },
    }),
  },
  worker: { pollIntervalMs: 50, pollMaxIntervalMs: 200, pollBackoffCoefficient: 2, leaseDurationMs: 5000, concurrency: 2 },
});

describeEngines('fairness and load shaping', (get, kind) => {
  let t: TestRuntime;
  const workers: Worker[] = [];
  const extraDbs: Database[] = [];
  /** A worker; on PostgreSQL each on a connection pool of its own, as separate processes would be. */
  const newWorker = async (options: { concurrency?: number; prefetch?: number; fifoClaim?: boolean } = {}) => {
    let db = get().db;
    if (kind === 'postgres' && get().url) {
      db = await openDatabase({ url: get().url, poolSize: 3 });
      extraDbs.push(db);
    }
    const w = testWorker(t.runtime, db, {
      config: { concurrency: options.concurrency ?? 2, prefetch: options.prefetch ?? 100 },
      fifoClaim: options.fifoClaim,
    });
    workers.push(w);
    await w.start();
    return w;
  };
  const dispatch = (flowName: string, input: unknown, shop: string | null = SHOP, priority?: number) =>
    t.runtime.dispatch({ appHandle: 'default', shop, flowName, input, trigger: 'api', priority });
  /** The first of the runs whose `waiting` (GET /api/runs/:id) has this reason, or null. */
  const waitingFor = async (ids: readonly string[], reason: string) => {
    for (const id of ids) {
      const run = (await (await t.api(`/api/runs/${id}`)).json()) as { waiting: { reason: string } | null };
      if (run.waiting?.reason === reason) return run.waiting;
    }
    return null;
  };
  const pendingOf = async (shop: string) => {
    const [row] = await get().db.query<{ n: number }>(
      sql`select count(*)::int as n from runs where shop = ${shop} and status in ('pending','running')`,
    );
    return row.n;
  };

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { http: true });
    // the shop's first API request installs it (token exchange): done once here, not inside a test's time window
    expect((await t.api('/api/flows')).status).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(async () => {
    starts.clear();
    executing = new Map();
    maxExecuting = new Map();
    startOrder.length = 0;
    debouncedInputs.length = 0;
    await get().reset();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 2000 })));
    await Promise.all(extraDbs.splice(0).map((db) => db.close()));
  });

  /** 150 runs of one shop, then one of another shop: how many of the first shop's runs started before the other's. */
  const startedBefore = async (fifoClaim: boolean) => {
    for (let i = 0; i < 150; i++) await dispatch('work', { ms: 10 }, SHOP);
    const { runId } = await dispatch('work', { ms: 10 }, OTHER_SHOP);
    // no claiming ahead: the claim's order is the order runs start in
    await newWorker({ concurrency: 2, prefetch: 0, fifoClaim });
    await waitForRun(get().db, runId, undefined, 20_000);
    const [row] = await get().db.query<{ n: number }>(sql`
      select count(*)::int as n from runs
      where shop = ${SHOP} and started_at < (select started_at from runs where id = ${runId}::uuid)`);
    return row.n;
  };

  it("another shop's run is served in turn, not behind a shop's whole backlog", async () => {
    expect(await startedBefore(false)).toBeLessThanOrEqual(2);
  });

  it('the claim before fairness (bench-only FIFO) makes it wait behind the whole backlog', async () => {
    expect(await startedBefore(true)).toBeGreaterThanOrEqual(148);
  });

  it("priority orders a shop's own runs; a dispatch's priority beats the flow's", async () => {
    for (let i = 0; i < 12; i++) await dispatch('work', { ms: 1, tag: `low${i}` });
    await dispatch('work', { ms: 1, tag: 'high' }, SHOP, 50);
    await newWorker({ concurrency: 1, prefetch: 0 });
    await expect.poll(() => startOrder.length, { timeout: 10_000 }).toBe(13);
    expect(startOrder[0]).toBe('high');
    const body = await t.api('/api/flows/work/run', { method: 'POST', json: { input: {}, priority: 1000 } });
    expect(body.status).toBe(400);
    expect(await body.json()).toMatchObject({ field: 'priority', error: expect.stringContaining('-100 to 100') });
  });

  it('keyed concurrency: at most `limit` runs per key execute at once across workers; the others wait and say why', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await dispatch('limited', { customer: 'c1', ms: 800 })).runId);
    for (let i = 0; i < 2; i++) ids.push((await dispatch('limited', { customer: 'c2' })).runId);
    await newWorker({ concurrency: 4 });
    await newWorker({ concurrency: 4 });
    // a waiting run of c1 says it waits for a slot of its key, held by a run of the key
    await expect
      .poll(() => waitingFor(ids, 'concurrency'), { timeout: 10_000, interval: 20 })
      .toMatchObject({ reason: 'concurrency', key: 'c1', heldBy: expect.any(String) });
    for (const id of ids) await waitForRun(get().db, id, (r) => r.status === 'completed', 20_000);
    expect(maxExecuting.get(`${SHOP}/c1`)).toBe(2);
    expect(maxExecuting.get(`${SHOP}/c2`)).toBeLessThanOrEqual(2);
  });

  it("the default key is the shop: one shop's limit never holds another shop's runs", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await dispatch('limitedByShop', {}, SHOP)).runId);
    ids.push((await dispatch('limitedByShop', {}, OTHER_SHOP)).runId);
    await newWorker({ concurrency: 3 });
    await waitForRun(get().db, ids[4], (r) => r.status === 'completed', 10_000);
    // the other shop's run did not wait for the first shop's four (each 80 ms, one at a time)
    expect(await pendingOf(SHOP)).toBeGreaterThanOrEqual(1);
    for (const id of ids) await waitForRun(get().db, id, (r) => r.status === 'completed', 10_000);
    expect(maxExecuting.get(`shop:${SHOP}`)).toBe(1);
  });

  it('rateLimit: at most `limit` starts per period per key across workers; excess runs wait (rate-limited until T), none dropped', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push((await dispatch('throttled', {})).runId);
    await newWorker({ concurrency: 4 });
    await newWorker({ concurrency: 4 });
    await expect
      .poll(() => waitingFor(ids, 'rate_limited'), { timeout: 5000, interval: 10 })
      .toMatchObject({ reason: 'rate_limited', until: expect.any(String) });
    for (const id of ids) await waitForRun(get().db, id, (r) => r.status === 'completed', 10_000);
    const times = ids.map((id) => starts.get(id)!).sort((a, b) => a - b);
    // any 4 consecutive starts span at least one period, less a margin for the gap between the claim (where the limit is
    // kept, on the database clock) and the body's first line on a loaded machine; unlimited, all 9 start within ~50 ms
    for (let i = 3; i < times.length; i++) expect(times[i] - times[i - 3]).toBeGreaterThan(600 - 150);
  });

  it('debounce: dispatches with the same key join one run that starts after the quiet period with the last input', async () => {
    await newWorker({ concurrency: 2 });
    const results: Array<{ runId: string; joined?: boolean }> = [];
    for (let n = 1; n <= 20; n++) results.push(await dispatch('debounced', { productId: 7, n }));
    const other = await dispatch('debounced', { productId: 8, n: 100 });
    expect(new Set(results.map((r) => r.runId)).size).toBe(1);
    expect(results[0].joined).toBeUndefined();
    expect(results.slice(1).every((r) => r.joined === true)).toBe(true);
    expect(other.runId).not.toBe(results[0].runId);
    const detail = (await (await t.api(`/api/runs/${results[0].runId}`)).json()) as { waiting: { reason: string; key: string } | null };
    expect(detail.waiting).toMatchObject({ reason: 'debounced', key: '7' });
    await waitForRun(get().db, results[0].runId, (r) => r.status === 'completed', 5000);
    await waitForRun(get().db, other.runId, (r) => r.status === 'completed', 5000);
    expect(debouncedInputs.filter((d) => d.runId === results[0].runId)).toEqual([{ runId: results[0].runId, n: 20 }]);
    // once started, a new dispatch with the key makes a new run
    const after = await dispatch('debounced', { productId: 7, n: 21 });
    expect(after.runId).not.toBe(results[0].runId);
    expect(after.joined).toBeUndefined();
  });

  it('a flow with a rate limit and no concurrency option waits instead of refusing a second dispatch', async () => {
    const a = await dispatch('rateOnly', {});
    const b = await dispatch('rateOnly', {});
    expect(a.runId).not.toBe(b.runId);
  });

  it('a run claimed ahead reads `claimed` until its body starts, and its startedAt is when it really started', async () => {
    const w = await newWorker({ concurrency: 1, prefetch: 50 });
    // the worker claims ahead once it knows how long a run takes
    for (let i = 0; i < 4; i++) await waitForRun(get().db, (await dispatch('work', { ms: 1 })).runId);
    const long = (await dispatch('work', { ms: 400 })).runId;
    await expect.poll(() => w.activeCount, { timeout: 5000 }).toBe(1);
    const queued = [];
    for (let i = 0; i < 3; i++) queued.push((await dispatch('work', { ms: 1 })).runId);
    await expect.poll(() => w.queuedCount, { timeout: 5000 }).toBeGreaterThan(0);
    const waiting = (await (await t.api(`/api/runs/${queued[0]}`)).json()) as {
      status: string;
      startedAt: string | null;
      waiting: { reason: string };
    };
    expect(waiting).toMatchObject({ status: 'running', startedAt: null, waiting: { reason: 'claimed' } });
    for (const id of queued) await waitForRun(get().db, id);
    const rows = await get().db.query<{ id: string; started: number; finished: number }>(sql`
      select id, extract(epoch from started_at) * 1000 as started, extract(epoch from finished_at) * 1000 as finished
      from runs where id in (${sql.join(
        [long, ...queued].map((id) => sql`${id}::uuid`),
        sql`, `,
      )})`);
    const at = new Map(rows.map((r) => [r.id, r]));
    // the first queued run started when the long one's body ended, not when it was claimed beside it
    expect(Number(at.get(queued[0])!.started)).toBeGreaterThanOrEqual(Number(at.get(long)!.started) + 350);
    const after = (await (await t.api(`/api/runs/${queued[0]}`)).json()) as { waiting: unknown; startedAt: string | null };
    expect(after.waiting).toBeNull();
    expect(after.startedAt).not.toBeNull();
  });

  const insertRuns = async (shop: string, n: number, extra: { priority?: number; sleeping?: boolean } = {}) => {
    await get().db.query(sql`
      insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, priority, status, available_at)
      select 'default', ${shop}, 'work', 'api', '{"ms":1}', '{}', ${extra.priority ?? 0},
        ${extra.sleeping ? 'sleeping' : 'pending'}, now() + ${extra.sleeping ? 3_600_000 : 0} * interval '1 millisecond'
      from generate_series(1, ${n})`);
  };
  const claimedShops = async (limit: number, options: { fill?: number; skip?: string[]; hint?: Backlog[]; cursor?: ClaimCursor } = {}) => {
    const { runs } = await claimFair(get().db.query, 'test-claim', limit, 60_000, options.cursor ?? START_CURSOR, options);
    const by = new Map<string, number>();
    for (const r of runs) by.set(r.shop!, (by.get(r.shop!) ?? 0) + 1);
    return by;
  };

  it('one claim takes an equal share from every shop with due runs, whatever their backlogs', async () => {
    await insertRuns('a-shop.myshopify.com', 50);
    await insertRuns('b-shop.myshopify.com', 50);
    await insertRuns('c-shop.myshopify.com', 2);
    const by = await claimedShops(12);
    // 12 / 3 shops = 4 each; the shop with 2 due runs gives 2, and the 2 runs short are split between the shops that
    // filled their share: the claim is full, and no backlog took more than another
    expect([...by.entries()].sort()).toEqual([
      ['a-shop.myshopify.com', 5],
      ['b-shop.myshopify.com', 5],
      ['c-shop.myshopify.com', 2],
    ]);
  });

  it("a claim is filled from the big shop's backlog when the other shops have fewer due runs than their share", async () => {
    await insertRuns('a-shop.myshopify.com', 50);
    for (const shop of ['b-shop', 'c-shop', 'd-shop']) await insertRuns(`${shop}.myshopify.com`, 1);
    const by = await claimedShops(12);
    // every light shop's run is in the claim, and the rest of it is the big shop's (not 12 / 4 = 3 of them)
    expect([...by.entries()].sort()).toEqual([
      ['a-shop.myshopify.com', 9],
      ['b-shop.myshopify.com', 1],
      ['c-shop.myshopify.com', 1],
      ['d-shop.myshopify.com', 1],
    ]);
  });

  it("a claim beyond the worker's needs takes no share from the shops it has queued runs of, and fills nothing from a backlog", async () => {
    await insertRuns('a-shop.myshopify.com', 50);
    await insertRuns('b-shop.myshopify.com', 50);
    await insertRuns('c-shop.myshopify.com', 1);
    // the worker needs nothing (fill 0) and holds runs of shop A already: B and C get their shares (10 / 3 shops: 4
    // each), A none, and nothing more is taken for the claim's unused room
    const by = await claimedShops(10, { fill: 0, skip: [skipKey('default', 'a-shop.myshopify.com')] });
    expect([...by.entries()].sort()).toEqual([
      ['b-shop.myshopify.com', 4],
      ['c-shop.myshopify.com', 1],
    ]);
  });

  it('a claim says which shops gave more than their share, and the same claim with that hint takes the same runs', async () => {
    await insertRuns('a-shop.myshopify.com', 50);
    for (const shop of ['b-shop', 'c-shop', 'd-shop']) await insertRuns(`${shop}.myshopify.com`, 1);
    const first = await claimFair(get().db.query, 'test-claim', 6, 60_000, START_CURSOR);
    expect(first.beyond).toEqual([{ app: 'default', shop: 'a-shop.myshopify.com', priority: 0 }]);
    await get().db.query(sql`update runs set status = 'pending', lease_owner = null, lease_expires_at = null`);
    // hinted, the big shop is not walked into (the walk steps over its range) and its first pass reads the rest
    for (const cursor of [START_CURSOR, { app: 'default', shop: 'b-shop.myshopify.com' }, { app: 'default', shop: 'z' }]) {
      const by = await claimedShops(6, { hint: first.beyond, cursor });
      expect([...by.entries()].sort()).toEqual([
        ['a-shop.myshopify.com', 3],
        ['b-shop.myshopify.com', 1],
        ['c-shop.myshopify.com', 1],
        ['d-shop.myshopify.com', 1],
      ]);
      await get().db.query(sql`update runs set status = 'pending', lease_owner = null, lease_expires_at = null`);
    }
  });

  it('a hint for one of two backlogs does not give it more than the other', async () => {
    await insertRuns('a-shop.myshopify.com', 50);
    await insertRuns('b-shop.myshopify.com', 50);
    await insertRuns('c-shop.myshopify.com', 1);
    const by = await claimedShops(12, { hint: [{ app: 'default', shop: 'b-shop.myshopify.com', priority: 0 }] });
    // as without the hint (12 / 3 = 4 each, C gives 1, the 3 short go round-robin to A and B): the unhinted backlog
    // gets its part of the shortfall from the second pass
    expect(by.get('c-shop.myshopify.com')).toBe(1);
    expect(Math.abs(by.get('a-shop.myshopify.com')! - by.get('b-shop.myshopify.com')!)).toBeLessThanOrEqual(1);
    expect(by.get('a-shop.myshopify.com')! + by.get('b-shop.myshopify.com')!).toBe(11);
  });

  it('a hinted shop with nothing due any more takes nothing, and the others are claimed as without the hint', async () => {
    await insertRuns('b-shop.myshopify.com', 3);
    await insertRuns('c-shop.myshopify.com', 3);
    const by = await claimedShops(4, { hint: [{ app: 'default', shop: 'a-shop.myshopify.com', priority: 0 }] });
    expect([...by.entries()].sort()).toEqual([
      ['b-shop.myshopify.com', 2],
      ['c-shop.myshopify.com', 2],
    ]);
  });

  it("a shop's priority weighs its share of a claim, and every shop with due runs still gets one", async () => {
    await insertRuns('a-shop.myshopify.com', 50, { priority: 100 });
    await insertRuns('b-shop.myshopify.com', 50);
    const by = await claimedShops(10);
    expect(by.get('a-shop.myshopify.com')).toBeGreaterThanOrEqual(8);
    expect(by.get('b-shop.myshopify.com')).toBeGreaterThanOrEqual(1);
  });

  it(`a due run behind more than ${WALK_MAX_TENANTS} shops with nothing due is still claimed`, async () => {
    for (let i = 0; i < WALK_MAX_TENANTS + 44; i++) await insertRuns(`s${String(i).padStart(3, '0')}.myshopify.com`, 1, { sleeping: true });
    const { runId } = await dispatch('work', { ms: 1 }, 'zz-last.myshopify.com');
    await newWorker({ concurrency: 2 });
    await waitForRun(get().db, runId, undefined, 10_000);
  });

  it('a dispatch over HTTP answers 202 with the joined run and `joined: true`', async () => {
    const first = await t.api('/api/flows/debounced/run', { method: 'POST', json: { input: { productId: 9, n: 1 } } });
    const second = await t.api('/api/flows/debounced/run', { method: 'POST', json: { input: { productId: 9, n: 2 } } });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    const a = (await first.json()) as { runId: string; joined?: boolean };
    const b = (await second.json()) as { runId: string; joined?: boolean };
    expect(b).toEqual({ runId: a.runId, status: 'pending', joined: true });
  });
});

describe('fairness and load shaping: defineConfig validation', () => {
  const app = defineApp();
  const flow = (extra: Record<string, unknown>) =>
    ({ name: 'f', input: z.object({}), run: () => undefined, ...extra }) as unknown as Parameters<typeof app.defineFlow>[0];
  const problems = (extra: Record<string, unknown>) => {
    try {
      app.defineConfig({ flows: { f: flow(extra) } } as never);
      return '';
    } catch (error) {
      return String((error as Error).message);
    }
  };

  it('accepts every rule', () => {
    expect(
      problems({
        concurrency: { limit: 2, key: () => 'k' },
        rateLimit: { limit: 5, period: '1s' },
        debounce: { period: 500, maxWait: '5s' },
        priority: -3,
      }),
    ).toBe('');
  });

  it.each([
    [{ concurrency: { limit: 0 } }, 'flows.f.concurrency.limit: must be a positive integer'],
    [{ concurrency: 'two' }, 'flows.f.concurrency: must be a positive integer, null for no limit, or { limit, key }'],
    [{ concurrency: { limit: 1, keys: 1 } }, 'flows.f.concurrency.keys: unknown concurrency option (did you mean "key"?)'],
    [{ rateLimit: { limit: 5 } }, 'flows.f.rateLimit.period: is required'],
    [{ rateLimit: { limit: 5, period: '2d' } }, 'flows.f.rateLimit.period: must be from 1 ms to 24 h'],
    [{ rateLimit: { limit: 1.5, period: 100 } }, 'flows.f.rateLimit.limit: must be a positive integer'],
    [{ debounce: { period: 'soon' } }, 'flows.f.debounce.period: must be milliseconds or a duration string'],
    [{ debounce: { period: 1000, maxWait: 10 } }, 'flows.f.debounce.maxWait: must be at least the period (1000 ms)'],
    [{ debounce: { period: 1000, key: 'productId' } }, 'flows.f.debounce.key: must be a function'],
    [{ priority: 101 }, 'flows.f.priority: must be an integer from -100 to 100'],
  ])('refuses %j', (extra, message) => {
    expect(problems(extra)).toContain(message);
  });
});
