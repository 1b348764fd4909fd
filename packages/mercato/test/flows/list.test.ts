/** Run lists over real HTTP: every query-parameter rule, ordering, the total, the row shape and tenant isolation. */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';

const app = defineApp();
const noop = { input: z.object({}), run: async () => 'ok' };
const instance = app.defineConfig({
  flows: { syncOrders: app.defineFlow({ name: 'syncOrders', ...noop }), pushOrders: app.defineFlow({ name: 'pushOrders', ...noop }) },
});

const STATUSES = ['pending', 'running', 'sleeping', 'completed', 'failed', 'canceled'] as const;
/** 60 runs of SHOP, one minute apart from 2026-11-01T00:00Z (run k at minute k); flows and statuses cycle. */
const SPEC = Array.from({ length: 60 }, (_, k) => ({
  flow: k % 2 === 0 ? 'syncOrders' : 'pushOrders',
  status: STATUSES[k % 6],
  at: new Date(Date.UTC(2026, 10, 1, 0, k)).toISOString(),
}));

describeEngines('run lists', (get) => {
  let t: TestRuntime;
  /** ids[k] = id of SPEC[k] */
  const ids: string[] = [];
  const list = (query = '', shop?: string, path = '/api/runs') => t.api(`${path}${query}`, { shop }).then(json);
  /** Indexes into SPEC of the listed runs. */
  const ks = (body: any) => body.runs.map((r: any) => ids.indexOf(r.id));

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { http: true });
    const db = get().db;
    for (const s of SPEC) {
      const failed = s.status === 'failed';
      const [row] = await db.query<{ id: string }>(sql`
        insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, created_at, started_at, finished_at, attempt, error)
        values ('default', ${SHOP}, ${s.flow}, 'api', '{"secret":"input"}'::jsonb, '{}'::jsonb, ${s.status}, ${s.at}::timestamptz,
                ${s.status === 'pending' ? null : s.at}::timestamptz, ${['completed', 'failed', 'canceled'].includes(s.status) ? s.at : null}::timestamptz,
                ${s.status === 'pending' ? 0 : 1},
                ${failed ? JSON.stringify({ name: 'TypeError', message: 'x is undefined', stack: 'TypeError: x is undefined\n    at run' }) : null}::jsonb)
        returning id`);
      ids.push(row.id);
    }
    // Other tenants: another shop of the same app, and the same shop of another app handle.
    await db.query(sql`
      insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, created_at)
      select 'default', ${OTHER_SHOP}, 'syncOrders', 'api', '{}'::jsonb, '{}'::jsonb, 'failed', '2026-11-01T00:30:00Z'::timestamptz from generate_series(1, 7)`);
    await db.query(sql`
      insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy, status, created_at)
      select 'other-app', ${SHOP}, 'syncOrders', 'api', '{}'::jsonb, '{}'::jsonb, 'failed', '2026-11-01T00:30:00Z'::timestamptz from generate_series(1, 5)`);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('defaults: limit 50, offset 0, newest first, total counts every run of the tenant', async () => {
    const { status, body } = await list();
    expect(status).toBe(200);
    expect(body).toMatchObject({ total: 60, limit: 50, offset: 0 });
    expect(ks(body)).toEqual(Array.from({ length: 50 }, (_, i) => 59 - i));
  });

  it('documents its row shape: summary fields only, an error summary, no input/output/stack', async () => {
    const { body } = await list('?status=failed&limit=1');
    const row = body.runs[0];
    expect(Object.keys(row).sort()).toEqual(
      [
        'appHandle',
        'attempt',
        'availableAt',
        'createdAt',
        'errorSummary',
        'finishedAt',
        'flowName',
        'id',
        'nextAttemptAt',
        'parentRunId',
        'shop',
        'startedAt',
        'status',
        'trigger',
        'updatedAt',
        'waiting',
      ].sort(),
    );
    expect(row).toMatchObject({
      id: ids[58],
      flowName: 'syncOrders',
      status: 'failed',
      attempt: 1,
      trigger: 'api',
      appHandle: 'default',
      shop: SHOP,
      parentRunId: null,
      errorSummary: 'TypeError: x is undefined',
    });
    expect(new Date(row.createdAt).toISOString()).toBe(SPEC[58].at);
    expect(new Date(row.finishedAt).toISOString()).toBe(SPEC[58].at);
    // an unfiltered list merges the runs in flight in (listRunRows): its rows have the same fields, no sort keys
    for (const r of (await list('?limit=6')).body.runs) expect(Object.keys(r).sort(), r.status).toEqual(Object.keys(row).sort());
    const pending = (await list('?status=pending&limit=1')).body.runs[0];
    expect(pending).toMatchObject({ startedAt: null, finishedAt: null, errorSummary: null, attempt: 0 });
  });

  it('limit is an integer from 1 to 200', async () => {
    expect(ks((await list('?limit=1')).body)).toEqual([59]);
    expect((await list('?limit=200')).body.runs).toHaveLength(60);
    for (const bad of ['0', '201', '-1', 'abc', '1.5', '1e2', '10x']) {
      const r = await list(`?limit=${bad}`);
      expect(r, bad).toMatchObject({ status: 400, body: { field: 'limit' } });
      expect(r.body.error).toMatch(/^limit: /);
    }
  });

  it('offset is a non-negative integer; pages do not overlap', async () => {
    const a = await list('?limit=25&offset=0');
    const b = await list('?limit=25&offset=25');
    const c = await list('?limit=25&offset=50');
    expect([...ks(a.body), ...ks(b.body), ...ks(c.body)]).toEqual(Array.from({ length: 60 }, (_, i) => 59 - i));
    expect(c.body).toMatchObject({ total: 60, offset: 50 });
    expect((await list('?offset=1000')).body).toMatchObject({ runs: [], total: 60 });
    for (const bad of ['-1', 'x', '2.5'])
      expect(await list(`?offset=${bad}`), bad).toMatchObject({ status: 400, body: { field: 'offset' } });
  });

  it('status is one of the six; anything else is 400', async () => {
    for (const [i, s] of STATUSES.entries()) {
      const { body } = await list(`?status=${s}`);
      expect(body.total, s).toBe(10);
      expect(ks(body)).toEqual(Array.from({ length: 10 }, (_, j) => 54 + i - 6 * j));
    }
    for (const bad of ['done', 'FAILED', 'active'])
      expect(await list(`?status=${bad}`), bad).toMatchObject({ status: 400, body: { field: 'status' } });
  });

  it('search: case-insensitive on flow name, status or the run id (whole or partial); wildcards are literal', async () => {
    expect((await list('?search=SYNCorders')).body.total).toBe(30);
    expect((await list('?search=push')).body.total).toBe(30);
    expect((await list('?search=Cancel')).body.total).toBe(10);
    expect((await list('?search=ing')).body.total).toBe(30); // pending, running, sleeping
    expect(ks((await list(`?search=${ids[17]}`)).body)).toEqual([17]);
    expect(ks((await list(`?search=${ids[17].toUpperCase()}`)).body)).toEqual([17]);
    const partial = ids[17].slice(9, 23);
    expect(ks((await list(`?search=${partial}`)).body)).toContain(17);
    expect((await list('?search=%25')).body.total).toBe(0);
    expect((await list('?search=_')).body.total).toBe(0);
    expect((await list('?search=sync%20status')).body.total).toBe(0);
    expect((await list(`?search=${'x'.repeat(201)}`)).status).toBe(400);
    expect((await list('?search=sync&status=failed')).body.total).toBe(10); // failed: k ≡ 4 (mod 6), even k → syncOrders
    expect((await list('?search=push&status=failed')).body.total).toBe(0);
  });

  it('from and to are dates applied to createdAt (inclusive); invalid ones are 400', async () => {
    const r = await list(`?from=${SPEC[10].at}&to=${SPEC[14].at}`);
    expect(ks(r.body)).toEqual([14, 13, 12, 11, 10]);
    expect(r.body.total).toBe(5);
    expect((await list('?from=2026-11-01T00:55:00Z')).body.total).toBe(5);
    expect((await list('?to=2026-11-01T00:04:30Z')).body.total).toBe(5);
    expect((await list('?to=2026-11-01T00:04:30')).body.total).toBe(5); // no offset: UTC
    expect((await list('?from=2026-11-01T01:10:00%2B01:00')).body.total).toBe(50); // 00:10Z
    expect((await list('?from=2026-11-02')).body.total).toBe(0);
    expect((await list('?to=2026-11-01')).body.total).toBe(1);
    for (const [q, field] of [
      ['from=yesterday', 'from'],
      ['to=2026-13-01', 'to'],
      ['from=2026-02-30', 'from'],
      ['to=5', 'to'],
      ['from=2026-11-02&to=2026-11-01', 'from'],
    ]) {
      expect(await list(`?${q}`), q).toMatchObject({ status: 400, body: { field } });
    }
  });

  it('parameters combine, and unknown parameters are 400 naming them', async () => {
    const r = await list(`?status=completed&search=push&from=${SPEC[20].at}&limit=2&offset=1`);
    // completed: k ≡ 3 (mod 6), odd k → pushOrders; from k ≥ 20: 21, 27, …, 57
    expect(r.body.total).toBe(7);
    expect(ks(r.body)).toEqual([51, 45]);
    for (const bad of ['page=2', 'sort=asc', 'Limit=5']) {
      const res = await list(`?${bad}`);
      expect(res, bad).toMatchObject({ status: 400, body: { field: bad.split('=')[0] } });
    }
  });

  it('GET /api/flows/:name/runs lists one flow with the same rules; an unknown flow is 404', async () => {
    const r = await list('?limit=3', undefined, '/api/flows/pushOrders/runs');
    expect(r.body.total).toBe(30);
    expect(ks(r.body)).toEqual([59, 57, 55]);
    expect((await list('?status=failed', undefined, '/api/flows/syncOrders/runs')).body.total).toBe(10);
    expect((await list('?status=failed', undefined, '/api/flows/pushOrders/runs')).body.total).toBe(0);
    expect(await list('?limit=0', undefined, '/api/flows/pushOrders/runs')).toMatchObject({ status: 400, body: { field: 'limit' } });
    expect((await list('', undefined, '/api/flows/nope/runs')).status).toBe(404);
  });

  it('tenant isolation: other shops and other apps are never listed or counted', async () => {
    const mine = await list('?limit=200&status=failed');
    expect(mine.body.total).toBe(10);
    expect(mine.body.runs.every((r: any) => r.shop === SHOP && r.appHandle === 'default')).toBe(true);
    const theirs = await list('?limit=200', OTHER_SHOP);
    expect(theirs.body.total).toBe(7);
    expect(theirs.body.runs.every((r: any) => r.shop === OTHER_SHOP && !ids.includes(r.id))).toBe(true);
    expect((await list(`?search=${ids[0]}`, OTHER_SHOP)).body.total).toBe(0);
    expect((await list('', OTHER_SHOP, '/api/flows/pushOrders/runs')).body.total).toBe(0);
  });
});
