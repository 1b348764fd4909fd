/** Cron entries as the scheduler and the API see them: key, display name, time zone, shop targeting and fire times. */
import { Cron } from 'croner';
import type { CronEntry, CronShops } from '../app/types.ts';
import { cronKey } from '../flows/registry.ts';

export interface CronSpec {
  /** `${flow}:${schedule}`: the list key and the override key. */
  key: string;
  /** `name`, else the flow name. */
  name: string;
  flow: string;
  schedule: string;
  /** IANA time zone the schedule is read in (default UTC). */
  timezone: string;
  shops: CronShops;
  input: unknown;
}

export function cronSpec(entry: CronEntry): CronSpec {
  return {
    key: cronKey(entry),
    name: entry.name ?? entry.flow,
    flow: entry.flow,
    schedule: entry.schedule,
    timezone: entry.timezone ?? 'UTC',
    shops: entry.shops ?? 'global',
    input: entry.input ?? {},
  };
}

/** The same croner options as config validation (app/validate/crons.ts), so both read an expression alike. */
function pattern(spec: Pick<CronSpec, 'schedule' | 'timezone'>): Cron {
  return new Cron(spec.schedule, { paused: true, timezone: spec.timezone, mode: '5-or-6-parts' });
}

/** A reusable schedule: the most recent fire time at or before a moment, and the next one after it. */
export interface Schedule {
  latestAtOrBefore(now: Date): Date | null;
  nextAfter(now: Date): Date | null;
}

export function scheduleOf(spec: Pick<CronSpec, 'schedule' | 'timezone'>): Schedule {
  const job = pattern(spec);
  return {
    // croner's previousRuns is strictly before its reference, at second precision: one millisecond later includes `now`.
    latestAtOrBefore: (now) => job.previousRuns(1, new Date(now.getTime() + 1))[0] ?? null,
    nextAfter: (now) => job.nextRun(now),
  };
}

/** Whether a cron runs for this shop at all (config only; installation state is the scheduler's business). */
export function targetsShop(shops: CronShops, shop: string): boolean {
  if (shops === 'global') return false;
  if (shops === 'all') return true;
  if (typeof shops === 'string') return shops === shop;
  return shops.includes(shop);
}
