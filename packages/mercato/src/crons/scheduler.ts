/**
 * The cron scheduler (docs/crons.md). Every scheduler process computes the due fire times from the schedules and the
 * database clock, and claims each (app, cron, shop, fire time) by inserting its tick row inside the dispatch function's
 * own transaction: the run and the claim commit together or not at all, and only one scheduler's insert can succeed, so
 * every tick is dispatched exactly once however many schedulers run.
 */
import { randomUUID } from 'node:crypto';
import type { CronEntry } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { RuntimeEvents } from '../events.ts';
import type { DispatchFn } from '../flows/dispatch.ts';
import { ATTR, ROOT_CONTEXT, type Tracing } from '../telemetry/tracing.ts';
import { DomainError } from '../errors.ts';
import { FlowConcurrencyError } from '../flows/errors.ts';
import type { Logger } from '../logger.ts';
import { type Clock, databaseClock } from './clock.ts';
import { type CronSpec, type Schedule, cronSpec, scheduleOf } from './schedule.ts';
import type { ShopDirectory } from './shops.ts';
import { type TickClaim, claimTick, claimedShops, disabledPairs, pairKey } from './store.ts';

export interface SchedulerDeps {
  db: Database;
  crons: readonly CronEntry[];
  /** The apps the crons fire for (every configured app). */
  appHandles: readonly string[];
  shops: ShopDirectory;
  /** The one dispatch function (runtime.dispatch); the claim is made through its `within` hook. */
  dispatch: DispatchFn;
  logger: Logger;
  /** Default: the database clock. */
  clock?: Clock;
  /** Told about every tick dispatched (runtime.events). */
  events?: RuntimeEvents;
  /** Each fire starts a trace: a `cron <key>` root span around its dispatch (docs/tracing.md). */
  tracing?: Tracing;
}

export interface SchedulerOptions {
  /** Names this scheduler in tick rows and logs. Default: a random id. */
  id?: string;
  /** A fire time missed while no scheduler ran is fired (once, the most recent) if it is at most this old. Default 1 h. */
  catchUpMs?: number;
  /** Longest sleep between two passes (bounds the drift of local timers against the database clock). Default 30 s. */
  maxSleepMs?: number;
  /** Claims processed in parallel within a pass. Default 4 on PostgreSQL, 1 on PGlite. */
  concurrency?: number;
}

export interface TickSummary {
  now: string;
  /** Fire times considered in this pass: `${appHandle} ${cronKey} ${fireAt}`. */
  due: string[];
  dispatched: number;
  conflicts: number;
  skipped: number;
  failed: number;
  /** Claims another scheduler (or an earlier pass) made first. */
  alreadyClaimed: number;
  /** Of those, claims lost at the insert itself, to a scheduler claiming at the same moment. */
  lostRaces: number;
  /** Claims that hit an unexpected error (rolled back; the next pass tries again). */
  errors: number;
}

export interface CronScheduler {
  readonly id: string;
  /** One pass at `now` (default: the clock). Passes of one scheduler never overlap. */
  tick(now?: Date): Promise<TickSummary>;
  /** Run passes at every fire time until stop(). */
  start(): void;
  stop(): Promise<void>;
}

interface Target {
  appHandle: string;
  spec: CronSpec;
  fireAt: Date;
  /** null for a global cron. */
  shop: string | null;
  skip: 'disabled' | 'not_installed' | null;
}

type Outcome = 'dispatched' | 'conflicts' | 'skipped' | 'failed' | 'lostRaces';

const HOUR = 3_600_000;

/** Thrown inside the dispatch transaction when another scheduler claimed the tick: rolls the run back. */
class TickTaken extends Error {}
/** A running scheduler still fires a tick this late (or the catch-up window, if longer). */
const RUNNING_GRACE_MS = 5 * 60_000;

/**
 * The schedulers this process is running on one database, and the last pass any of them completed: what they have
 * already decided. `mercato dev` starts the new version's scheduler on every reload (before stopping the old one): a
 * scheduler started while another is running here is no fresh start after downtime, so it takes this over instead of
 * catching up fire times the process already passed (docs/crons.md, "Ticks missed while no scheduler ran").
 */
interface ProcessSchedule {
  running: Set<string>;
  /** Database clock of the latest completed pass of a started scheduler; undefined while none completed one. */
  lastPass?: number;
}
const processSchedules = new WeakMap<Database, ProcessSchedule>();

