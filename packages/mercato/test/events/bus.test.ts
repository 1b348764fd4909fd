/** The typed event bus and the pretty renderer on their own (no database): delivery, detaching, listener errors, lines. */
import { expect, it } from 'vitest';
import { createRuntimeEvents, errorMessage, type RuntimeEvent } from '../../src/events.ts';
import { attachTerminal, eventLevel, formatDuration, prettyRenderer } from '../../src/cli/terminal.ts';
import { capturingLogger } from '../kit/index.ts';

const run = { runId: 'r-1', flow: 'syncOrders', shop: 'demo-shop.myshopify.com', app: 'default' };

it('delivers an event to the listeners of its type and to every onAny listener, with type and time added', () => {
  const events = createRuntimeEvents();
  const typed: RuntimeEvent[] = [];
  const all: RuntimeEvent[] = [];
  events.on('run.completed', (e) => void typed.push(e));
  events.onAny((e) => void all.push(e));
  const before = Date.now();
  events.emit('run.completed', { ...run, attempt: 1, durationMs: 1200 });
  events.emit('run.started', { ...run, attempt: 1 });
  expect(typed).toHaveLength(1);
  expect(typed[0]).toMatchObject({ type: 'run.completed', runId: 'r-1', durationMs: 1200 });
  expect(typed[0]!.at.getTime()).toBeGreaterThanOrEqual(before);
  expect(all.map((e) => e.type)).toEqual(['run.completed', 'run.started']);
  expect(events.listenerCount()).toBe(2);
});

it('the function returned by on/onAny detaches that registration only', () => {
  const events = createRuntimeEvents();
  const seen: string[] = [];
  const listener = (e: RuntimeEvent) => void seen.push(e.type);
  const off1 = events.onAny(listener);
  const off2 = events.onAny(listener);
  events.emit('run.started', { ...run, attempt: 1 });
  off1();
  events.emit('run.started', { ...run, attempt: 2 });
  off2();
  off2();
  events.emit('run.started', { ...run, attempt: 3 });
  expect(seen).toHaveLength(3);
  expect(events.listenerCount()).toBe(0);
});

it('a listener that throws or rejects is reported and never reaches the emitter; the other listeners still run', async () => {
  const reported: Array<{ error: unknown; type: string }> = [];
  const events = createRuntimeEvents({
    onListenerError: (error, event) => {
      reported.push({ error, type: event.type });
      throw new Error('the reporter fails too');
    },
  });
  const seen: string[] = [];
  events.on('run.failed', () => {
    throw new Error('sync listener bug');
  });
  events.onAny(async () => {
    throw new Error('async listener bug');
  });
  events.onAny((e) => void seen.push(e.type));
  expect(() =>
    events.emit('run.failed', { ...run, attempt: 1, durationMs: 5, error: 'boom', willRetry: false, retryInMs: null, step: null }),
  ).not.toThrow();
  expect(seen).toEqual(['run.failed']);
  await new Promise((r) => setTimeout(r, 0));
  expect(reported.map((r) => (r.error as Error).message).sort()).toEqual(['async listener bug', 'sync listener bug']);
  expect(reported.every((r) => r.type === 'run.failed')).toBe(true);
});

it('errorMessage copes with anything thrown', () => {
  expect(errorMessage(new Error('x'))).toBe('x');
  expect(errorMessage('plain')).toBe('plain');
  expect(
    errorMessage({
      toString: () => {
        throw new Error('no');
      },
    }),
  ).toBe('unknown error');
  expect(errorMessage('y'.repeat(900))).toHaveLength(500);
});

it('durations read like a person would write them', () => {
  expect(formatDuration(12.4)).toBe('12ms');
  expect(formatDuration(1234)).toBe('1.2s');
  expect(formatDuration(4000)).toBe('4s');
  expect(formatDuration(9960)).toBe('10s');
  expect(formatDuration(42_000)).toBe('42s');
  expect(formatDuration(125_000)).toBe('2m05s');
  expect(formatDuration(2 * 3_600_000 + 60_000)).toBe('2h01m');
});

