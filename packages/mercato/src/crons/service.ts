/**
 * What other capabilities call (the admin API, and MCP's service.crons.list / service.crons.set_enabled through mcp/wiring.ts):
 * listing the configured crons with a tenant's enabled state, and storing a tenant's override.
 */
import type { Cron } from '../api/types.ts';
import type { CronEntry } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { Tenant } from '../db/sql.ts';
import { NotFoundError } from '../errors.ts';
import { type Clock, databaseClock } from './clock.ts';
import { describeSchedule } from './describe.ts';
import { cronSpec, scheduleOf, targetsShop } from './schedule.ts';
import { latestTicks, overridesOf, upsertOverride } from './store.ts';

export interface CronsDeps {
  db: Database;
  crons: readonly CronEntry[];
  /** Default: the database clock. */
  clock?: Clock;
}

/** A configured cron with the tenant's state (the admin API contract, src/api/types.ts). */
export type CronListing = Cron;

/** The crons with the tenant's state: a shop of an app, or `shop: null` for the app-level state that governs global crons. */
export async function listCrons(deps: CronsDeps, tenant: Tenant): Promise<CronListing[]> {
  const now = await (deps.clock ?? databaseClock(deps.db)).now();
  const overrides = await overridesOf(deps.db, tenant);
  const ticks = await latestTicks(deps.db, tenant);
  return deps.crons.map((entry) => {
    const spec = cronSpec(entry);
    const tick = ticks.get(spec.key);
    return {
      key: spec.key,
      name: spec.name,
      flow: spec.flow,
      schedule: spec.schedule,
      description: describeSchedule(spec.schedule),
      timezone: spec.timezone,
      nextRunAt: scheduleOf(spec).nextAfter(now)?.toISOString() ?? null,
      shops: spec.shops,
      input: spec.input,
      enabled: overrides.get(spec.key) ?? true,
      targeted: tenant.shop === null ? spec.shops === 'global' : targetsShop(spec.shops, tenant.shop),
      lastTick: tick ? { ...tick, fireAt: new Date(tick.fireAt).toISOString() } : null,
    };
  });
}

/** Stores the tenant's override (never the config). An unknown key is a NotFoundError (404). */
export async function setCronEnabled(
  deps: Pick<CronsDeps, 'db' | 'crons'>,
  tenant: Tenant,
  key: string,
  enabled: boolean,
): Promise<{ ok: true; key: string; enabled: boolean }> {
  if (!deps.crons.some((entry) => cronSpec(entry).key === key)) throw new NotFoundError(`Cron "${key}" is not configured`);
  await upsertOverride(deps.db, tenant, key, enabled);
  return { ok: true, key, enabled };
}
