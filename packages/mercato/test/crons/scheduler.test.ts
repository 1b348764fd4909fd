/**
 * The cron scheduler on a real database, driven with tick(now) (no test waits for real minutes): shop modes, overrides,
 * conflicts, refused ticks, atomicity of claim + dispatch, the missed-tick policy and the start/stop loop (tick
 * rows are pruned by the retention pruner: test/retention).
 * The exactly-once proof with three schedulers is in exactly-once.test.ts.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import type { CronEntry } from '../../src/app/types.ts';
import { type Clock, type SchedulerOptions, createScheduler, manualClock, setCronEnabled } from '../../src/crons/index.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { type DispatchFn, createDispatcher } from '../../src/flows/dispatch.ts';
import { type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { Installations, S1, S2, S3, S4, instance, runsOf, ticksOf } from './fixture.ts';
import { capturingLogger } from '../kit/index.ts';

const at = (iso: string) => new Date(`2030-01-01T${iso}Z`);

describeEngines('cron scheduler', (get) => {
  let t: TestRuntime;
  let app: string;
  const installations = new Installations();
  const captured = capturingLogger('debug');

  const scheduler = (
    crons: CronEntry[],
    options: SchedulerOptions & { dispatch?: DispatchFn; appHandles?: string[]; clock?: Clock } = {},
  ) => {
    const { dispatch, appHandles, clock, ...rest } = options;
    return createScheduler(
      {
        db: get().db,
        crons,
        appHandles: appHandles ?? [app],
        shops: installations,
        dispatch: dispatch ?? t.runtime.dispatch,
        logger: captured.logger,
        clock,
      },
      rest,
    );
  };
  const logsMatching = (msg: string) => captured.lines.filter((l) => String(l.msg).includes(msg));

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db);
    app = t.runtime.platform.apps[0]!.handle;
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(async () => {
    await get().reset();
    installations.set(app, [S1, S2, S3]);
    captured.lines.length = 0;
  });

  it('global fires once without a shop, all once per active installation, a domain or a list only for those shops', async () => {
    const crons: CronEntry[] = [
      { schedule: '* * * * *', flow: 'report' },
      { schedule: '* * * * *', flow: 'sync', shops: 'all' },
      { schedule: '*/5 * * * *', flow: 'report', shops: S1, input: { kind: 'one' } },
      { schedule: '*/2 * * * *', flow: 'sync', shops: [S2, S4] },
    ];
    const s = scheduler(crons);
    const first = await s.tick(at('10:00:30'));
    expect(first).toMatchObject({ dispatched: 6, skipped: 1, conflicts: 0, failed: 0, errors: 0, alreadyClaimed: 0 });
    expect(await runsOf(get().db)).toEqual([
      { flow: 'report', shop: null, input: {}, trigger: 'cron', count: 1 },
      { flow: 'report', shop: S1, input: { kind: 'one' }, trigger: 'cron', count: 1 },
      { flow: 'sync', shop: S1, input: {}, trigger: 'cron', count: 1 },
      { flow: 'sync', shop: S2, input: {}, trigger: 'cron', count: 2 },
      { flow: 'sync', shop: S3, input: {}, trigger: 'cron', count: 1 },
    ]);
    // S4 is listed but not installed: skipped, recorded and logged once.
    const skipped = (await ticksOf(get().db)).filter((r) => r.status !== 'dispatched');
    expect(skipped).toEqual([
      {
        shop: S4,
        cronKey: `sync:*/2 * * * *`,
        fireAt: '2030-01-01T10:00:00.000Z',
        status: 'skipped',
        reason: 'not_installed',
        hasRun: false,
      },
    ]);
    expect(logsMatching('no active installation')).toHaveLength(1);
    expect(logsMatching('no active installation')[0]).toMatchObject({ level: 40, shop: S4 });
    expect(logsMatching('cron fired')).toHaveLength(6);

    expect((await s.tick(at('10:00:59'))).dispatched).toBe(0); // same minute: nothing new
    const next = await s.tick(at('10:01:00'));
    expect(next.dispatched).toBe(4); // the global and the 'all' crons; */5 and */2 are not due
    installations.set(app, [S1, S2]); // S3 uninstalled: 'all' follows the installations
    expect((await s.tick(at('10:02:00'))).dispatched).toBe(1 + 2 + 1);
    expect(await runsOf(get().db, 'sync', S3)).toBe(2);
  });

  it('fires a global cron once per configured app, and the other modes per app installation', async () => {
    installations.set('second', [S1]);
    // a dispatcher of a two-app config (the dispatcher refuses a run under an app handle it does not know)
    const dispatch = createDispatcher({
      db: get().db,
      registry: t.runtime.registry,
      config: t.runtime.config,
      appHandles: [app, 'second'],
    });
    const s = scheduler(
      [
        { schedule: '0 * * * *', flow: 'report' },
        { schedule: '0 * * * *', flow: 'sync', shops: 'all' },
      ],
      { appHandles: [app, 'second'], dispatch },
    );
    expect((await s.tick(at('10:20:00'))).dispatched).toBe(2 + 3 + 1);
    const rows = await get().db.query<{ app_handle: string; shop: string | null; n: number }>(
      sql`select app_handle, shop, count(*)::int as n from runs group by app_handle, shop`,
    );
    const counts = Object.fromEntries(rows.map((r) => [`${r.app_handle} ${r.shop}`, r.n]));
    expect(counts).toEqual({
      [`${app} null`]: 1,
      [`${app} ${S1}`]: 1,
      [`${app} ${S2}`]: 1,
      [`${app} ${S3}`]: 1,
      'second null': 1,
      [`second ${S1}`]: 1,
    });
  });

  it('a per-shop override skips that shop; the app-level override skips a global cron; enabling again resumes', async () => {
    const crons: CronEntry[] = [
      { schedule: '* * * * *', flow: 'report' },
      { schedule: '* * * * *', flow: 'sync', shops: 'all' },
    ];
    const deps = { db: get().db, crons };
    await setCronEnabled(deps, { appHandle: app, shop: S1 }, 'sync:* * * * *', false);
    await setCronEnabled(deps, { appHandle: app, shop: null }, 'report:* * * * *', false);
    // The override of another shop or of a shop-level row does not stop the global cron, and vice versa.
    await setCronEnabled(deps, { appHandle: app, shop: S2 }, 'report:* * * * *', false);
    const s = scheduler(crons);
    expect(await s.tick(at('10:00:00'))).toMatchObject({ dispatched: 2, skipped: 2 });
    expect(await runsOf(get().db)).toEqual([
      { flow: 'sync', shop: S2, input: {}, trigger: 'cron', count: 1 },
      { flow: 'sync', shop: S3, input: {}, trigger: 'cron', count: 1 },
    ]);
    const skipped = (await ticksOf(get().db)).filter((r) => r.status === 'skipped');
    expect(skipped.map((r) => [r.shop, r.cronKey, r.reason])).toEqual([
      ['', 'report:* * * * *', 'disabled'],
      [S1, 'sync:* * * * *', 'disabled'],
    ]);
    await setCronEnabled(deps, { appHandle: app, shop: S1 }, 'sync:* * * * *', true);
    await setCronEnabled(deps, { appHandle: app, shop: null }, 'report:* * * * *', true);
    expect(await s.tick(at('10:01:00'))).toMatchObject({ dispatched: 4, skipped: 0 });
  });

  it('a concurrency conflict is recorded on the tick and logged, and the scheduler goes on', async () => {
    const active = await t.runtime.dispatch({ appHandle: app, shop: S1, flowName: 'limited', input: {}, trigger: 'api' });
    const s = scheduler([{ schedule: '* * * * *', flow: 'limited', shops: [S1, S2] }]);
    expect(await s.tick(at('10:00:00'))).toMatchObject({ dispatched: 1, conflicts: 1, errors: 0 });
    const conflict = (await ticksOf(get().db)).find((r) => r.status === 'conflict');
    expect(conflict).toMatchObject({ shop: S1, hasRun: true });
    const [row] = await get().db.query<{ run_id: string; reason: string }>(
      sql`select run_id, reason from cron_ticks where status = 'conflict'`,
    );
    expect(row!.run_id).toBe(active.runId);
    expect(row!.reason).toMatch(/already has 1 active run/);
    expect(logsMatching('cron tick not dispatched')).toHaveLength(1);
    expect(logsMatching('cron tick not dispatched')[0]).toMatchObject({ level: 40, shop: S1, existingRunId: active.runId });
    // Not fatal: the next minute both shops conflict (S2's first run is still pending), and nothing throws.
    expect(await s.tick(at('10:01:00'))).toMatchObject({ dispatched: 0, conflicts: 2, errors: 0 });
  });

  it('a tick the dispatch function refuses is recorded as failed and not retried', async () => {
    const s = scheduler([{ schedule: '* * * * *', flow: 'strict', input: { n: 'not a number' } as never }]);
    expect(await s.tick(at('10:00:00'))).toMatchObject({ failed: 1, dispatched: 0, errors: 0 });
    const [tick] = await ticksOf(get().db);
    expect(tick).toMatchObject({ status: 'failed', reason: 'Invalid input for flow "strict"', hasRun: false });
    expect(logsMatching('refused by dispatch')[0]).toMatchObject({ level: 50 });
    expect(await s.tick(at('10:00:20'))).toMatchObject({ failed: 0, dispatched: 0 });
  });

  it('claim and dispatch are one transaction: a failure after both writes rolls both back, and a later pass dispatches once', async () => {
    let crash = true;
    // The real dispatch function, failing inside its transaction after the run row and the tick claim were written.
    const crashing: DispatchFn = (request) =>
      t.runtime.dispatch({
        ...request,
        within: async (exec, runId) => {
          await request.within?.(exec, runId);
          if (crash) throw new Error('simulated crash before commit');
        },
      });
    const s = scheduler([{ schedule: '* * * * *', flow: 'sync', shops: S1 }], { dispatch: crashing });
    installations.set(app, [S1]);
    expect(await s.tick(at('10:00:05'))).toMatchObject({ errors: 1, dispatched: 0 });
    expect(await runsOf(get().db)).toEqual([]);
    expect(await ticksOf(get().db)).toEqual([]);
    crash = false;
    // The failed pass did not advance the scheduler, so its next pass retries the same fire time.
    expect(await s.tick(at('10:00:10'))).toMatchObject({ errors: 0, dispatched: 1 });
    expect(await s.tick(at('10:00:20'))).toMatchObject({ dispatched: 0, alreadyClaimed: 0 });
    expect(await runsOf(get().db, 'sync', S1)).toBe(1);
  });

  it('missed ticks: a fresh scheduler fires only the most recent fire time, and only within the catch-up window', async () => {
    const crons: CronEntry[] = [
      { schedule: '* * * * *', flow: 'sync' },
      { schedule: '0 3 * * *', flow: 'report' },
    ];
    // Down since 09:00 (say): at 10:07:30 the every-minute cron fires once, for 10:07; the 03:00 tick is 7 h old: not fired.
    const late = scheduler(crons);
    expect(await late.tick(at('10:07:30'))).toMatchObject({ dispatched: 1, due: [`${app} sync:* * * * * 2030-01-01T10:07:00.000Z`] });
    await get().reset();
    // Restarted at 03:40: the 03:00 tick is 40 min old (within the 1 h default): fired once, late.
    const restarted = scheduler(crons);
    expect(await restarted.tick(at('03:40:10'))).toMatchObject({ dispatched: 2 });
    expect(await runsOf(get().db, 'report', null)).toBe(1);
    // Another restart at 03:45 finds the 03:00 tick claimed: not again (the tick table makes catch-up idempotent).
    const again = scheduler(crons);
    expect(await again.tick(at('03:45:00'))).toMatchObject({ dispatched: 1, alreadyClaimed: 1 });
    expect(await runsOf(get().db, 'report', null)).toBe(1);
    // A running scheduler that falls 10 minutes behind fires the latest minute only, never the backlog.
    captured.lines.length = 0;
    expect(await again.tick(at('03:55:30'))).toMatchObject({ dispatched: 1 });
    expect(await runsOf(get().db, 'sync', null)).toBe(3);
    expect(logsMatching('was behind')).toHaveLength(1);
    // catchUpMs: 0 disables catch-up: a fresh scheduler only fires what falls due after its first pass.
    await get().reset();
    const strict = scheduler(crons, { catchUpMs: 0 });
    expect(await strict.tick(at('10:00:30'))).toMatchObject({ dispatched: 0, due: [] });
    expect(await strict.tick(at('10:01:00'))).toMatchObject({ dispatched: 1 });
  });

  it('a reload (a new scheduler started while the previous one runs on the same database) never catches up what the previous one passed', async () => {
    // `mercato dev` at 03:13 with a nightly `all` cron: the first pass sees no installation yet, so the 03:00 tick
    // dispatches nothing. Then the shops are installed and a file save at 03:14:43 reloads the app: the new version's
    // scheduler starts, then the old one stops. The reload must not fire the 03:00 tick for the shops now installed.
    const crons: CronEntry[] = [
      { schedule: '0 3 * * *', flow: 'report', shops: 'all' },
      { schedule: '* * * * *', flow: 'sync' },
    ];
    const clock = manualClock(at('03:13:00.500'));
    installations.set(app, []);
    const first = scheduler(crons, { clock });
    first.start();
    await first.tick(); // a pass at 03:13 (with the loop's own): sync 03:13 is caught up, report 03:00 has no shop
    expect(await runsOf(get().db)).toEqual([{ flow: 'sync', shop: null, input: {}, trigger: 'cron', count: 1 }]);
    installations.set(app, [S1, S2]);
    clock.set(at('03:14:43.818'));
    const reloaded = scheduler(crons, { clock });
    reloaded.start();
    await first.stop();
    await reloaded.tick();
    // Only what fell due after the previous version's last pass (sync 03:14); the 03:00 tick is not fired.
    expect(await runsOf(get().db)).toEqual([{ flow: 'sync', shop: null, input: {}, trigger: 'cron', count: 2 }]);
    expect(logsMatching('was behind')).toHaveLength(0);
    // It goes on like the scheduler it replaced: the next fire time fires once.
    clock.set(at('03:15:00.010'));
    expect(await reloaded.tick()).toMatchObject({ dispatched: 1, due: [`${app} sync:* * * * * 2030-01-01T03:15:00.000Z`] });
    await reloaded.stop();
    expect(await runsOf(get().db, 'sync', null)).toBe(3);
    // Once every scheduler of the process has stopped, one started later is a fresh start: it catches up (docs/crons.md).
    clock.set(at('03:40:00'));
    const restarted = scheduler(crons, { clock });
    restarted.start();
    await restarted.tick();
    await restarted.stop();
    expect(await runsOf(get().db, 'report', S1)).toBe(1);
    expect(await runsOf(get().db, 'report', S2)).toBe(1);
    expect(await runsOf(get().db, 'sync', null)).toBe(4);
  });

  it('a reload that adds a cron does not catch up its fire time the process had already passed', async () => {
    const clock = manualClock(at('03:14:43'));
    const before = scheduler([], { clock }); // the version before the save has no cron; its scheduler runs nonetheless
    before.start();
    const after = scheduler([{ schedule: '0 3 * * *', flow: 'report', shops: 'all' }], { clock });
    after.start();
    await before.stop();
    expect(await after.tick()).toMatchObject({ due: [], dispatched: 0 });
    clock.set(at('03:14:50'));
    expect(await after.tick()).toMatchObject({ due: [], dispatched: 0 });
    await after.stop();
    expect(await runsOf(get().db)).toEqual([]);
  });

  it('start() runs passes on the database clock until stop()', async () => {
    const s = scheduler([{ schedule: '* * * * * *', flow: 'sync' }], { maxSleepMs: 200 });
    s.start();
    const deadline = Date.now() + 5000;
    while ((await runsOf(get().db, 'sync', null)) < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await s.stop();
    const count = await runsOf(get().db, 'sync', null);
    expect(count).toBeGreaterThanOrEqual(2);
    await new Promise((r) => setTimeout(r, 1200));
    expect(await runsOf(get().db, 'sync', null)).toBe(count);
    // One tick per second at most: fire times are whole seconds and each was claimed once.
    const ticks = await ticksOf(get().db);
    expect(new Set(ticks.map((r) => r.fireAt)).size).toBe(ticks.length);
    expect(ticks.every((r) => r.fireAt.endsWith('.000Z') && r.status === 'dispatched')).toBe(true);
  });
});
