/**
 * Crons: the scheduler that `mercato dev` and `mercato start` run (never `mercato worker`), the per-shop overrides,
 * and /api/crons. See docs/crons.md.
 */

export { cronsApi, parseToggleBody } from './router.ts';
export { type CronListing, type CronsDeps, listCrons, setCronEnabled } from './service.ts';
export { type CronScheduler, type SchedulerDeps, type SchedulerOptions, type TickSummary, createScheduler } from './scheduler.ts';
export { type ShopDirectory, shopDirectoryFrom, staticShopDirectory } from './shops.ts';
export { type Clock, type ManualClock, databaseClock, manualClock } from './clock.ts';
export { describeSchedule } from './describe.ts';
