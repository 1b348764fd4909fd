/**
 * runtime.events and the terminal on a real runtime, a real worker and the real HTTP server: flows that complete, retry
 * a step, retry the flow and fail; a signed webhook over HTTP (and its redelivery); a cron tick of the running
 * scheduler; MCP calls over HTTP. Checked three ways: the typed events, the pretty lines (`out`) and the pino JSON lines.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineWebhook } from '../../src/app/define.ts';
import { attachTerminal } from '../../src/cli/terminal.ts';
import { staticShopDirectory } from '../../src/crons/index.ts';
import { startCronScheduler } from '../../src/serve.ts';
import { describeEngines } from '../../src/db/testing.ts';
import type { RuntimeEvent, RuntimeEventOf, RuntimeEventType } from '../../src/events.ts';
import { FAST_WORKER, SHOP, TEST_API_SECRET, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { capturingLogger, eventually } from '../kit/index.ts';

const ADMIN = 'http://localhost:3000';
const app = defineApp();
const instance = app.defineConfig({
  flows: {
    syncOrders: app.defineFlow({
      name: 'syncOrders',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) => ctx.step('fetch', () => ({ orders: 2 })),
    }),
    flakyStep: app.defineFlow({
      name: 'flakyStep',
      input: z.object({}),
      concurrency: null,
      retryPolicy: { maxAttempts: 3, initialIntervalMs: 60, backoffCoefficient: 1, maxIntervalMs: 60 },
      run: async (ctx) => {
        await ctx.step('first', () => 'kept');
        return ctx.step('fetch', () => {
          if (ctx.attempt === 1) throw new Error('platform answered 502');
          return 'fetched';
        });
      },
    }),
    flakyFlow: app.defineFlow({
      name: 'flakyFlow',
      input: z.object({}),
      concurrency: null,
      retryPolicy: { maxAttempts: 2, initialIntervalMs: 40, backoffCoefficient: 1, maxIntervalMs: 40 },
      run: async (ctx) => {
        if (ctx.attempt === 1) throw new Error('not yet');
        return 'ok';
      },
    }),
    broken: app.defineFlow({
      name: 'broken',
      input: z.object({}),
      concurrency: null,
      retryPolicy: { maxAttempts: 1 },
      run: async (ctx) => {
        await ctx.step('charge', () => {
          throw new Error('card declined\nby the bank');
        });
      },
    }),
    report: app.defineFlow({ name: 'report', input: z.object({}), concurrency: null, run: async () => 'reported' }),
    // runs until canceled (its step gives up when the run's signal aborts)
    waits: app.defineFlow({
      name: 'waits',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) =>
        ctx.step('wait', ({ signal }) => new Promise((resolve) => signal.addEventListener('abort', () => resolve('stopped')))),
    }),
  },
  webhooks: {
    'orders/create': defineWebhook({
      topic: 'orders/create',
      async handler(ctx, payload: { id: number }) {
        await ctx.log.info('order created', { orderId: payload.id });
      },
    }),
  },
  crons: [{ schedule: '* * * * *', flow: 'report', shops: 'all' }],
  worker: FAST_WORKER,
});

const TIME = String.raw`\d\d:\d\d:\d\d`;
const DURATION = String.raw`(\d+ms|\d+\.\ds|\d+s)`;
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const runLink = (runId: string) => esc(`${ADMIN}/runs/${runId}`);

describeEngines('terminal events', (get) => {
  let t: TestRuntime;
  let json: ReturnType<typeof capturingLogger>;
  let events: RuntimeEvent[];
  let pretty: string[];
  const detach: Array<() => void> = [];

  beforeAll(async () => {
    json = capturingLogger('info');
    t = await startTestRuntime(instance, get().db, { worker: true, http: true, logger: json.logger });
    detach.push(t.runtime.events.onAny((e) => void events.push(e)));
    detach.push(attachTerminal(t.runtime, { format: 'pretty', out: (line) => pretty.push(line), adminUrl: ADMIN, color: false }));
    detach.push(attachTerminal(t.runtime, { format: 'json' }));
  });
  afterAll(async () => {
    for (const off of detach) off();
    await t?.close();
  });
  beforeEach(() => {
    events = [];
    pretty = [];
    json.lines.length = 0;
  });

  const dispatch = (flowName: string) =>
    t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input: {}, trigger: 'api' }).then((r) => r.runId);
  const of = <T extends RuntimeEventType>(type: T, runId?: string) =>
    events.filter((e): e is RuntimeEventOf<T> => e.type === type && (runId === undefined || (e as { runId?: string }).runId === runId));
  const jsonOf = (runId: string) => json.lines.filter((l) => typeof l.event === 'string' && l.runId === runId);
  const prettyOf = (runId: string) => pretty.filter((l) => l.includes(runId));
  const settled = (runId: string, type: 'run.completed' | 'run.failed') =>
    eventually(() => of(type, runId).find((e) => e.type !== 'run.failed' || !e.willRetry), {
      interval: 15,
      message: `${type} of ${runId}`,
    });

  it('a run that completes: dispatched, started, completed — as events, pretty lines with the run link, and JSON lines at info', async () => {
    const runId = await dispatch('syncOrders');
    await settled(runId, 'run.completed');
    expect(of('run.dispatched', runId)).toEqual([
      expect.objectContaining({
        type: 'run.dispatched',
        runId,
        flow: 'syncOrders',
        shop: SHOP,
        app: 'default',
        trigger: 'api',
        parentRunId: null,
        at: expect.any(Date),
      }),
    ]);
    expect(of('run.started', runId)).toEqual([expect.objectContaining({ runId, flow: 'syncOrders', shop: SHOP, attempt: 1 })]);
    const [completed] = of('run.completed', runId);
    expect(completed).toMatchObject({ runId, flow: 'syncOrders', shop: SHOP, app: 'default', attempt: 1 });
    expect(completed!.durationMs).toBeGreaterThanOrEqual(0);
    expect((await waitForRun(get().db, runId)).status).toBe('completed'); // the event came after the stored outcome

    // the dispatcher and the worker report on their own: the dispatch line is not guaranteed to come first
    const lines = prettyOf(runId);
    expect(lines).toHaveLength(3);
    expect(lines.find((l) => l.includes(' → '))).toMatch(
      new RegExp(`^${TIME} → syncOrders dispatched  ${esc(SHOP)}  via api  ${runLink(runId)}$`),
    );
    expect(lines.find((l) => l.includes(' ▶ '))).toMatch(new RegExp(`^${TIME} ▶ syncOrders started  ${esc(SHOP)}  ${runLink(runId)}$`));
    expect(lines.at(-1)).toMatch(new RegExp(`^${TIME} ✓ syncOrders completed  ${esc(SHOP)}  ${DURATION}  ${runLink(runId)}$`));
    expect(lines.join('\n')).not.toContain('\x1b[');

    const logged = jsonOf(runId);
    expect(logged.map((l) => l.event).sort()).toEqual(['run.completed', 'run.dispatched', 'run.started']);
    expect(logged.every((l) => l.level === 30 && l.name === 'mercato' && typeof l.time === 'number')).toBe(true);
    expect(logged.find((l) => l.event === 'run.dispatched')).toMatchObject({
      msg: 'run dispatched',
      runId,
      flow: 'syncOrders',
      trigger: 'api',
      parentRunId: null,
    });
    expect(logged.at(-1)).toMatchObject({
      event: 'run.completed',
      msg: 'run completed',
      runId,
      flow: 'syncOrders',
      shop: SHOP,
      app: 'default',
      attempt: 1,
    });
    expect(typeof logged.at(-1)!.durationMs).toBe('number');
    expect(String(logged.at(-1)!.durationMs)).toMatch(/^\d+(\.\d)?$/); // to a tenth of a ms, not 103.82027999999991
  });

  it('a step that fails once: step.retried (with the next try), then started again at attempt 2 and completed', async () => {
    const runId = await dispatch('flakyStep');
    await settled(runId, 'run.completed');
    const [retried] = of('step.retried', runId);
    expect(retried).toMatchObject({
      runId,
      flow: 'flakyStep',
      step: 'fetch',
      attempt: 1,
      nextAttempt: 2,
      error: 'platform answered 502',
      retryInMs: 60,
    });
    expect(retried!.nextTryAt.getTime() - retried!.at.getTime()).toBeGreaterThanOrEqual(55);
    expect(of('run.failed', runId)).toEqual([
      expect.objectContaining({ attempt: 1, willRetry: true, retryInMs: 60, step: 'fetch', error: 'platform answered 502' }),
    ]);
    expect(of('run.started', runId).map((e) => e.attempt)).toEqual([1, 2]);
    expect(of('run.completed', runId)).toEqual([expect.objectContaining({ attempt: 2 })]);
    // the order of the worker's events
    const shown = events.filter((e) => e.type !== 'run.dispatched' && e.type !== 'step.finished');
    expect(shown.filter((e) => (e as { runId?: string }).runId === runId).map((e) => e.type)).toEqual([
      'run.started',
      'step.retried',
      'run.failed',
      'run.started',
      'run.completed',
    ]);

    const lines = prettyOf(runId).filter((l) => !l.includes(' → '));
    // the retrying run.failed has no line of its own: the step line tells it
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(
      new RegExp(
        `^${TIME} ↻ flakyStep step "fetch" retried \\(attempt 2\\): platform answered 502 — next try in 60ms  ${esc(SHOP)}  ${runLink(runId)}$`,
      ),
    );
    expect(lines[2]).toMatch(new RegExp(`^${TIME} ▶ flakyStep started \\(attempt 2\\)  `));
    expect(lines[3]).toMatch(new RegExp(`^${TIME} ✓ flakyStep completed  `));

    const logged = jsonOf(runId).filter((l) => l.event !== 'run.dispatched');
    expect(logged.map((l) => [l.event, l.level])).toEqual([
      ['run.started', 30],
      ['step.retried', 40],
      ['run.failed', 40],
      ['run.started', 30],
      ['run.completed', 30],
    ]);
    expect(logged[1]).toMatchObject({
      msg: 'step retried',
      step: 'fetch',
      attempt: 1,
      nextAttempt: 2,
      retryInMs: 60,
      error: 'platform answered 502',
    });
    expect(new Date(logged[1]!.nextTryAt).toISOString()).toBe(logged[1]!.nextTryAt);
  });

  it('a flow that throws outside a step and is retried gets its own retry line', async () => {
    const runId = await dispatch('flakyFlow');
    await settled(runId, 'run.completed');
    expect(of('step.retried', runId)).toEqual([]);
    expect(of('run.failed', runId)).toEqual([
      expect.objectContaining({ attempt: 1, willRetry: true, retryInMs: 40, step: null, error: 'not yet' }),
    ]);
    expect(prettyOf(runId).find((l) => l.includes('✗'))).toMatch(
      new RegExp(`^${TIME} ✗ flakyFlow attempt 1 failed: not yet — next try in 40ms  ${esc(SHOP)}  ${runLink(runId)}$`),
    );
  });

  it('a run that fails for good: run.failed with willRetry false, a red-cross line, an error-level JSON line', async () => {
    const runId = await dispatch('broken');
    await settled(runId, 'run.failed');
    expect((await waitForRun(get().db, runId)).status).toBe('failed');
    expect(of('run.failed', runId)).toEqual([
      expect.objectContaining({
        flow: 'broken',
        attempt: 1,
        willRetry: false,
        retryInMs: null,
        step: 'charge',
        error: 'card declined\nby the bank',
      }),
    ]);
    expect(of('step.retried', runId)).toEqual([]);
    expect(prettyOf(runId).at(-1)).toMatch(
      new RegExp(`^${TIME} ✗ broken failed in step "charge": card declined by the bank  ${esc(SHOP)}  ${DURATION}  ${runLink(runId)}$`),
    );
    const failed = jsonOf(runId).find((l) => l.event === 'run.failed');
    expect(failed).toMatchObject({ level: 50, msg: 'run failed', willRetry: false, step: 'charge', error: 'card declined\nby the bank' });
  });

  it('a signed webhook over HTTP: webhook.received with its run; the redelivery is a duplicate', async () => {
    const body = JSON.stringify({ id: 1001 });
    const post = () =>
      fetch(`${t.url}/webhooks`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-shopify-hmac-sha256': createHmac('sha256', TEST_API_SECRET).update(body).digest('base64'),
          'x-shopify-topic': 'orders/create',
          'x-shopify-shop-domain': SHOP,
          'x-shopify-webhook-id': 'wh-terminal-1',
        },
        body,
      });
    const first = await post();
    expect(first.status).toBe(200);
    const { runId } = (await first.json()) as { runId: string };
    await settled(runId, 'run.completed');
    expect(of('webhook.received')).toEqual([
      expect.objectContaining({
        topic: 'orders/create',
        shop: SHOP,
        app: 'default',
        webhookId: 'wh-terminal-1',
        duplicate: false,
        handled: true,
        runId,
      }),
    ]);
    expect(of('run.dispatched', runId)).toEqual([expect.objectContaining({ flow: 'webhook:orders/create', trigger: 'webhook' })]);
    expect((await (await post()).json()) as object).toMatchObject({ duplicate: true });
    expect(of('webhook.received').map((e) => [e.duplicate, e.runId])).toEqual([
      [false, runId],
      [true, null],
    ]);

    const hooks = pretty.filter((l) => l.includes('⇢'));
    expect(hooks[0]).toMatch(new RegExp(`^${TIME} ⇢ webhook orders/create from ${esc(SHOP)}  ${runLink(runId)}$`));
    expect(hooks[1]).toMatch(new RegExp(`^${TIME} ⇢ webhook orders/create from ${esc(SHOP)}  duplicate, ignored$`));
    // the webhook's dispatch has no line of its own; its run's start and end do (the webhook line may come first or not)
    expect(
      prettyOf(runId)
        .map((l) => l.split(' ')[1])
        .sort(),
    ).toEqual(['⇢', '▶', '✓'].sort());
    expect(json.lines.filter((l) => l.event === 'webhook.received').map((l) => [l.level, l.duplicate, l.webhookId])).toEqual([
      [30, false, 'wh-terminal-1'],
      [30, true, 'wh-terminal-1'],
    ]);
  });

  it('the running cron scheduler fires a tick: cron.fired with the fire time, and the run it dispatched runs', async () => {
    const scheduler = startCronScheduler(t.runtime, { shops: staticShopDirectory({ default: [SHOP] }) });
    try {
      // a fresh scheduler fires the most recent due minute at once (catch-up window)
      const fired = await eventually(() => of('cron.fired')[0], { interval: 15, message: 'cron.fired' });
      expect(fired).toMatchObject({ cron: 'report:* * * * *', flow: 'report', app: 'default', shop: SHOP });
      expect(fired.scheduledAt.getUTCSeconds()).toBe(0);
      expect(fired.lateMs).toBeGreaterThanOrEqual(0);
      await settled(fired.runId, 'run.completed');
      expect(of('run.dispatched', fired.runId)).toEqual([expect.objectContaining({ trigger: 'cron', flow: 'report' })]);
      const hh = String(fired.scheduledAt.getHours()).padStart(2, '0');
      const mm = String(fired.scheduledAt.getMinutes()).padStart(2, '0');
      expect(pretty.find((l) => l.includes('⏰'))).toMatch(
        new RegExp(
          `^${TIME} ⏰ cron report:\\* \\* \\* \\* \\* → report  ${esc(SHOP)}  scheduled ${hh}:${mm}:00  ${runLink(fired.runId)}$`,
        ),
      );
      expect(json.lines.find((l) => l.event === 'cron.fired')).toMatchObject({
        level: 30,
        cron: 'report:* * * * *',
        runId: fired.runId,
        scheduledAt: fired.scheduledAt.toISOString(),
      });
    } finally {
      await scheduler.stop();
    }
  });

  it('MCP over HTTP: tools/call that dispatches a flow (ok) and one of an unknown tool (error)', async () => {
    const created = await t.api('/api/mcp/tokens', { method: 'POST', json: { name: 'terminal', permissions: ['run_flows'] } });
    expect(created.status).toBe(201);
    const { secret, token } = (await created.json()) as { secret: string; token: { id: string } };
    const call = async (params: Record<string, unknown>, id: number) => {
      const res = await fetch(`${t.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${secret}` },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as any;
    };
    const ok = await call({ name: 'service.flows.run', arguments: { flow: 'syncOrders' } }, 1);
    const runId = ok.result.structuredContent.runId as string;
    expect(runId).toMatch(/^[0-9a-f-]{36}$/);
    const bad = await call({ name: 'no.such.tool', arguments: {} }, 2);
    expect(bad.error.code).toBe(-32602);
    await settled(runId, 'run.completed');

    const calls = of('mcp.call');
    expect(calls).toEqual([
      expect.objectContaining({
        method: 'tools/call',
        target: 'service.flows.run',
        tokenId: token.id,
        app: 'default',
        shop: SHOP,
        status: 'ok',
        error: null,
      }),
      expect.objectContaining({
        method: 'tools/call',
        target: 'no.such.tool',
        tokenId: token.id,
        status: 'error',
        error: 'Unknown tool: no.such.tool',
      }),
    ]);
    expect(calls.every((c) => c.durationMs >= 0)).toBe(true);
    expect(of('run.dispatched', runId)).toEqual([expect.objectContaining({ trigger: 'mcp', flow: 'syncOrders' })]);

    const lines = pretty.filter((l) => l.includes('⚙'));
    expect(lines[0]).toMatch(new RegExp(`^${TIME} ⚙ MCP tools/call service\\.flows\\.run → ok ${DURATION}  ${esc(SHOP)}$`));
    expect(lines[1]).toMatch(
      new RegExp(`^${TIME} ⚙ MCP tools/call no\\.such\\.tool → error ${DURATION}: Unknown tool: no\\.such\\.tool  ${esc(SHOP)}$`),
    );
    const logged = json.lines.filter((l) => l.event === 'mcp.call');
    expect(logged.map((l) => [l.level, l.status, l.target, l.name])).toEqual([
      [30, 'ok', 'service.flows.run', 'mercato'],
      [30, 'error', 'no.such.tool', 'mercato'],
    ]);
    expect(JSON.stringify(logged)).not.toContain(secret);
  });

  it('a canceled run: run.canceled with the state it was in and who asked, from the admin API and from MCP', async () => {
    const running = await dispatch('waits');
    await eventually(() => of('run.started', running)[0], { interval: 15, message: 'run.started' });
    const res = await t.api(`/api/runs/${running}/cancel`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(of('run.canceled', running)).toEqual([
      expect.objectContaining({ runId: running, flow: 'waits', shop: SHOP, app: 'default', previousStatus: 'running', via: 'api' }),
    ]);
    expect(prettyOf(running).find((l) => l.includes(' ■ '))).toMatch(
      new RegExp(`^${TIME} ■ waits canceled  ${esc(SHOP)}  was running, via the admin API  ${runLink(running)}$`),
    );
    expect(jsonOf(running).find((l) => l.event === 'run.canceled')).toMatchObject({
      level: 30,
      name: 'mercato',
      msg: 'run canceled',
      flow: 'waits',
      previousStatus: 'running',
      via: 'api',
    });
    // a second cancel is a 409 and says nothing more
    expect((await t.api(`/api/runs/${running}/cancel`, { method: 'POST' })).status).toBe(409);
    expect(of('run.canceled', running)).toHaveLength(1);

    const created = await t.api('/api/mcp/tokens', { method: 'POST', json: { name: 'canceler', permissions: ['cancel_runs'] } });
    const { secret } = (await created.json()) as { secret: string };
    const second = await dispatch('waits');
    await eventually(() => of('run.started', second)[0], { interval: 15, message: 'run.started' });
    const answer = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${secret}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'service.runs.cancel', arguments: { runId: second } },
      }),
    });
    expect(answer.status).toBe(200);
    expect(of('run.canceled', second)).toEqual([expect.objectContaining({ runId: second, previousStatus: 'running', via: 'mcp' })]);
    expect(prettyOf(second).find((l) => l.includes(' ■ '))).toContain('was running, via MCP');
  });

  it('a throwing listener never reaches the engine: the run completes and the error is logged', async () => {
    const off = t.runtime.events.on('run.started', () => {
      throw new Error('listener bug');
    });
    const offAsync = t.runtime.events.on('run.completed', async () => {
      throw new Error('async listener bug');
    });
    try {
      const runId = await dispatch('syncOrders');
      await settled(runId, 'run.completed');
      expect((await waitForRun(get().db, runId)).status).toBe('completed');
      await expect
        .poll(() => json.lines.filter((l) => l.msg === 'a runtime event listener failed').length, {
          timeout: 10_000,
          interval: 15,
          message: 'the listener errors logged',
        })
        .toBeGreaterThanOrEqual(2);
      const reported = json.lines.filter((l) => l.msg === 'a runtime event listener failed');
      expect(reported.map((l) => [l.level, l.event, l.err.message])).toEqual([
        [40, 'run.started', 'listener bug'],
        [40, 'run.completed', 'async listener bug'],
      ]);
    } finally {
      off();
      offAsync();
    }
  });

  it('quiet shows nothing; the pretty level filters; detaching stops the lines; a json logger at warn keeps only failures', async () => {
    const listenersBefore = t.runtime.events.listenerCount();
    const quiet: string[] = [];
    const offQuiet = attachTerminal(t.runtime, { format: 'pretty', quiet: true, out: (l) => quiet.push(l) });
    const offQuietJson = attachTerminal(t.runtime, { format: 'json', quiet: true });
    expect(t.runtime.events.listenerCount()).toBe(listenersBefore);
    const warnOnly: string[] = [];
    const offWarn = attachTerminal(t.runtime, { format: 'pretty', level: 'warn', out: (l) => warnOnly.push(l) });
    const coloured: string[] = [];
    const offColour = attachTerminal(t.runtime, { format: 'pretty', color: true, out: (l) => coloured.push(l) });
    const noColour: string[] = [];
    const offNoColour = attachTerminal(t.runtime, { format: 'pretty', color: true, env: { NO_COLOR: '1' }, out: (l) => noColour.push(l) });
    const warnLogger = capturingLogger('warn');
    const offWarnJson = attachTerminal(t.runtime, { format: 'json', logger: warnLogger.logger });

    const good = await dispatch('syncOrders');
    const bad = await dispatch('broken');
    await settled(good, 'run.completed');
    await settled(bad, 'run.failed');
    for (const off of [offQuiet, offQuietJson, offWarn, offColour, offNoColour, offWarnJson]) off();
    expect(t.runtime.events.listenerCount()).toBe(listenersBefore);

    expect(quiet).toEqual([]);
    expect(warnOnly).toHaveLength(1);
    expect(warnOnly[0]).toContain('✗ broken failed');
    expect(coloured.some((l) => l.includes('\x1b[32m✓\x1b[0m'))).toBe(true);
    expect(coloured.some((l) => l.includes('\x1b[31m✗\x1b[0m'))).toBe(true);
    expect(noColour.length).toBeGreaterThan(0);
    expect(noColour.join('\n')).not.toContain('\x1b[');
    expect(warnLogger.lines.map((l) => [l.event, l.runId])).toEqual([['run.failed', bad]]);

    // detached: nothing more arrives
    const seenBefore = coloured.length;
    const again = await dispatch('syncOrders');
    await settled(again, 'run.completed');
    expect(coloured).toHaveLength(seenBefore);
  });
});