it('pretty lines: colours only when asked, one line even for a multi-line error, links with the preview shop when asked', () => {
  const at = new Date(2025, 0, 1, 12, 3, 4);
  const completed: RuntimeEvent = { type: 'run.completed', at, ...run, attempt: 1, durationMs: 1200 };
  const plain = prettyRenderer({ color: false, adminUrl: 'http://localhost:3000/', previewLinks: false, showApp: false });
  expect(plain(completed)).toBe('12:03:04 ✓ syncOrders completed  demo-shop.myshopify.com  1.2s  http://localhost:3000/runs/r-1');
  const coloured = prettyRenderer({ color: true, adminUrl: 'http://localhost:3000', previewLinks: true, showApp: true })(completed)!;
  expect(coloured).toContain('\x1b[32m✓\x1b[0m');
  expect(coloured).toContain('demo-shop.myshopify.com [default]');
  expect(coloured).toContain('http://localhost:3000/runs/r-1?preview-shop=demo-shop.myshopify.com&preview-app=default');
  const failed: RuntimeEvent = {
    type: 'run.failed',
    at,
    ...run,
    shop: null,
    attempt: 3,
    durationMs: 20,
    error: 'line one\nline two',
    willRetry: false,
    retryInMs: null,
    step: 'charge',
  };
  expect(plain(failed)).toBe(
    '12:03:04 ✗ syncOrders failed after 3 attempts in step "charge": line one line two  (global)  20ms  http://localhost:3000/runs/r-1',
  );
  const noLinks = prettyRenderer({ color: false, previewLinks: true, showApp: false });
  expect(noLinks(completed)).toBe('12:03:04 ✓ syncOrders completed  demo-shop.myshopify.com  1.2s');
});

const RUN_ID = '1a2b3c4d-0000-4000-8000-00000000beef';
const HOLDER = '9f8e7d6c-0000-4000-8000-00000000cafe';

it('pretty lines of load shaping: a run set aside for its rate limit or a concurrency slot, and a debounced dispatch that joined', () => {
  const at = new Date(2025, 0, 1, 12, 0, 1);
  const plain = prettyRenderer({ color: false, adminUrl: 'http://localhost:3000', previewLinks: false, showApp: false });
  const waiting = { ...run, runId: RUN_ID, type: 'run.waiting', at, until: new Date(2025, 0, 1, 12, 0, 3) } as const;
  expect(plain({ ...waiting, reason: 'rate_limited', heldBy: null, key: 'demo-shop.myshopify.com' })).toBe(
    `12:00:01 ⏸ syncOrders waiting  demo-shop.myshopify.com  rate-limited until 12:00:03 (key "demo-shop.myshopify.com")  http://localhost:3000/runs/${RUN_ID}`,
  );
  expect(plain({ ...waiting, reason: 'concurrency', heldBy: HOLDER, key: 'a very long key\nthat goes on and on and on and on' })).toBe(
    `12:00:01 ⏸ syncOrders waiting  demo-shop.myshopify.com  for a concurrency slot held by run 9f8e7d6c… (key "a very long key that goes on and on and…")  http://localhost:3000/runs/${RUN_ID}`,
  );
  expect(plain({ ...waiting, shop: null, reason: 'concurrency', heldBy: null, key: 'global' })).toBe(
    `12:00:01 ⏸ syncOrders waiting  (global)  for a concurrency slot (key "global")  http://localhost:3000/runs/${RUN_ID}`,
  );
  const dispatched = { ...run, runId: RUN_ID, type: 'run.dispatched', at, trigger: 'api', parentRunId: null } as const;
  expect(plain({ ...dispatched, joined: true })).toBe(
    `12:00:01 → syncOrders joined run 1a2b3c4d… (debounced)  demo-shop.myshopify.com  via api  http://localhost:3000/runs/${RUN_ID}`,
  );
  expect(plain({ ...dispatched, joined: false })).toBe(
    `12:00:01 → syncOrders dispatched  demo-shop.myshopify.com  via api  http://localhost:3000/runs/${RUN_ID}`,
  );
  expect(plain(dispatched)).toBe(
    `12:00:01 → syncOrders dispatched  demo-shop.myshopify.com  via api  http://localhost:3000/runs/${RUN_ID}`,
  );
  // a webhook's run is told by the webhook's line, joined or not
  expect(plain({ ...dispatched, trigger: 'webhook', joined: true })).toBeNull();
  expect(eventLevel({ ...waiting, reason: 'rate_limited', heldBy: null, key: 'k' })).toBe('info');
  const coloured = prettyRenderer({ color: true, previewLinks: false, showApp: true })({
    ...waiting,
    reason: 'rate_limited',
    heldBy: null,
    key: 'k',
  })!;
  expect(coloured).toContain('\x1b[33m⏸\x1b[0m');
  expect(coloured).toContain('demo-shop.myshopify.com [default]');
});

