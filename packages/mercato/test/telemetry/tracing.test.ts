/**
 * OpenTelemetry traces end to end against a real OTLP/HTTP receiver (test/telemetry/receiver.ts), on both engines: an
 * HTTP request with a `traceparent` dispatches a run; the worker's run spans (one per execution: before and after a
 * sleep, and per attempt of a retried run) continue that trace through the trace context stored with the run; step and
 * sleep spans are their children; a webhook from the platform simulator leads to the handler's Admin GraphQL client
 * span; an MCP tool call has its span. With no endpoint set, no tracer exists and nothing reaches the receiver.
 * On PostgreSQL, the run executes in a separate `mercato worker` process: the trace crosses processes via the database.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { sql } from 'drizzle-orm';
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScheduler } from '../../src/crons/index.ts';
import { type TestDatabase, createTestDatabase, describeEngines } from '../../src/db/testing.ts';
import { silentLogger } from '../../src/logger.ts';
import instance from '../fixtures/tracing-app/service.config.ts';
import { SHOP, TEST_API_KEY, TEST_API_SECRET, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { eventually } from '../kit/index.ts';
import { rpc } from '../mcp/helpers.ts';
import { ENCRYPTION_KEY, startSim } from '../platform/helpers.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './receiver.ts';

const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;
const ERROR = 2;

const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const INCOMING_SPAN = '00f067aa0ba902b7';

describeEngines('OpenTelemetry traces', (get) => {
  let receiver: OtlpReceiver;
  let sim: PlatformSim;
  let t: TestRuntime | undefined;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    sim = await startSim();
  });
  afterAll(async () => {
    await t?.close();
    await sim?.close();
    await receiver?.close();
  });

  const byName = (name: string) => receiver.spans.filter((s) => s.name === name);
  const one = (name: string, where: (s: ReceivedSpan) => boolean = () => true) => {
    const found = byName(name).filter(where);
    expect(found, `spans named ${name}: ${receiver.spans.map((s) => s.name).join(', ')}`).toHaveLength(1);
    return found[0];
  };
  const children = (parent: ReceivedSpan) => receiver.spans.filter((s) => s.parentSpanId === parent.spanId);

  it('a request, its dispatch, every execution and step of the run, a retry, a sleep, a webhook with Admin GraphQL and an MCP tool call', async () => {
    t = await startTestRuntime(instance, get().db, {
      http: true,
      worker: true,
      env: {
        PLATFORM_ORIGIN: sim.url,
        ENCRYPTION_KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`,
        OTEL_SERVICE_NAME: 'mercato-under-test',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k%201,other=2',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test,service.name=ignored',
      },
    });
    expect(t.runtime.tracing).toBeDefined();
    const t0 = t;
    sim.setAppUrl(TEST_API_KEY, t.url!);
    expect((await t.api('/api/pages')).status).toBe(200); // installs SHOP (token exchange)

    // 1. a run dispatched by a request that carries a trace context: step, sleep, step
    const dispatchedEvents: Array<{ requestId?: string | null; traceId?: string | null }> = [];
    const off = t.runtime.events.on('run.dispatched', (e) => void dispatchedEvents.push(e));
    const res = await t.api('/api/flows/traced/run', {
      method: 'POST',
      json: { input: { n: 1 } },
      headers: { traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01`, 'x-request-id': 'traced-request-1' },
    });
    off();
    expect(res.status).toBeLessThan(300);
    // the event (and so its log line) names the request and its trace
    expect(dispatchedEvents).toEqual([expect.objectContaining({ requestId: 'traced-request-1', traceId: INCOMING_TRACE })]);
    const tracedId = ((await res.json()) as any).runId as string;
    expect((await waitForRun(get().db, tracedId)).status).toBe('completed');
    const [stored] = await get().db.query<{ trace_context: string | null }>(
      sql`select trace_context from runs where id = ${tracedId}::uuid`,
    );
    expect(stored.trace_context).toMatch(new RegExp(`^00-${INCOMING_TRACE}-[0-9a-f]{16}-01$`));

    // 2. a run whose step fails on the first attempt and is retried
    const flaky = await t.api('/api/flows/flaky/run', { method: 'POST', json: { input: {} } });
    const flakyId = ((await flaky.json()) as any).runId as string;
    expect(await waitForRun(get().db, flakyId)).toMatchObject({ status: 'completed', attempt: 2 });

    // 3. a webhook from the platform simulator over HTTP; its handler calls the Admin GraphQL API
    const delivery = await sim.deliverWebhook({ shop: SHOP, topic: 'orders/create', rawBody: '{"id": 7}' });
    expect(delivery.status).toBe(200);
    const [hook] = await get().db.query<{ id: string }>(sql`select id from runs where flow_name = 'webhook:orders/create'`);
    expect((await waitForRun(get().db, hook.id)).status).toBe('completed');

    // 4. an MCP tool call
    const token = await t.api('/api/mcp/tokens', { method: 'POST', json: { name: 'tracing', permissions: [] } });
    expect(token.status).toBe(201);
    const secret = ((await token.json()) as any).secret as string;
    const call = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(rpc('tools/call', { name: 'echo', arguments: { message: 'hi' } })),
    });
    expect(call.status).toBe(200);

    // a health probe is not traced
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);

    // 5. a cron fire (a scheduler ticked by hand at a fixed time)
    const scheduler = createScheduler({
      db: get().db,
      crons: t.runtime.config.crons,
      appHandles: ['default'],
      shops: t.runtime.installations,
      dispatch: t.runtime.dispatch,
      logger: silentLogger(),
      tracing: t.runtime.tracing,
    });
    expect((await scheduler.tick(new Date('2030-01-01T10:00:30Z'))).dispatched).toBe(1);

    await t.close(); // flushes the spans (graceful shutdown of the provider)
    t = undefined;
    expect(receiver.requests.every((r) => r.method === 'POST' && r.path === '/v1/traces' && r.contentType.includes('json'))).toBe(true);
    expect(new Set(receiver.spans.map((s) => s.service))).toEqual(new Set(['mercato-under-test']));
    expect(receiver.spans.filter((s) => s.attributes['url.path'] === '/healthz')).toEqual([]);
    expect(receiver.requests.length).toBeGreaterThan(0);
    for (const r of receiver.requests) expect(r.headers).toMatchObject({ 'x-collector-key': 'k 1', other: '2' });
    expect(receiver.spans[0].resource).toMatchObject({
      'deployment.environment.name': 'test',
      'service.version': t0.runtime.version,
      'mercato.process.role': 'test',
    });

    // 1. request → dispatch → two executions (before and after the sleep) → steps and the sleep, one trace
    const request = one('POST /api/flows/:name/run', (s) => s.traceId === INCOMING_TRACE);
    expect(request).toMatchObject({ kind: SERVER, parentSpanId: INCOMING_SPAN });
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/flows/:name/run',
      'http.response.status_code': res.status,
    });
    const dispatch = one('dispatch traced');
    expect(dispatch).toMatchObject({ kind: PRODUCER, traceId: INCOMING_TRACE, parentSpanId: request.spanId });
    expect(dispatch.attributes).toMatchObject({
      'mercato.run.id': tracedId,
      'mercato.flow': 'traced',
      'mercato.shop': SHOP,
      'mercato.trigger': 'api',
    });
    const runs = byName('run traced');
    expect(runs).toHaveLength(2);
    for (const run of runs) {
      expect(run).toMatchObject({ kind: CONSUMER, traceId: INCOMING_TRACE, parentSpanId: dispatch.spanId });
      expect(run.attributes).toMatchObject({
        'mercato.run.id': tracedId,
        'mercato.flow': 'traced',
        'mercato.app': 'default',
        'mercato.shop': SHOP,
        'mercato.attempt': 1,
      });
    }
    const first = runs.find((r) => r.attributes['mercato.outcome'] === 'sleeping')!;
    const second = runs.find((r) => r.attributes['mercato.outcome'] === 'completed')!;
    expect(first && second).toBeTruthy();
    expect(
      children(first)
        .map((s) => s.name)
        .sort(),
    ).toEqual(['sleep nap', 'step one']);
    expect(one('sleep nap').attributes).toMatchObject({ 'mercato.step': 'nap', 'mercato.sleep.duration_ms': 100 });
    expect(children(second).map((s) => s.name)).toEqual(['step two']);
    expect(one('step two').attributes).toMatchObject({ 'mercato.step': 'two', 'mercato.attempt': 1 });
    expect(second.events.map((e) => e.name)).toEqual(expect.arrayContaining(['step replayed', 'sleep resumed']));

    // 2. the retried run: a failed attempt (error status, retry event) and the successful one, both in the dispatch's trace
    const flakyDispatch = one('dispatch flaky');
    const attempts = byName('run flaky').sort((a, b) => Number(a.attributes['mercato.attempt']) - Number(b.attributes['mercato.attempt']));
    expect(attempts.map((a) => a.attributes['mercato.attempt'])).toEqual([1, 2]);
    for (const a of attempts) expect(a).toMatchObject({ traceId: flakyDispatch.traceId, parentSpanId: flakyDispatch.spanId });
    expect(attempts[0].status.code).toBe(ERROR);
    expect(attempts[0].attributes).toMatchObject({ 'mercato.outcome': 'retry', 'error.type': 'Error' });
    expect(attempts[0].events.map((e) => e.name)).toEqual(expect.arrayContaining(['exception', 'retry scheduled']));
    expect(attempts[1].attributes['mercato.outcome']).toBe('completed');
    const shaky = byName('step shaky').sort((a, b) => Number(a.attributes['mercato.attempt']) - Number(b.attributes['mercato.attempt']));
    expect(shaky.map((s) => [s.parentSpanId, s.status.code])).toEqual([
      [attempts[0].spanId, ERROR],
      [attempts[1].spanId, 0],
    ]);

    // 3. webhook: request → webhook span → dispatch → run → step → Admin GraphQL client span
    const hookRequest = one('POST /webhooks');
    const webhook = one('webhook orders/create');
    expect(webhook).toMatchObject({ kind: CONSUMER, parentSpanId: hookRequest.spanId, traceId: hookRequest.traceId });
    expect(webhook.attributes).toMatchObject({
      'mercato.webhook.topic': 'orders/create',
      'mercato.shop': SHOP,
      'mercato.outcome': 'dispatched',
    });
    const hookDispatch = one('dispatch webhook:orders/create');
    expect(hookDispatch.parentSpanId).toBe(webhook.spanId);
    const hookRun = one('run webhook:orders/create');
    expect(hookRun).toMatchObject({ traceId: hookRequest.traceId, parentSpanId: hookDispatch.spanId });
    const shopStep = one('step shop');
    expect(shopStep.parentSpanId).toBe(hookRun.spanId);
    const admin = one('admin graphql', (s) => s.parentSpanId === shopStep.spanId);
    expect(admin).toMatchObject({ kind: CLIENT, traceId: hookRequest.traceId });
    expect(admin.attributes).toMatchObject({ 'mercato.shop': SHOP, 'http.response.status_code': 200 });

    // 4. MCP: the tool call span inside the /mcp request's span
    const mcpRequest = one('POST /mcp');
    const tool = one('tools/call echo');
    expect(tool).toMatchObject({ parentSpanId: mcpRequest.spanId, traceId: mcpRequest.traceId });
    expect(tool.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'echo',
      'mercato.outcome': 'ok',
      'mercato.shop': SHOP,
    });

    // 5. the cron fire starts a trace of its own (a root span) around its dispatch
    const cron = one('cron tick:* * * * *');
    expect(cron.parentSpanId).toBe('');
    expect(cron.attributes).toMatchObject({
      'mercato.cron': 'tick:* * * * *',
      'mercato.app': 'default',
      'mercato.cron.fire_at': '2030-01-01T10:00:00.000Z',
    });
    expect(one('dispatch tick')).toMatchObject({ traceId: cron.traceId, parentSpanId: cron.spanId });
  }, 60_000);

  it('with no endpoint set: no tracer, no trace context stored, nothing reaches the receiver', async () => {
    const before = receiver.requests.length;
    t = await startTestRuntime(instance, get().db, { http: true, worker: true, env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY } });
    expect(t.runtime.tracing).toBeUndefined();
    const res = await t.api('/api/flows/traced/run', {
      method: 'POST',
      json: { input: { n: 2 } },
      headers: { traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01` },
    });
    const runId = ((await res.json()) as any).runId as string;
    expect((await waitForRun(get().db, runId)).status).toBe('completed');
    const [row] = await get().db.query<{ trace_context: string | null }>(sql`select trace_context from runs where id = ${runId}::uuid`);
    expect(row.trace_context).toBeNull();
    await t.close();
    t = undefined;
    // a provider would have flushed on close; a stray exporter elsewhere would also have posted by now
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.requests.length).toBe(before);
  }, 30_000);
});

const ROOT = resolve(import.meta.dirname, '../../../..');
const BIN = join(ROOT, 'packages/mercato/bin/mercato.js');
const FIXTURE = join(ROOT, 'packages/mercato/test/fixtures/tracing-app/service.config.ts');

describe.skipIf(!process.env.DATABASE_URL)('OpenTelemetry traces across processes [postgres]', () => {
  let tdb: TestDatabase;
  let receiver: OtlpReceiver;
  let t: TestRuntime | undefined;
  let worker: ChildProcess | undefined;
  let output = '';

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tdb = await createTestDatabase('postgres');
  }, 60_000);
  afterAll(async () => {
    if (worker && worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    await t?.close();
    await tdb?.drop();
    await receiver?.close();
  }, 30_000);

  it('a request in the API process dispatches; the run and step spans of a `mercato worker` process continue its trace', async () => {
    // the API process (this one) has no worker
    t = await startTestRuntime(instance, tdb.db, {
      http: true,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'mercato-api-under-test' },
    });
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const key of Object.keys(env)) if (key.startsWith('OTEL_')) delete env[key];
    worker = spawn(process.execPath, [BIN, 'worker', '--config', FIXTURE], {
      cwd: ROOT,
      env: {
        ...env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        DATABASE_URL: tdb.url,
        PLATFORM_API_KEY: TEST_API_KEY,
        PLATFORM_API_SECRET: TEST_API_SECRET,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '100', // the SDK reads its batch settings itself
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout!.on('data', (d) => (output += d));
    worker.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<void>((res) => worker!.once('exit', () => res()));
    await eventually(() => /mercato worker .*concurrency \d+/.test(output) || worker!.exitCode !== null, {
      timeout: 30_000,
      message: 'worker to start',
    });
    expect(worker.exitCode, output).toBeNull();

    const res = await t.api('/api/flows/traced/run', {
      method: 'POST',
      json: { input: { n: 3 } },
      headers: { traceparent: `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01` },
    });
    const runId = ((await res.json()) as any).runId as string;
    const flaky = await t.api('/api/flows/flaky/run', { method: 'POST', json: { input: {} } });
    const flakyId = ((await flaky.json()) as any).runId as string;
    expect((await waitForRun(tdb.db, runId, undefined, 30_000)).status).toBe('completed');
    expect(await waitForRun(tdb.db, flakyId, undefined, 30_000)).toMatchObject({ status: 'completed', attempt: 2 });
    // the worker exports on its own (batch delay 100 ms); a graceful stop flushes whatever is left
    await eventually(() => receiver.spans.some((s) => s.name === 'step two'), { timeout: 15_000, message: 'the worker spans' });
    worker.kill('SIGTERM');
    await exited;
    await t.close();
    t = undefined;

    const api = receiver.spans.filter((s) => s.service === 'mercato-api-under-test');
    const fromWorker = receiver.spans.filter((s) => s.service === 'mercato-worker');
    expect(fromWorker.every((s) => s.resource['mercato.process.role'] === 'worker')).toBe(true);
    const request = api.find((s) => s.name === 'POST /api/flows/:name/run' && s.traceId === INCOMING_TRACE)!;
    expect(request?.parentSpanId).toBe(INCOMING_SPAN);
    const dispatch = api.find((s) => s.name === 'dispatch traced')!;
    expect(dispatch).toMatchObject({ traceId: INCOMING_TRACE, parentSpanId: request.spanId });
    const runs = fromWorker.filter((s) => s.name === 'run traced');
    expect(runs).toHaveLength(2); // before and after the sleep
    for (const run of runs) {
      expect(run).toMatchObject({ traceId: INCOMING_TRACE, parentSpanId: dispatch.spanId, kind: CONSUMER });
      expect(run.attributes).toMatchObject({
        'mercato.run.id': runId,
        'mercato.flow': 'traced',
        'mercato.app': 'default',
        'mercato.shop': SHOP,
      });
    }
    const steps = fromWorker.filter((s) => s.traceId === INCOMING_TRACE && s.name !== 'run traced');
    expect(steps.map((s) => s.name).sort()).toEqual(['sleep nap', 'step one', 'step two']);
    for (const step of steps) expect(runs.map((r) => r.spanId)).toContain(step.parentSpanId);

    const flakyDispatch = api.find((s) => s.name === 'dispatch flaky')!;
    const attempts = fromWorker.filter((s) => s.name === 'run flaky');
    expect(attempts.map((a) => a.attributes['mercato.outcome']).sort()).toEqual(['completed', 'retry']);
    for (const a of attempts) expect(a).toMatchObject({ traceId: flakyDispatch.traceId, parentSpanId: flakyDispatch.spanId });
  }, 90_000);
});
