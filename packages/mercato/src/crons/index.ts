/**
 * Crons: the scheduler that `mercato dev` and `mercato start` run (never `mercato worker`), the per-shop overrides,
 * and /api/crons. See docs/crons.md.
 */
import type { Runtime } from '../runtime.ts';
import { type CronScheduler, type SchedulerOptions, createScheduler } from './scheduler.ts';
import type { ShopDirectory } from './shops.ts';

export { cronsApi, parseToggleBody } from './router.ts';
export { type CronListing, type CronsDeps, listCrons, setCronEnabled } from './service.ts';
export { type CronScheduler, type SchedulerDeps, type SchedulerOptions, type TickSummary, createScheduler } from './scheduler.ts';
export { type ShopDirectory, shopDirectoryFrom, staticShopDirectory } from './shops.ts';
export { type Clock, type ManualClock, databaseClock, manualClock } from './clock.ts';
export { describeSchedule } from './describe.ts';

/** Starts the scheduler of a runtime (stopped by runtime.close()); ticks dispatch through runtime.dispatch. */
export function startCronScheduler(runtime: Runtime, options: SchedulerOptions & { shops: ShopDirectory }): CronScheduler {
  const { shops, ...schedulerOptions } = options;
  const scheduler = createScheduler(
    {
      db: runtime.db,
      crons: runtime.config.crons,
      appHandles: runtime.platform.apps.map((app) => app.handle),
      shops,
      dispatch: runtime.dispatch,
      logger: runtime.logger.child({ component: 'crons' }),
      events: runtime.events,
    },
    schedulerOptions,
  );
  scheduler.start();
  runtime.onClose(() => scheduler.stop());
  return scheduler;
}
