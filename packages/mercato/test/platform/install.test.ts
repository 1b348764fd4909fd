/**
 * Installation by token exchange against the simulator over real HTTP: once under concurrency (in a process and across
 * processes on PostgreSQL), no transaction open during the exchange, encrypted at rest.
 */
import { sql } from 'drizzle-orm';
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import type { Database } from '../../src/db/engine.ts';
import { getAccessToken, installationOwner, listActiveInstallations, platformBaseUrl } from '../../src/platform/index.ts';
import { OTHER_SHOP, SHOP, TEST_API_KEY, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { ENCRYPTION_KEY, installationRow, startSim } from './helpers.ts';

const app = defineApp();
const instance = app.defineConfig({ flows: { noop: app.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) } });

it('PLATFORM_ORIGIN sends every shop to one origin; unset, each shop is reached on its own domain', () => {
  expect(platformBaseUrl(SHOP, 'http://127.0.0.1:4000')).toBe('http://127.0.0.1:4000');
  expect(platformBaseUrl(OTHER_SHOP, 'http://127.0.0.1:4000/')).toBe('http://127.0.0.1:4000');
  expect(platformBaseUrl(SHOP, undefined)).toBe(`https://${SHOP}`);
});

describeEngines('installations', (get, kind) => {
  let sim: PlatformSim;
  let t: TestRuntime;

  beforeAll(async () => {
    sim = await startSim();
    t = await startTestRuntime(instance, get().db, { http: true, env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY } });
  });
  afterAll(async () => {
    await t?.close();
    await sim?.close();
  });

  it('10 concurrent first requests of a shop install it with exactly one token exchange', async () => {
    const responses = await Promise.all(Array.from({ length: 10 }, () => t.api('/api/pages')));
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    const exchanges = sim.state.tokenExchanges.filter((e) => e.shop === SHOP);
    expect(exchanges).toHaveLength(1);
    expect(exchanges[0]).toMatchObject({ status: 200, apiKey: TEST_API_KEY });
    expect((await installationRow(get().db, SHOP))?.status).toBe('active');
    // later requests find the installation and exchange nothing more
    await t.api('/api/flows');
    expect(sim.state.tokenExchanges.filter((e) => e.shop === SHOP)).toHaveLength(1);
  });

  it('stores the access token only encrypted, bound to its installation row', async () => {
    const token = sim.state.installation(TEST_API_KEY, SHOP)!.accessToken!;
    expect(token).toMatch(/^shpat_/);
    const row = await installationRow(get().db, SHOP);
    expect(row!.row_text).not.toContain(token);
    expect(row!.row_text).not.toContain(token.slice(6));
    expect(row!.access_token).toMatchObject({ v: 1, kid: expect.any(String), ct: expect.any(String) });
    expect(await getAccessToken(get().db, t.runtime.secrets, 'default', SHOP)).toBe(token);
    // copied to another tenant's owner, it does not decrypt
    expect(() => t.runtime.secrets.decrypt(row!.access_token as any, installationOwner('default', OTHER_SHOP))).toThrow();
  });

  it('lists the active installations of an app', async () => {
    await t.api('/api/pages', { shop: OTHER_SHOP });
    const active = await listActiveInstallations(get().db, 'default');
    expect(active.map((i) => i.shop)).toEqual([SHOP, OTHER_SHOP]);
    expect(active[0]).toMatchObject({ appHandle: 'default', status: 'active', scopes: 'read_products', uninstalledAt: null });
    expect(await listActiveInstallations(get().db, 'another-app')).toEqual([]);
  });

  it('a refused exchange does not fail the admin request and is not retried at once', async () => {
    const ghost = 'ghost.myshopify.com'; // unknown to the simulator: refused as invalid_subject_token
    const before = sim.state.tokenExchanges.length;
    expect((await t.api('/api/pages', { shop: ghost })).status).toBe(200);
    expect((await t.api('/api/pages', { shop: ghost })).status).toBe(200);
    const refusals = sim.state.tokenExchanges.slice(before);
    expect(refusals).toEqual([expect.objectContaining({ status: 400, error: 'invalid_subject_token' })]);
    expect(await installationRow(get().db, ghost)).toBeUndefined();
  });

  it('holds no transaction open while the token exchange is under way', async () => {
    const shop = 'shop-three.myshopify.com';
    const hold = sim.hold('token');
    try {
      const pending = t.api('/api/pages', { shop });
      await expect.poll(() => hold.arrived, { timeout: 10_000, interval: 20 }).toBeGreaterThan(0);
      // the exchange is waiting on the platform: on PostgreSQL no connection may sit in a transaction meanwhile; on
      // PGlite (one session) a query waits behind an open transaction, so it must be answered while the exchange is held
      if (kind === 'postgres') expect(await openTransactions(get().db)).toBe(0);
      else expect(await answeredWithin(get().db, 2000)).toBe(true);
      hold.release();
      expect((await pending).status).toBe(200);
    } finally {
      hold.release();
    }
    expect((await installationRow(get().db, shop))?.status).toBe('active');
    expect(sim.state.tokenExchanges.filter((e) => e.shop === shop)).toEqual([expect.objectContaining({ status: 200 })]);
  });
});

/** PGlite: whether a query is answered within `ms` (it is not while a transaction holds the only session). */
async function answeredWithin(db: Database, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([db.query(sql`select 1`).then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** PostgreSQL: the other connections of this database sitting in a transaction. */
async function openTransactions(db: Database): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and state like 'idle in transaction%'`,
  );
  return row!.n;
}
