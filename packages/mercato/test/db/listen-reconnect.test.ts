/**
 * Finding F1 of the reliability probe: after the database connection drops (restart, failover, network), every process
 * must hear notifications again without being restarted. The connections go through a loopback TCP proxy whose `cut()`
 * resets every socket and refuses new ones: a real network failure, seen by the real `pg` driver. PostgreSQL only
 * (PGlite has no connection to lose). The chaos suite (test/chaos/) shows the same with a real `pg_ctl restart`.
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineApp } from '../../src/app/app.ts';
import { type Database, openDatabase } from '../../src/db/engine.ts';
import { type TestDatabase, createTestDatabase } from '../../src/db/testing.ts';
import { RUNS_CHANNEL } from '../../src/flows/store/index.ts';
import { authCacheFor } from '../../src/mcp/auth-cache.ts';
import { capturingLogger } from '../kit/index.ts';
import { type TcpProxy, startTcpProxy } from '../kit/tcp-proxy.ts';
import { SHOP, startTestRuntime } from '../helpers/runtime.ts';

describe.skipIf(!process.env.DATABASE_URL)('LISTEN after the connection drops [postgres]', () => {
  let test: TestDatabase;
  let proxy: TcpProxy;
  let db: Database;
  const captured = capturingLogger('info');

  beforeAll(async () => {
    test = await createTestDatabase('postgres');
    const target = new URL(test.url!);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    db = await openDatabase({
      url: proxy.urlFor(test.url!),
      poolSize: 4,
      log: captured.logger,
      listenBackoffMs: { initial: 50, max: 400 },
    });
  });
  afterAll(async () => {
    await db?.close();
    await proxy?.close();
    await test?.drop();
  });

  it('reconnects with backoff, listens on every channel again, tells its listeners and logs the loss and the return', async () => {
    const got: Record<string, string[]> = { a: [], b: [] };
    const events: string[] = [];
    await db.listen('mercato_f1_a', (p) => got.a.push(p), {
      onLost: () => events.push('lost a'),
      onRestored: () => events.push('restored a'),
    });
    await db.listen('mercato_f1_b', (p) => got.b.push(p), {
      onLost: () => events.push('lost b'),
      onRestored: () => events.push('restored b'),
    });
    await test.db.notify('mercato_f1_a', 'before');
    await expect.poll(() => got.a, { timeout: 3000 }).toEqual(['before']);

    proxy.cut();
    await expect.poll(() => events, { timeout: 3000 }).toEqual(['lost a', 'lost b']);
    // while the network is down the engine keeps trying (backoff, capped at 400 ms here)
    const acceptedWhileDown = proxy.accepted;
    await new Promise((r) => setTimeout(r, 800));
    expect(events).toEqual(['lost a', 'lost b']);
    proxy.resume();
    await expect.poll(() => events.slice(2).sort(), { timeout: 5000 }).toEqual(['restored a', 'restored b']);
    expect(proxy.accepted).toBeGreaterThan(acceptedWhileDown);

    // notifications sent on the shared server reach both channels again, without a new listen() call
    await test.db.notify('mercato_f1_a', 'after');
    await test.db.notify('mercato_f1_b', 'after');
    await expect.poll(() => [got.a, got.b], { timeout: 3000 }).toEqual([['before', 'after'], ['after']]);

    const messages = captured.lines.map((l) => l.msg);
    expect(messages.filter((m) => m.startsWith('database LISTEN connection lost'))).toHaveLength(1);
    const restored = captured.lines.filter((l) => String(l.msg).startsWith('database LISTEN connection restored'));
    expect(restored).toHaveLength(1);
    expect(restored[0]).toMatchObject({ level: 30, channels: expect.arrayContaining(['mercato_f1_a', 'mercato_f1_b']) });
    expect(restored[0].downMs).toBeGreaterThanOrEqual(800);
  });

  it('a worker hears new runs at once again after the drop, and polls once when the connection is back', async () => {
    const app = defineApp();
    const instance = app.defineConfig({
      flows: { hello: app.defineFlow({ name: 'hello', input: z.object({}), run: async () => 'hi' }) },
      // a long poll backstop: a run started within a second was woken by NOTIFY (or the poll after the return)
      worker: { pollIntervalMs: 1000, pollBackoffCoefficient: 10, pollMaxIntervalMs: 30_000 },
    });
    // the runtime's own database goes through the proxy too
    const runtimeDb = await openDatabase({ url: proxy.urlFor(test.url!), poolSize: 4, listenBackoffMs: { initial: 50, max: 400 } });
    const t = await startTestRuntime(instance, runtimeDb, { worker: { concurrency: 2 } });
    const status = async (id: string) =>
      (await test.db.query<{ status: string }>(sql`select status from runs where id = ${id}`))[0]?.status;
    const completed = (id: string) => expect.poll(() => status(id), { timeout: 10_000, interval: 50 }).toBe('completed');
    const dispatch = () => t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName: 'hello', input: {}, trigger: 'api' });
    try {
      const worker = t.worker!;
      const first = await dispatch();
      await completed(first.runId);
      await new Promise((r) => setTimeout(r, 3000)); // idle: the poll backstop is now far away (backoff)

      proxy.cut();
      await new Promise((r) => setTimeout(r, 200));
      // a run dispatched by another process while this worker cannot hear
      const other = await openDatabase({ url: test.url!, poolSize: 1 });
      const [{ id: during }] = await other.query<{ id: string }>(
        sql`insert into runs (app_handle, shop, flow_name, trigger, input, retry_policy)
            values ('default', ${SHOP}, 'hello', 'api', '{}', '{"maxAttempts":1}') returning id`,
      );
      await other.notify(RUNS_CHANNEL);
      await other.close();
      proxy.resume();
      // the worker polls once when its LISTEN connection is back: the run starts within about a second, not at the
      // next backstop poll (up to 30 s here)
      await expect.poll(() => status(during), { timeout: 4000, interval: 50 }).toBe('completed');

      // and NOTIFY wakes it again for the next dispatch
      const wakeupsBefore = worker.stats.wakeups;
      const after = await dispatch();
      await expect.poll(() => status(after.runId), { timeout: 2000, interval: 20 }).toBe('completed');
      expect(worker.stats.wakeups).toBeGreaterThan(wakeupsBefore);
    } finally {
      await t.close();
      await runtimeDb.close();
    }
  });

  it('a transaction cut off mid-way rejects to its caller (no uncaught error) and the pool lends healthy clients afterwards', async () => {
    // pool of 2: a client leaked by a failed BEGIN or COMMIT would exhaust it within a few rounds
    const small = await openDatabase({ url: proxy.urlFor(test.url!), poolSize: 2 });
    try {
      for (let round = 0; round < 4; round++) {
        let entered!: () => void;
        const inside = new Promise<void>((r) => (entered = r));
        const held = small.transaction(async (exec) => {
          await exec(sql`select 1`);
          entered();
          await new Promise((r) => setTimeout(r, 300));
          return exec(sql`select 2`);
        });
        await inside;
        proxy.cut();
        await expect(held).rejects.toThrow();
        // a BEGIN on a refused connection fails too, and gives its client back
        await expect(small.transaction((exec) => exec(sql`select 3`))).rejects.toThrow();
        proxy.resume();
        const [row] = await small.transaction((exec) => exec<{ n: number }>(sql`select 4 as n`));
        expect(row.n).toBe(4);
      }
      const all = await Promise.all([1, 2, 3, 4].map((n) => small.transaction((exec) => exec<{ n: number }>(sql`select ${n}::int as n`))));
      expect(all.map(([r]) => r.n)).toEqual([1, 2, 3, 4]);
    } finally {
      proxy.resume();
      await small.close();
    }
  });

  it('the MCP token cache caches nothing while invalidations cannot be heard, and again once they can', async () => {
    const cached = await openDatabase({ url: proxy.urlFor(test.url!), poolSize: 2, listenBackoffMs: { initial: 50, max: 200 } });
    try {
      const cache = authCacheFor(cached, captured.logger);
      await cache.ready();
      const entry = { row: {} as never, loadedAt: Date.now(), expiresAt: null, nextTouchAt: 0 };
      cache.set('t1', entry, cache.epoch());
      expect(cache.get('t1', Date.now(), 60_000)).toBe(entry);
      proxy.cut();
      // a revocation by another process now would not be heard: the entry is gone and nothing new is kept
      await expect.poll(() => cache.get('t1', Date.now(), 60_000), { timeout: 3000 }).toBeUndefined();
      cache.set('t2', entry, cache.epoch());
      expect(cache.get('t2', Date.now(), 60_000)).toBeUndefined();
      proxy.resume();
      await expect
        .poll(
          () => {
            cache.set('t3', entry, cache.epoch());
            return cache.get('t3', Date.now(), 60_000);
          },
          { timeout: 5000 },
        )
        .toBe(entry);
      // and an invalidation from another process is heard again
      await test.db.notify('mercato_mcp_tokens', 't3');
      await expect.poll(() => cache.get('t3', Date.now(), 60_000), { timeout: 3000 }).toBeUndefined();
    } finally {
      proxy.resume();
      await cached.close();
    }
  });
});
