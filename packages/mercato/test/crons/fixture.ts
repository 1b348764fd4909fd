/** The app, installations and database probes shared by the cron tests. */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import type { ShopDirectory } from '../../src/crons/index.ts';
import type { Database } from '../../src/db/engine.ts';
import { OTHER_SHOP, SHOP } from '../helpers/runtime.ts';

export const S1 = SHOP;
export const S2 = OTHER_SHOP;
export const S3 = 'third-shop.myshopify.com';
/** Listed by crons, never installed. */
export const S4 = 'not-installed.myshopify.com';

const app = defineApp();
export const instance = app.defineConfig({
  flows: {
    report: app.defineFlow({
      name: 'report',
      input: z.object({ kind: z.string().default('daily') }),
      concurrency: null,
      run: async () => 'ok',
    }),
    sync: app.defineFlow({ name: 'sync', input: z.object({}), concurrency: null, run: async () => 'ok' }),
    limited: app.defineFlow({ name: 'limited', input: z.object({}), concurrency: 1, run: async () => 'ok' }),
    strict: app.defineFlow({ name: 'strict', input: z.object({ n: z.number() }), concurrency: null, run: async () => 'ok' }),
  },
});

/** Active installations per app handle: our ShopDirectory over an in-memory table the tests change. */
export class Installations implements ShopDirectory {
  private readonly byApp = new Map<string, Set<string>>();
  set(appHandle: string, shops: readonly string[]): void {
    this.byApp.set(appHandle, new Set(shops));
  }
  async activeShops(appHandle: string): Promise<string[]> {
    return [...(this.byApp.get(appHandle) ?? [])];
  }
  async isActive(appHandle: string, shop: string): Promise<boolean> {
    return this.byApp.get(appHandle)?.has(shop) ?? false;
  }
}

export interface RunGroup {
  flow: string;
  shop: string | null;
  input: unknown;
  trigger: string;
  count: number;
}

/** Runs grouped by flow, shop, input and trigger; or, given a flow and shop, how many runs that pair has. */
export async function runsOf(db: Database): Promise<RunGroup[]>;
export async function runsOf(db: Database, flow: string, shop: string | null): Promise<number>;
export async function runsOf(db: Database, flow?: string, shop?: string | null): Promise<RunGroup[] | number> {
  if (flow !== undefined) {
    const [row] = await db.query<{ n: number }>(
      sql`select count(*)::int as n from runs where flow_name = ${flow} and shop is not distinct from ${shop ?? null}`,
    );
    return row!.n;
  }
  return db.query<RunGroup>(sql`
    select flow_name as flow, shop, input, trigger, count(*)::int as count from runs
    group by flow_name, shop, input, trigger order by flow_name, shop nulls first, input::text, trigger`);
}

export interface TickRow {
  shop: string;
  cronKey: string;
  fireAt: string;
  status: string;
  reason: string | null;
  hasRun: boolean;
}

export async function ticksOf(db: Database): Promise<TickRow[]> {
  const rows = await db.query<TickRow>(sql`
    select shop, cron_key as "cronKey", to_json(fire_at) #>> '{}' as "fireAt", status, reason, run_id is not null as "hasRun"
    from cron_ticks order by fire_at, shop, cron_key`);
  return rows.map((r) => ({ ...r, fireAt: new Date(r.fireAt).toISOString() }));
}
