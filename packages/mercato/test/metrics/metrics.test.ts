/**
 * Prometheus metrics over real HTTP (docs/observability.md): GET /metrics is a 404 without a token and 401 without the
 * right bearer; runs dispatched through the API and executed by a real worker, a webhook, MCP calls and HTTP requests
 * show up as counters and histograms with their labels; the queue gauges count due runs per flow; no label carries a
 * shop, a run id or a raw path. /readyz reports a missing migration and the worker loop.
 */
import { createHmac } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineWebhook } from '../../src/app/define.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { serveOperations, startCronScheduler, startWorker } from '../../src/serve.ts';
import { FAST_WORKER, SHOP, TEST_API_SECRET, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import type { Worker } from '../../src/worker/index.ts';
import { prunePass } from '../../src/retention/index.ts';
import { json } from '../kit/index.ts';
import { type Sample, parseExposition, sumOf, valueOf } from './exposition.ts';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';
let flakyFailures = 0;

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    ok: app.defineFlow({ name: 'ok', input: z.object({}), concurrency: null, run: (ctx) => ctx.step('one', () => 1) }),
    flaky: app.defineFlow({
      name: 'flaky',
      concurrency: null,
      input: z.object({}),
      run: (ctx) =>
        ctx.step('call', () => {
          if (flakyFailures-- > 0) throw new Error('upstream 502');
          return 'fine';
        }),
    }),
    tick: app.defineFlow({ name: 'tick', input: z.object({}), concurrency: null, run: () => null }),
    boom: app.defineFlow({
      name: 'boom',
      input: z.object({}),
      retryPolicy: { maxAttempts: 1 },
      run: () => {
        throw new Error('always');
      },
    }),
  },
  crons: [{ schedule: '* * * * * *', flow: 'tick' }],
  webhooks: { 'orders/create': defineWebhook({ topic: 'orders/create', handler: async () => {} }) },
  worker: FAST_WORKER,
  retryPolicy: { maxAttempts: 3, initialIntervalMs: 20, backoffCoefficient: 1, maxIntervalMs: 50 },
});

async function scrape(url: string, token = METRICS_TOKEN): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return { text, samples: parseExposition(text) };
}

const dispatch = async (t: TestRuntime, flow: string) => {
  const { status, body } = await json(await t.api(`/api/flows/${flow}/run`, { method: 'POST', json: { input: {} } }));
  expect(status).toBe(202);
  return body.runId as string;
};