export function createScheduler(deps: SchedulerDeps, options: SchedulerOptions = {}): CronScheduler {
  const id = options.id ?? `scheduler-${randomUUID().slice(0, 8)}`;
  const catchUpMs = options.catchUpMs ?? HOUR;
  const maxSleepMs = options.maxSleepMs ?? 30_000;
  const concurrency = options.concurrency ?? (deps.db.kind === 'postgres' ? 4 : 1);
  const clock = deps.clock ?? databaseClock(deps.db);
  const log = deps.logger.child({ scheduler: id });
  const crons = deps.crons.map((entry) => ({ spec: cronSpec(entry), schedule: scheduleOf(cronSpec(entry)) }));
  let previous: number | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let looping: Promise<void> = Promise.resolve();
  let running = false;
  let failures = 0;
  /** The process's schedule on this database while started. */
  let joined: ProcessSchedule | undefined;
  /** Started while another scheduler of this process was running on the database: the first pass continues from it. */
  let takesOver = false;

  /** On start(): take over from the schedulers of this process still running on the database, if any. */
  function join(): void {
    let shared = processSchedules.get(deps.db);
    takesOver = false;
    if (shared && shared.running.size > 0 && previous === undefined) {
      // Continue from their last pass (what falls due after it fires, earlier fire times were theirs to decide); if
      // none completed a pass yet, their first pass does the catch-up, so this one starts at its own first pass.
      takesOver = true;
      log.debug({ after: shared.lastPass === undefined ? null : new Date(shared.lastPass).toISOString() }, 'cron scheduler takes over');
    }
    if (!shared || shared.running.size === 0) processSchedules.set(deps.db, (shared = { running: new Set() }));
    shared.running.add(id);
    joined = shared;
  }

  function leave(): void {
    joined?.running.delete(id);
    if (joined && joined.running.size === 0 && processSchedules.get(deps.db) === joined) processSchedules.delete(deps.db);
    joined = undefined;
  }

  function dueFireTimes(now: Date): Array<{ spec: CronSpec; schedule: Schedule; fireAt: Date }> {
    const handover = takesOver && previous === undefined;
    takesOver = false;
    if (handover) previous = joined?.lastPass ?? now.getTime();
    // Fire times after the previous pass (this scheduler's, or on a reload the last pass of the one it takes over), and
    // of those only the most recent: a scheduler that was behind or down never replays a backlog. How late a tick may
    // still fire: the catch-up window on a fresh start (ticks missed while no scheduler ran here), at least
    // RUNNING_GRACE_MS once running (slow passes, pauses).
    const grace = previous === undefined ? catchUpMs : Math.max(catchUpMs, RUNNING_GRACE_MS);
    const floor = Math.max(previous ?? -Infinity, now.getTime() - grace);
    const due = [];
    for (const { spec, schedule } of crons) {
      const fireAt = schedule.latestAtOrBefore(now);
      if (!fireAt || fireAt.getTime() <= floor) continue;
      const earlier = schedule.nextAfter(new Date(floor));
      if (previous !== undefined && !handover && earlier && earlier < fireAt) {
        log.info(
          { cron: spec.key, fireAt: fireAt.toISOString() },
          'cron scheduler was behind: only the most recent due fire time is considered',
        );
      }
      due.push({ spec, schedule, fireAt });
    }
    return due;
  }

  /** The (shop, fire time) claims to attempt, and how many were already claimed (by any scheduler). */
  async function targetsOf(appHandle: string, due: ReturnType<typeof dueFireTimes>): Promise<{ targets: Target[]; claimedBefore: number }> {
    const disabled = await disabledPairs(
      deps.db,
      appHandle,
      due.map((d) => d.spec.key),
    );
    let allShops: string[] | undefined;
    const targets: Target[] = [];
    let claimedBefore = 0;
    for (const { spec, fireAt } of due) {
      const claimed = await claimedShops(deps.db, appHandle, spec.key, fireAt);
      const add = (shop: string | null, installed: boolean) => {
        if (claimed.has(shop)) {
          claimedBefore++;
          return;
        }
        const skip = !installed ? 'not_installed' : disabled.has(pairKey(shop, spec.key)) ? 'disabled' : null;
        targets.push({ appHandle, spec, fireAt, shop, skip });
      };
      if (spec.shops === 'global') add(null, true);
      else if (spec.shops === 'all') for (const shop of (allShops ??= await deps.shops.activeShops(appHandle))) add(shop, true);
      else
        for (const shop of typeof spec.shops === 'string' ? [spec.shops] : spec.shops)
          add(shop, await deps.shops.isActive(appHandle, shop));
    }
    return { targets, claimedBefore };
  }

  async function fire(target: Target, now: Date): Promise<Outcome> {
    const claim: TickClaim = {
      appHandle: target.appHandle,
      shop: target.shop,
      cronKey: target.spec.key,
      fireAt: target.fireAt,
      schedulerId: id,
      claimedAt: now,
    };
    const where = { appHandle: target.appHandle, shop: target.shop, cron: target.spec.key, fireAt: target.fireAt.toISOString() };
    if (target.skip) {
      if (!(await claimTick(deps.db, claim, 'skipped', target.skip))) return 'lostRaces';
      if (target.skip === 'not_installed')
        log.warn(where, 'cron skipped: the shop listed in its `shops` has no active installation of the app');
      else log.debug(where, 'cron skipped: disabled for this shop');
      return 'skipped';
    }
    const lateMs = now.getTime() - target.fireAt.getTime();
    try {
      const dispatch: DispatchFn = deps.tracing
        ? (request) =>
            deps.tracing!.span(
              `cron ${target.spec.key}`,
              {
                parent: ROOT_CONTEXT,
                attributes: {
                  'mercato.cron': target.spec.key,
                  [ATTR.app]: target.appHandle,
                  ...(target.shop ? { [ATTR.shop]: target.shop } : {}),
                  'mercato.cron.fire_at': target.fireAt.toISOString(),
                },
              },
              () => deps.dispatch(request),
            )
        : deps.dispatch;
      const { runId } = await dispatch({
        appHandle: target.appHandle,
        shop: target.shop,
        flowName: target.spec.flow,
        input: target.spec.input,
        trigger: 'cron',
        // Inside the dispatch transaction, right after the run row: claim the tick. If another scheduler holds it, the
        // insert waits for that one's transaction and then finds the row: throwing rolls this run back.
        within: async (exec, runId) => {
          if (!(await claimTick({ query: exec }, claim, 'dispatched', null, runId))) throw new TickTaken();
        },
      });
      log.info({ ...where, runId, lateMs }, 'cron fired');
      deps.events?.emit('cron.fired', {
        cron: target.spec.key,
        flow: target.spec.flow,
        app: target.appHandle,
        shop: where.shop,
        scheduledAt: target.fireAt,
        runId,
        lateMs,
      });
      return 'dispatched';
    } catch (error) {
      if (error instanceof TickTaken) return 'lostRaces';
      // Refused before any write (concurrency limit reached; input rejected): the outcome is claimed on its own.
      if (error instanceof FlowConcurrencyError) {
        const existing = error.existingRunId;
        if (!(await claimTick(deps.db, claim, 'conflict', error.message, existing))) return 'lostRaces';
        log.warn({ ...where, existingRunId: existing }, `cron tick not dispatched: ${error.message}`);
        return 'conflicts';
      }
      if (error instanceof DomainError) {
        if (!(await claimTick(deps.db, claim, 'failed', error.message))) return 'lostRaces';
        log.error({ ...where, error: error.message }, 'cron tick refused by dispatch');
        return 'failed';
      }
      throw error; // unexpected: nothing was committed, the next pass (of any scheduler) tries again
    }
  }

  async function pass(now: Date): Promise<TickSummary> {
    const summary: TickSummary = {
      now: now.toISOString(),
      due: [],
      dispatched: 0,
      conflicts: 0,
      skipped: 0,
      failed: 0,
      alreadyClaimed: 0,
      lostRaces: 0,
      errors: 0,
    };
    const due = dueFireTimes(now);
    const targets: Target[] = [];
    for (const appHandle of deps.appHandles) {
      for (const d of due) summary.due.push(`${appHandle} ${d.spec.key} ${d.fireAt.toISOString()}`);
      if (due.length === 0) continue;
      const found = await targetsOf(appHandle, due);
      targets.push(...found.targets);
      summary.alreadyClaimed += found.claimedBefore;
    }
    shuffle(targets); // replicas arriving together spread over different claims instead of queueing on the same rows
    let next = 0;
    const worker = async () => {
      while (next < targets.length) {
        const target = targets[next++]!;
        try {
          const outcome = await fire(target, now);
          summary[outcome]++;
          if (outcome === 'lostRaces') summary.alreadyClaimed++;
        } catch (error) {
          summary.errors++;
          log.error(
            { err: error, cron: target.spec.key, shop: target.shop, fireAt: target.fireAt.toISOString() },
            'cron tick failed; the next pass retries it',
          );
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, targets.length) }, worker));
    if (summary.errors === 0) {
      previous = now.getTime();
      if (joined) joined.lastPass = Math.max(joined.lastPass ?? -Infinity, previous);
    }
    return summary;
  }

  const tick = (now?: Date): Promise<TickSummary> => {
    const run = chain.then(async () => pass(now ?? (await clock.now())));
    chain = run.catch(() => undefined);
    return run;
  };

  async function loop() {
    if (!running) return;
    let delay = maxSleepMs;
    try {
      const now = await clock.now();
      const readAt = Date.now();
      if (!running) return;
      const summary = await tick(now);
      failures = summary.errors > 0 ? failures + 1 : 0;
      // Sleep until the next fire time of any cron (measured on the database clock, minus the time this pass took).
      const nexts = crons.map((c) => c.schedule.nextAfter(now)?.getTime()).filter((t): t is number => t !== undefined);
      if (nexts.length > 0) delay = Math.min(Math.min(...nexts) - now.getTime() - (Date.now() - readAt) + 5, maxSleepMs);
    } catch (error) {
      failures++;
      log.error({ err: error }, 'cron scheduler pass failed');
    }
    if (failures > 0) delay = Math.min(500 * 2 ** failures, maxSleepMs);
    if (running) timer = setTimeout(() => (looping = loop()), Math.max(delay, 0));
  }

  return {
    id,
    tick,
    start() {
      if (running) return;
      running = true;
      join(); // even without crons: a reload that adds one must not catch up a fire time this process already passed
      if (crons.length === 0) return;
      log.debug({ crons: crons.length, catchUpMs }, 'cron scheduler started');
      looping = loop();
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      await looping;
      await chain;
      if (!running) leave(); // unless started again meanwhile
    },
  };
}

function shuffle<T>(items: T[]): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
}
