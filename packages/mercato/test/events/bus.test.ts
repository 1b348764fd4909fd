/** The typed event bus and the pretty renderer on their own (no database): delivery, detaching, listener errors, lines. */
import { expect, it } from 'vitest';
import { createRuntimeEvents, errorMessage, type RuntimeEvent } from '../../src/events.ts';
import { formatDuration, prettyRenderer } from '../../src/cli/terminal.ts';

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