function webhook(url: string, topic: string, id: string) {
  const body = JSON.stringify({ id: 1 });
  return fetch(`${url}/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-shopify-hmac-sha256': createHmac('sha256', TEST_API_SECRET).update(body).digest('base64'),
      'x-shopify-topic': topic,
      'x-shopify-shop-domain': SHOP,
      'x-shopify-webhook-id': id,
    },
    body,
  });
}

describe('GET /metrics without a token configured', () => {
  it('is a JSON 404 and nothing listens to the event feed', async () => {
    const { createTestDatabase } = await import('../../src/db/testing.ts');
    const tdb = await createTestDatabase('pglite');
    const t = await startTestRuntime(instance, tdb.db, { http: true, worker: FAST_WORKER });
    try {
      const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'Not found' });
      // no metrics, no terminal: the engine builds no event (emit returns at once)
      expect(t.runtime.events.listenerCount()).toBe(0);
      expect(t.runtime.events.hears('step.finished')).toBe(false);
    } finally {
      await t.close();
      await tdb.drop();
    }
  });
});

describeEngines('Prometheus metrics', (get, kind) => {
  let t: TestRuntime;
  let worker: Worker | undefined;
  const runIds: string[] = [];

  beforeAll(async () => {
    // HTTP and metrics first; the worker is started by a test (the queue is seen before it)
    t = await startTestRuntime(instance, get().db, { http: true, env: { MERCATO_METRICS_TOKEN: METRICS_TOKEN } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('401 without the bearer token, with a wrong one, or another scheme; JSON bodies', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${METRICS_TOKEN}`, `Bearer ${METRICS_TOKEN}x`, 'Bearer']) {
      const res = await fetch(`${t.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(res.status, authorization).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      const body = (await res.json()) as { error: string };
      expect(body.error).toMatch(/MERCATO_METRICS_TOKEN/);
      expect(JSON.stringify(body)).not.toContain(METRICS_TOKEN);
    }
  });

  it('due runs are counted per flow (queue depth, oldest age) before any worker runs', async () => {
    for (let i = 0; i < 3; i++) runIds.push(await dispatch(t, 'ok'));
    const { samples } = await scrape(t.url!);
    expect(valueOf(samples, 'mercato_queue_depth', { flow: 'ok' })).toBe(3);
    expect(valueOf(samples, 'mercato_queue_oldest_age_seconds', { flow: 'ok' })).toBeGreaterThanOrEqual(0);
    expect(valueOf(samples, 'mercato_runs_dispatched_total', { flow: 'ok', trigger: 'api' })).toBe(3);
    expect(valueOf(samples, 'mercato_worker_concurrency')).toBe(0); // no worker in this process yet
  });

  it('after a real worker ran them: runs, retries, failures, durations, webhooks, MCP and HTTP requests', async () => {
    // one of the queued runs looks taken by a worker that died: the new worker recovers its lease
    await t.runtime.db.query(
      sql`update runs set status = 'running', lease_owner = 'dead-worker/1', lease_expires_at = now() - interval '1 second' where id = ${runIds[0]!}::uuid`,
    );
    worker = await startWorker(t.runtime);
    flakyFailures = 1;
    runIds.push(await dispatch(t, 'flaky'), await dispatch(t, 'boom'));
    expect((await webhook(t.url!, 'orders/create', 'w-1')).status).toBe(200);
    expect((await webhook(t.url!, 'orders/create', 'w-1')).status).toBe(200); // a duplicate
    expect((await webhook(t.url!, 'customers/create', 'w-2')).status).toBe(200); // no handler
    for (const id of runIds) await waitForRun(t.runtime.db, id, undefined, 30_000);
    const [hook] = await t.runtime.db.query<{ id: string }>(sql`select id from runs where flow_name = 'webhook:orders/create'`);
    await waitForRun(t.runtime.db, hook!.id, undefined, 30_000);

    // an MCP token, a call that works and one to a tool that does not exist
    const created = await json(await t.api('/api/mcp/tokens', { method: 'POST', json: { name: 'metrics', permissions: ['read_flows'] } }));
    expect(created.status).toBe(201);
    const mcp = (body: unknown) =>
      fetch(`${t.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${created.body.secret}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify(body),
      });
    expect((await mcp({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })).status).toBe(200);
    expect((await mcp({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'no.such.tool', arguments: {} } })).status).toBe(200);

    // the completion events come after the final writes: wait until the counters have them
    let samples: Sample[] = [];
    let text = '';
    await expect
      .poll(
        async () => {
          ({ samples, text } = await scrape(t.url!));
          return ['ok', 'flaky', 'boom', 'webhook:orders/create'].reduce(
            (n, flow) => n + sumOf(samples, 'mercato_runs_finished_total', { flow }),
            0,
          );
        },
        { timeout: 15_000, interval: 100 },
      )
      .toBe(6);

    expect(valueOf(samples, 'mercato_runs_finished_total', { flow: 'ok', status: 'completed' })).toBe(3);
    expect(valueOf(samples, 'mercato_runs_finished_total', { flow: 'flaky', status: 'completed' })).toBe(1);
    expect(valueOf(samples, 'mercato_runs_finished_total', { flow: 'boom', status: 'failed' })).toBe(1);
    expect(valueOf(samples, 'mercato_runs_finished_total', { flow: 'webhook:orders/create', status: 'completed' })).toBe(1);
    expect(valueOf(samples, 'mercato_run_retries_total', { flow: 'flaky', cause: 'step' })).toBe(1);
    expect(valueOf(samples, 'mercato_lease_recoveries_total', { flow: 'ok', outcome: 'requeued' })).toBe(1);
    expect(valueOf(samples, 'mercato_runs_started_total', { flow: 'flaky' })).toBe(2);
    expect(valueOf(samples, 'mercato_runs_started_total', { flow: 'ok' })).toBe(3);
    expect(valueOf(samples, 'mercato_runs_dispatched_total', { flow: 'webhook:orders/create', trigger: 'webhook' })).toBe(1);
    // histograms: one observation per attempt, per step execution
    expect(valueOf(samples, 'mercato_run_duration_seconds_count', { flow: 'ok', status: 'completed' })).toBe(3);
    expect(valueOf(samples, 'mercato_run_duration_seconds_count', { flow: 'flaky', status: 'retry' })).toBe(1);
    expect(valueOf(samples, 'mercato_run_duration_seconds_count', { flow: 'boom', status: 'failed' })).toBe(1);
    expect(valueOf(samples, 'mercato_run_duration_seconds_bucket', { flow: 'ok', status: 'completed', le: '+Inf' })).toBe(3);
    expect(valueOf(samples, 'mercato_step_duration_seconds_count', { flow: 'ok', status: 'completed' })).toBe(3);
    expect(valueOf(samples, 'mercato_step_duration_seconds_count', { flow: 'flaky', status: 'failed' })).toBe(1);
    expect(valueOf(samples, 'mercato_step_duration_seconds_count', { flow: 'flaky', status: 'completed' })).toBe(1);
    // webhooks by topic and outcome
    expect(valueOf(samples, 'mercato_webhook_deliveries_total', { topic: 'orders/create', outcome: 'dispatched' })).toBe(1);
    expect(valueOf(samples, 'mercato_webhook_deliveries_total', { topic: 'orders/create', outcome: 'duplicate' })).toBe(1);
    expect(valueOf(samples, 'mercato_webhook_deliveries_total', { topic: 'customers/create', outcome: 'unhandled' })).toBe(1);
    // MCP by method, tool and outcome
    expect(valueOf(samples, 'mercato_mcp_calls_total', { method: 'tools/list', tool: '', outcome: 'ok' })).toBe(1);
    expect(sumOf(samples, 'mercato_mcp_calls_total', { method: 'tools/call', tool: 'no.such.tool' })).toBe(1);
    expect(valueOf(samples, 'mercato_mcp_call_duration_seconds_count', { method: 'tools/call' })).toBe(1);
    // HTTP by route pattern (never the raw path) and status
    expect(valueOf(samples, 'mercato_http_requests_total', { method: 'POST', route: '/api/flows/:name/run', code: '202' })).toBe(5);
    expect(valueOf(samples, 'mercato_http_requests_total', { method: 'GET', route: '/metrics', code: '401' })).toBe(5);
    expect(sumOf(samples, 'mercato_http_request_duration_seconds_count', { route: '/api/flows/:name/run' })).toBe(5);
    // the worker, the process
    expect(valueOf(samples, 'mercato_worker_concurrency')).toBe(FAST_WORKER.concurrency);
    expect(valueOf(samples, 'mercato_worker_active_runs')).toBeGreaterThanOrEqual(0);
    expect(valueOf(samples, 'mercato_worker_queued_runs')).toBeGreaterThanOrEqual(0);
    expect(valueOf(samples, 'mercato_build_info', { version: t.runtime.version })).toBe(1);
    expect(valueOf(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(valueOf(samples, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    if (kind === 'postgres') {
      expect(valueOf(samples, 'mercato_db_pool_max_connections')).toBeGreaterThan(0);
      expect(valueOf(samples, 'mercato_db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
      expect(valueOf(samples, 'mercato_db_pool_waiting_queries')).toBe(0);
    } else {
      expect(valueOf(samples, 'mercato_db_pool_max_connections')).toBeUndefined(); // PGlite: one connection, no pool
    }

    // low cardinality: no tenant or run in any label
    const labelNames = new Set(samples.flatMap((s) => Object.keys(s.labels)));
    for (const name of ['shop', 'run', 'runId', 'run_id', 'token', 'tokenId', 'path', 'app'])
      expect(labelNames.has(name), name).toBe(false);
    expect(text).not.toContain(SHOP);
    for (const id of [...runIds, hook!.id]) expect(text).not.toContain(id);
    expect(text).not.toContain(created.body.secret);
    expect(text).not.toContain(METRICS_TOKEN);
  });

  it('cron fires are counted by cron and flow, with their delay', async () => {
    startCronScheduler(t.runtime);
    await expect
      .poll(
        async () => valueOf((await scrape(t.url!)).samples, 'mercato_cron_fires_total', { cron: 'tick:* * * * * *', flow: 'tick' }) ?? 0,
        {
          timeout: 20_000,
          interval: 250,
        },
      )
      .toBeGreaterThanOrEqual(1);
    const { samples } = await scrape(t.url!);
    expect(valueOf(samples, 'mercato_cron_fire_delay_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'mercato_runs_dispatched_total', { flow: 'tick', trigger: 'cron' })).toBeGreaterThanOrEqual(1);
  });

  it('/readyz: database and migrations; a missing migration is 503 with its tag; the worker loop', async () => {
    let res = await fetch(`${t.url}/readyz`);
    let body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({
      ok: true,
      status: 'ready',
      checks: {
        database: { ok: true },
        migrations: { ok: true },
        worker: { ok: true, running: true, concurrency: FAST_WORKER.concurrency },
      },
    });
    const db = t.runtime.db;
    const [last] = await db.query<{ tag: string; hash: string }>(sql`select tag, hash from mercato_migrations order by tag desc limit 1`);
    await db.query(sql`delete from mercato_migrations where tag = ${last!.tag}`);
    try {
      res = await fetch(`${t.url}/readyz`);
      body = await res.json();
      expect(res.status).toBe(503);
      expect(body).toMatchObject({
        ok: false,
        status: 'not ready',
        checks: { database: { ok: true }, migrations: { ok: false, pending: [last!.tag] } },
      });
      expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    } finally {
      await db.query(sql`insert into mercato_migrations (tag, hash) values (${last!.tag}, ${last!.hash})`);
    }
    expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
  });

  it("the worker's operations port: /healthz, /readyz with the worker loop, /metrics, JSON 404 elsewhere; not ready once the worker stops", async () => {
    const ops = await serveOperations(t.runtime, { port: 0, hostname: '127.0.0.1' });
    expect((await fetch(`${ops.url}/healthz`)).status).toBe(200);
    let res = await fetch(`${ops.url}/readyz`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).checks.worker).toMatchObject({ ok: true, running: true });
    expect((await fetch(`${ops.url}/metrics`)).status).toBe(401);
    const { samples } = await scrape(ops.url);
    expect(valueOf(samples, 'mercato_runs_finished_total', { flow: 'ok', status: 'completed' })).toBe(3); // the runtime's registry
    res = await fetch(`${ops.url}/api/flows`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'Not found' });

    await worker!.stop();
    res = await fetch(`${ops.url}/readyz`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).checks.worker).toMatchObject({ ok: false, running: false });
    await ops.close();
  });

  it('a retention pass counts the rows it deleted per table (mercato_retention_pruned_rows_total)', async () => {
    const before = valueOf((await scrape(t.url!)).samples, 'mercato_retention_pruned_rows_total', { table: 'runs' }) ?? 0;
    // the finished runs of this file look 40 days old; queued and running ones are never touched
    const aged = await t.runtime.db.query<{ id: string }>(
      sql`update runs set finished_at = now() - interval '40 days' where status in ('completed', 'failed', 'canceled') returning id`,
    );
    expect(aged.length).toBeGreaterThan(3);
    const report = await prunePass(
      { db: t.runtime.db, retention: { ...t.runtime.config.retention, batchSize: 2 }, events: t.runtime.events },
      { tables: ['runs'] },
    );
    expect(report.tables[0]).toMatchObject({ table: 'runs', rows: aged.length });
    const { samples } = await scrape(t.url!);
    expect(valueOf(samples, 'mercato_retention_pruned_rows_total', { table: 'runs' })).toBe(before + aged.length);
  });
});