it('pretty lines of Admin GraphQL throttle waits: in a run (with its link) and outside one; at warn', () => {
  const at = new Date(2025, 0, 1, 12, 0, 1);
  const plain = prettyRenderer({ color: false, adminUrl: 'http://localhost:3000', previewLinks: false, showApp: false });
  const throttled = {
    type: 'admin.throttled',
    at,
    runId: RUN_ID,
    flow: 'syncOrders',
    shop: 'demo-shop.myshopify.com',
    app: 'default',
    waitMs: 1234,
    requestedCost: 120,
    availableCost: 30,
    attempt: 1,
  } as const;
  expect(plain(throttled)).toBe(
    `12:00:01 ⏳ syncOrders Admin GraphQL throttled: waiting 1.2s for the query cost budget (requested 120, available 30)  demo-shop.myshopify.com  http://localhost:3000/runs/${RUN_ID}`,
  );
  expect(plain({ ...throttled, runId: null, flow: null, requestedCost: null, availableCost: null, attempt: 3, waitMs: 500 })).toBe(
    '12:00:01 ⏳ Admin GraphQL throttled: waiting 500ms for the query cost budget  demo-shop.myshopify.com  attempt 3',
  );
  expect(eventLevel(throttled)).toBe('warn');
});

it('the terminal renders the new events from a bare event bus: pretty lines (warn keeps the throttle waits) and JSON lines', () => {
  const events = createRuntimeEvents();
  const json = capturingLogger('info');
  const runtime = { events, logger: json.logger, platform: { apps: [{ handle: 'default' }] } } as unknown as Parameters<
    typeof attachTerminal
  >[0];
  const lines: string[] = [];
  const warnLines: string[] = [];
  const detach = [
    attachTerminal(runtime, { format: 'pretty', out: (l) => lines.push(l), color: false }),
    attachTerminal(runtime, { format: 'pretty', level: 'warn', out: (l) => warnLines.push(l), color: false }),
    attachTerminal(runtime, { format: 'json' }),
  ];
  const until = new Date(Date.now() + 2000);
  events.emit('run.dispatched', { ...run, runId: RUN_ID, trigger: 'api', parentRunId: null, joined: true });
  events.emit('run.waiting', { ...run, runId: RUN_ID, reason: 'concurrency', until, heldBy: HOLDER, key: 'demo-shop.myshopify.com' });
  events.emit('admin.throttled', {
    runId: RUN_ID,
    flow: 'syncOrders',
    shop: 'demo-shop.myshopify.com',
    app: 'default',
    waitMs: 1050,
    requestedCost: 100,
    availableCost: 50,
    attempt: 2,
  });
  for (const off of detach) off();
  expect(events.listenerCount()).toBe(0);

  expect(lines).toHaveLength(3);
  expect(lines[0]).toContain('→ syncOrders joined run 1a2b3c4d… (debounced)  demo-shop.myshopify.com  via api');
  expect(lines[1]).toContain('⏸ syncOrders waiting  demo-shop.myshopify.com  for a concurrency slot held by run 9f8e7d6c…');
  expect(lines[2]).toContain(
    '⏳ syncOrders Admin GraphQL throttled: waiting 1.1s for the query cost budget (requested 100, available 50)  demo-shop.myshopify.com  attempt 2',
  );
  expect(warnLines).toEqual([lines[2]]);

  expect(json.lines.map((l) => [l.level, l.event, l.msg])).toEqual([
    [30, 'run.dispatched', 'run dispatched'],
    [30, 'run.waiting', 'run waiting'],
    [40, 'admin.throttled', 'admin throttled'],
  ]);
  expect(json.lines[0]).toMatchObject({ runId: RUN_ID, joined: true, trigger: 'api' });
  expect(json.lines[1]).toMatchObject({
    runId: RUN_ID,
    flow: 'syncOrders',
    shop: 'demo-shop.myshopify.com',
    app: 'default',
    reason: 'concurrency',
    until: until.toISOString(),
    heldBy: HOLDER,
    key: 'demo-shop.myshopify.com',
  });
  expect(json.lines[2]).toMatchObject({
    runId: RUN_ID,
    flow: 'syncOrders',
    waitMs: 1050,
    requestedCost: 100,
    availableCost: 50,
    attempt: 2,
  });
});
