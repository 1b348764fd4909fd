/**
 * /readyz against a PostgreSQL server that goes away and comes back (a private cluster of this test, stopped and started
 * with pg_ctl): 503 with the failing checks while it is down, /healthz 200 all along, 200 again once it is back.
 * The runtime runs a worker too, so the worker check is there (its loop keeps running through the outage).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { type Database, openDatabase } from '../../src/db/engine.ts';
import { FAST_WORKER, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { type Cluster, describeWithCluster, startCluster } from '../kit/cluster.ts';
import { eventually } from '../kit/index.ts';

const app = defineApp();
const instance = app.defineConfig({
  flows: { noop: app.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) },
  worker: FAST_WORKER,
});

describeWithCluster('/readyz while the database is stopped and started again [postgres]', () => {
  let cluster: Cluster;
  let db: Database;
  let t: TestRuntime;

  beforeAll(async () => {
    cluster = await startCluster();
    db = await openDatabase({ url: await cluster.createDatabase() });
    t = await startTestRuntime(instance, db, { http: true, worker: FAST_WORKER });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await db?.close();
    await cluster?.destroy();
  }, 60_000);

  it('503 with the failing checks while it is down, 200 again once it is back; /healthz 200 throughout', { timeout: 120_000 }, async () => {
    const ready = async () => {
      const res = await fetch(`${t.url}/readyz`);
      return { status: res.status, body: (await res.json()) as any };
    };
    expect((await ready()).status).toBe(200);

    await cluster.stop();
    const down = await eventually(async () => {
      const r = await ready();
      return r.status === 503 ? r : undefined;
    });
    expect(down.body).toMatchObject({
      ok: false,
      status: 'not ready',
      checks: {
        database: { ok: false, error: 'database unreachable' },
        migrations: { ok: false, error: 'database unreachable' },
        worker: { ok: true, running: true },
      },
    });
    expect(JSON.stringify(down.body)).not.toMatch(/at .*\.ts|stack/);
    // no host, port or driver message: /readyz needs no login (the reason is in the logs)
    expect(JSON.stringify(down.body)).not.toMatch(new RegExp(`127\\.0\\.0\\.1|${cluster.port}|ECONN`));
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);

    await cluster.start();
    await eventually(async () => (await ready()).status === 200, { timeout: 30_000, interval: 200 });
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });
});
