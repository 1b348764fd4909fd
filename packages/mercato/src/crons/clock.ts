/**
 * The scheduler's notion of "now". Production reads the database clock, so every replica agrees on the time whatever
 * its own clock says; tests use a manual clock and drive the scheduler with `tick(now)`, never waiting for real minutes.
 */
import type { Database } from '../db/engine.ts';
import { databaseNow } from '../db/sql.ts';

export interface Clock {
  now(): Promise<Date>;
}

/** `select now()` on the database (the time of the statement's transaction, identical for every replica). */
export function databaseClock(db: Pick<Database, 'query'>): Clock {
  return {
    now: () => databaseNow(db.query),
  };
}

/** A clock that only moves when told to (tests, simulations). */
export interface ManualClock extends Clock {
  set(time: Date | string): void;
  advance(ms: number): Date;
  current(): Date;
}

export function manualClock(start: Date | string): ManualClock {
  let time = new Date(start).getTime();
  return {
    now: async () => new Date(time),
    set(value) {
      time = new Date(value).getTime();
    },
    advance(ms) {
      time += ms;
      return new Date(time);
    },
    current: () => new Date(time),
  };
}
