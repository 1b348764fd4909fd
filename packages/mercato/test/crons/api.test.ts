/** /api/crons over real HTTP: the listing, the per-shop toggle, 400/404 cases and page gating. */
import { Cron } from 'croner';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { defineApp } from '../../src/app/app.ts';
import { createScheduler, listCrons, manualClock } from '../../src/crons/index.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { silentLogger } from '../../src/logger.ts';
import { type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { Installations, S1, S2, S3, instance as base } from './fixture.ts';
import { json } from '../kit/index.ts';

const app = defineApp();
const instance = app.defineConfig({
  flows: base.config.flows,
  crons: [
    { name: 'Hourly report', schedule: '0 * * * *', flow: 'report', input: { kind: 'hourly' } },
    { schedule: '*/15 * * * *', flow: 'sync', shops: 'all' },
    { schedule: '30 9 * * 1-5', flow: 'sync', shops: S1, timezone: 'Europe/Paris' },
    { schedule: '0 0 L * *', flow: 'report', shops: [S2, S3] },
  ],
});
const disabledPage = app.defineConfig({ flows: base.config.flows, crons: instance.config.crons, pages: { crons: 'disabled' } });

describeEngines('crons API', (get) => {
  let t: TestRuntime;
  const toggle = (body: unknown, shop = S1) =>
    t
      .api('/api/crons/toggle', {
        method: 'POST',
        shop,
        ...(typeof body === 'string' ? { body, headers: { 'content-type': 'application/json' } } : { json: body }),
      })
      .then(json);
  const list = (shop = S1) => t.api('/api/crons', { shop }).then(json);

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { http: true });
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(async () => {
    await get().reset();
  });

  it('GET /api/crons lists every configured cron with key, name, schedule, description, timezone, next fire time, shops, input and state', async () => {
    const before = Date.now();
    const { status, body } = await list();
    expect(status).toBe(200);
    expect(body.crons.map((c: any) => c.key)).toEqual(['report:0 * * * *', 'sync:*/15 * * * *', 'sync:30 9 * * 1-5', 'report:0 0 L * *']);
    const [hourly, all, paris, lastDay] = body.crons;
    expect(hourly).toEqual({
      key: 'report:0 * * * *',
      name: 'Hourly report',
      flow: 'report',
      schedule: '0 * * * *',
      description: 'Every hour',
      timezone: 'UTC',
      nextRunAt: hourly.nextRunAt,
      shops: 'global',
      input: { kind: 'hourly' },
      enabled: true,
      targeted: false,
      lastTick: null,
    });
    expect(new Date(hourly.nextRunAt).toISOString()).toBe(hourly.nextRunAt);
    expect(Date.parse(hourly.nextRunAt)).toBeGreaterThan(before);
    expect(Date.parse(hourly.nextRunAt) - before).toBeLessThanOrEqual(3_600_000);
    expect(new Date(hourly.nextRunAt).getUTCMinutes()).toBe(0);
    expect(all).toMatchObject({ name: 'sync', shops: 'all', input: {}, description: 'Every 15 minutes', targeted: true, enabled: true });
    // The time zone reads the schedule: 09:30 in Paris, whatever the server's zone.
    expect(paris).toMatchObject({ timezone: 'Europe/Paris', shops: S1, targeted: true, description: 'At 09:30, Monday through Friday' });
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Paris',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
    }).format(new Date(paris.nextRunAt));
    expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:30$/);
    expect(paris.nextRunAt).toBe(
      new Cron('30 9 * * 1-5', { paused: true, timezone: 'Europe/Paris' }).nextRun(new Date(before))!.toISOString(),
    );
    expect(lastDay).toMatchObject({ shops: [S2, S3], targeted: false, description: 'At 00:00, on the last day of the month' });
    // Targeting is per shop.
    const other = await list(S2);
    expect(other.body.crons.map((c: any) => c.targeted)).toEqual([false, true, false, true]);
  });

  it('POST /api/crons/toggle stores an override for the shop only and never changes the config', async () => {
    const configBefore = JSON.stringify(t.runtime.config.crons);
    expect(await toggle({ key: 'sync:*/15 * * * *', enabled: false })).toEqual({
      status: 200,
      body: { ok: true, key: 'sync:*/15 * * * *', enabled: false },
    });
    expect((await list(S1)).body.crons[1].enabled).toBe(false);
    expect((await list(S2)).body.crons[1].enabled).toBe(true);
    expect(JSON.stringify(t.runtime.config.crons)).toBe(configBefore);
    expect((await toggle({ key: 'sync:*/15 * * * *', enabled: true })).body).toEqual({ ok: true, key: 'sync:*/15 * * * *', enabled: true });
    expect((await list(S1)).body.crons[1].enabled).toBe(true);
    // A cron that does not target the shop can still be toggled (stored; it matters if the config later targets the shop).
    expect((await toggle({ key: 'report:0 0 L * *', enabled: false })).status).toBe(200);
    expect((await list(S1)).body.crons[3]).toMatchObject({ enabled: false, targeted: false });
  });

  it('the override decides what the scheduler fires for the shop, and the listing shows the last tick', async () => {
    await toggle({ key: 'sync:*/15 * * * *', enabled: false }, S2);
    const installations = new Installations();
    const handle = t.runtime.platform.apps[0]!.handle;
    installations.set(handle, [S1, S2]);
    const scheduler = createScheduler({
      db: get().db,
      crons: t.runtime.config.crons,
      appHandles: [handle],
      shops: installations,
      dispatch: t.runtime.dispatch,
      logger: silentLogger(),
    });
    await scheduler.tick(new Date('2030-01-01T10:15:10Z'));
    const s1 = (await list(S1)).body.crons[1];
    const s2 = (await list(S2)).body.crons[1];
    expect(s1.lastTick).toMatchObject({ fireAt: '2030-01-01T10:15:00.000Z', status: 'dispatched' });
    expect(s1.lastTick.runId).toMatch(/^[0-9a-f-]{36}$/);
    expect(s2.lastTick).toEqual({ fireAt: '2030-01-01T10:15:00.000Z', status: 'skipped', reason: 'disabled', runId: null });
    const run = await t.api(`/api/runs/${s1.lastTick.runId}`, { shop: S1 }).then(json);
    expect(run.body).toMatchObject({ flowName: 'sync', trigger: 'cron', status: 'pending' });
  });

  it('listCrons computes the next fire time from the given clock', async () => {
    const clock = manualClock('2030-01-01T10:07:00Z');
    const crons = await listCrons({ db: get().db, crons: t.runtime.config.crons, clock }, { appHandle: 'any', shop: S1 });
    expect(crons.map((c) => c.nextRunAt)).toEqual([
      '2030-01-01T11:00:00.000Z',
      '2030-01-01T10:15:00.000Z',
      '2030-01-02T08:30:00.000Z',
      '2030-01-31T00:00:00.000Z',
    ]);
  });

  it('unknown key is 404; a malformed body is 400 naming the field', async () => {
    expect(await toggle({ key: 'sync:* * * * *', enabled: false })).toEqual({
      status: 404,
      body: { error: 'Cron "sync:* * * * *" is not configured' },
    });
    const cases: Array<[unknown, string | undefined]> = [
      ['not json', undefined],
      [[1, 2], 'body'],
      [{ enabled: true }, 'key'],
      [{ key: 42, enabled: true }, 'key'],
      [{ key: '', enabled: true }, 'key'],
      [{ key: 'sync:*/15 * * * *' }, 'enabled'],
      [{ key: 'sync:*/15 * * * *', enabled: 'false' }, 'enabled'],
      [{ key: 'sync:*/15 * * * *', enabled: 1 }, 'enabled'],
      [{ key: 'sync:*/15 * * * *', enabled: true, shop: S2 }, 'shop'],
    ];
    for (const [body, field] of cases) {
      const res = await toggle(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.field).toBe(field);
      if (field) expect(res.body.error).toMatch(field === 'body' ? /^Body must be a JSON object: / : new RegExp(`^${field}: `));
    }
    // Nothing was stored by the refused requests.
    expect((await list(S1)).body.crons.every((c: any) => c.enabled)).toBe(true);
  });

  it('requires a session token', async () => {
    const res = await fetch(`${t.url}/api/crons`);
    expect(res.status).toBe(401);
  });
});

describeEngines('crons API with the crons page disabled', (get) => {
  let t: TestRuntime;
  beforeAll(async () => {
    t = await startTestRuntime(disabledPage, get().db, { http: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 404 { error: "Not found" } for the whole group', async () => {
    for (const [path, init] of [
      ['/api/crons', {}],
      ['/api/crons/toggle', { method: 'POST', json: { key: 'sync:*/15 * * * *', enabled: false } }],
    ] as const) {
      const res = await t.api(path, init);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'Not found' });
    }
  });
});
