/**
 * What the terminal shows: renders `runtime.events` (src/events.ts) for a person or for a log collector.
 *
 * - `pretty` (`mercato dev`): one short line per event, coloured when the output is a TTY and NO_COLOR is not set,
 *   with a link to the run's page in the admin UI when `adminUrl` is given:
 *   `12:03:04 ✓ syncOrders completed  demo-shop.myshopify.com  1.2s  http://localhost:3000/runs/<id>`
 * - `json` (`mercato start`, `mercato worker`): the same events as pino JSON lines through the runtime's logger, with an
 *   `event` field (`run.completed`…), at `info` (a failed attempt that will be retried, a step retry and an Admin GraphQL
 *   throttle wait at `warn`, a run that failed for good at `error`): LOG_LEVEL (or the logger's level) filters them like
 *   any other line.
 *
 * `quiet` shows nothing. See docs/cli.md, "What the terminal shows".
 */
import pino from 'pino';
import type { RuntimeEvent, RuntimeEventType } from '../events.ts';
import type { Logger } from '../logger.ts';
import type { Runtime } from '../runtime.ts';

export type TerminalFormat = 'pretty' | 'json';

export interface TerminalOptions {
  format: TerminalFormat;
  /** Show nothing (the returned detach function still works). */
  quiet?: boolean;
  /** pretty: receives each line, without its newline. Default: written to process.stdout. */
  out?: (line: string) => void;
  /** pretty: the server's base URL (`http://localhost:3000`): run lines end with `<adminUrl>/runs/<runId>`, the admin UI's run page. */
  adminUrl?: string;
  /**
   * pretty, `mercato dev`: links carry `?preview-shop=<shop>&preview-app=<app>`, so a link opened in a new tab shows the
   * run as its shop through the admin preview (a global run's link has none). Default false.
   */
  previewLinks?: boolean;
  /**
   * pretty: ANSI colours. Default: on when `out` is not given and process.stdout is a TTY. NO_COLOR (set and not empty)
   * turns them off in every case.
   */
  color?: boolean;
  /** pretty: the least level shown, as in the JSON lines (`warn` shows only retries and failures). Default `info`. */
  level?: string;
  /** json: the logger written to. Default: the runtime's logger (its level filters the lines). */
  logger?: Logger;
  /** The environment read for NO_COLOR. Default process.env. */
  env?: NodeJS.ProcessEnv;
}

/** The level of an event's line: failures, retries and throttle waits stand out; everything else is `info`. */
export function eventLevel(event: RuntimeEvent): 'info' | 'warn' | 'error' {
  if (event.type === 'run.failed') return event.willRetry ? 'warn' : 'error';
  if (event.type === 'step.retried' || event.type === 'admin.throttled') return 'warn';
  return 'info';
}

/** The events the terminal shows (step.finished and lease.recovered feed the metrics only; the worker logs a recovered lease itself). */
const MESSAGES: Partial<Record<RuntimeEventType, string>> = {
  'run.dispatched': 'run dispatched',
  'run.waiting': 'run waiting',
  'admin.throttled': 'admin throttled',
  'run.started': 'run started',
  'run.completed': 'run completed',
  'run.failed': 'run failed',
  'step.retried': 'step retried',
  'run.canceled': 'run canceled',
  'webhook.received': 'webhook received',
  'cron.fired': 'cron fired',
  'mcp.call': 'mcp call',
  'retention.pruned': 'retention pruned',
};

/**
 * Starts rendering the runtime's events; returns the function that stops. Lines are written synchronously as events
 * arrive; a failing `out` is reported by the runtime's event feed (a listener error) and never reaches the runtime.
 */
export function attachTerminal(runtime: Pick<Runtime, 'events' | 'logger' | 'platform'>, options: TerminalOptions): () => void {
  if (options.quiet) return () => {};
  if (options.format === 'json') {
    const logger = options.logger ?? runtime.logger;
    return onShown(runtime, (event) => {
      const { type, at: _at, ...fields } = event;
      logger[eventLevel(event)]({ event: type, ...fields }, MESSAGES[type]!);
    });
  }
  if (options.format !== 'pretty') throw new TypeError(`attachTerminal: format must be "pretty" or "json" (got ${String(options.format)})`);
  const env = options.env ?? process.env;
  const noColor = typeof env.NO_COLOR === 'string' && env.NO_COLOR !== '';
  const color = !noColor && (options.color ?? (options.out === undefined && process.stdout.isTTY === true));
  const out = options.out ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const threshold = levelValue(options.level ?? 'info');
  const render = prettyRenderer({
    color,
    adminUrl: options.adminUrl,
    previewLinks: options.previewLinks ?? false,
    showApp: runtime.platform.apps.length > 1,
  });
  return onShown(runtime, (event) => {
    if (levelValue(eventLevel(event)) < threshold) return;
    const line = render(event);
    if (line !== null) out(line);
  });
}

/** Listens to each event type the terminal shows (not to every type: an event nobody shows is never built). */
function onShown(runtime: Pick<Runtime, 'events'>, listener: (event: RuntimeEvent) => void): () => void {
  const detach = (Object.keys(MESSAGES) as RuntimeEventType[]).map((type) => runtime.events.on(type, listener));
  return () => {
    for (const fn of detach) fn();
  };
}

function levelValue(level: string): number {
  if (level.toLowerCase() === 'silent') return Infinity;
  const value = (pino.levels.values as Record<string, number>)[level.toLowerCase()];
  if (value === undefined) throw new TypeError(`attachTerminal: unknown level "${level}"`);
  return value;
}

const ANSI = {
  reset: '\x1b[0m',
  bold: '\x1b[1m',
  dim: '\x1b[2m',
  red: '\x1b[31m',
  green: '\x1b[32m',
  yellow: '\x1b[33m',
  blue: '\x1b[34m',
  magenta: '\x1b[35m',
  cyan: '\x1b[36m',
};
type Paint = keyof typeof ANSI;

/** `12ms`, `1.2s`, `4s`, `42s`, `2m05s`, `2h01m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0).replace(/\.0$/, '')}s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}

/** `12:03:04`, local time. */
export function formatClock(at: Date): string {
  return [at.getHours(), at.getMinutes(), at.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** A run id in a sentence: its first 8 characters (`1a2b3c4d…`); the link at the end of the line has it whole. */
function shortId(runId: string): string {
  return runId.length > 9 ? `${runId.slice(0, 8)}…` : runId;
}

/** One line: newlines and control characters become spaces, long text is cut. */
function oneLine(text: string, max = 200): string {
  // eslint-disable-next-line no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

interface RendererOptions {
  color: boolean;
  adminUrl?: string;
  previewLinks: boolean;
  showApp: boolean;
}

/**
 * The pretty line of an event (null when it has none: a retry its step line already told, a webhook's or cron's dispatch).
 * A debounced dispatch that joined a waiting run says so (`→ syncOrders joined run 1a2b3c4d… (debounced)`).
 */
export function prettyRenderer(o: RendererOptions): (event: RuntimeEvent) => string | null {
  const paint = (style: Paint, text: string) => (o.color ? `${ANSI[style]}${text}${ANSI.reset}` : text);
  const base = o.adminUrl?.replace(/\/+$/, '');
  const link = (runId: string | null, shop: string | null, app: string | null) => {
    if (!base || !runId) return null;
    const query =
      o.previewLinks && shop ? `?preview-shop=${encodeURIComponent(shop)}${app ? `&preview-app=${encodeURIComponent(app)}` : ''}` : '';
    return paint('dim', `${base}/runs/${runId}${query}`);
  };
  const where = (shop: string | null, app: string | null) => {
    const place = shop ?? '(global)';
    return o.showApp && app ? `${place} [${app}]` : place;
  };
  const line = (at: Date, symbol: string, style: Paint, head: string, ...rest: Array<string | null | false>) =>
    [
      `${paint('dim', formatClock(at))} ${paint(style, symbol)} ${head}`,
      ...rest.filter((p): p is string => typeof p === 'string' && p !== ''),
    ].join('  ');
  const name = (flow: string) => paint('bold', flow);

  return (e) => {
    switch (e.type) {
      case 'run.dispatched':
        // a webhook's and a cron's run are told by their own line
        if (e.trigger === 'webhook' || e.trigger === 'cron') return null;
        return line(
          e.at,
          '→',
          'cyan',
          e.joined ? `${name(e.flow)} joined run ${shortId(e.runId)} (debounced)` : `${name(e.flow)} dispatched`,
          where(e.shop, e.app),
          `via ${e.trigger}`,
          link(e.runId, e.shop, e.app),
        );
      case 'run.waiting': {
        const key = `(key "${oneLine(e.key, 40)}")`;
        return line(
          e.at,
          '⏸',
          'yellow',
          `${name(e.flow)} waiting`,
          where(e.shop, e.app),
          e.reason === 'rate_limited'
            ? `rate-limited until ${formatClock(e.until)} ${key}`
            : `for a concurrency slot${e.heldBy ? ` held by run ${shortId(e.heldBy)}` : ''} ${key}`,
          link(e.runId, e.shop, e.app),
        );
      }
      case 'admin.throttled': {
        const costs =
          e.requestedCost !== null || e.availableCost !== null
            ? ` (requested ${e.requestedCost ?? '?'}, available ${e.availableCost ?? '?'})`
            : '';
        return line(
          e.at,
          '⏳',
          'yellow',
          `${e.flow ? `${name(e.flow)} ` : ''}Admin GraphQL throttled: waiting ${formatDuration(e.waitMs)} for the query cost budget${costs}`,
          where(e.shop, e.app),
          e.attempt > 1 ? `attempt ${e.attempt}` : null,
          link(e.runId, e.shop, e.app),
        );
      }
      case 'run.started':
        return line(
          e.at,
          '▶',
          'blue',
          `${name(e.flow)} started${e.attempt > 1 ? ` (attempt ${e.attempt})` : ''}`,
          where(e.shop, e.app),
          link(e.runId, e.shop, e.app),
        );
      case 'run.completed':
        return line(
          e.at,
          '✓',
          'green',
          `${name(e.flow)} completed`,
          where(e.shop, e.app),
          formatDuration(e.durationMs),
          link(e.runId, e.shop, e.app),
        );
      case 'run.canceled':
        return line(
          e.at,
          '■',
          'dim',
          `${name(e.flow)} canceled`,
          where(e.shop, e.app),
          `was ${e.previousStatus}, via ${e.via === 'mcp' ? 'MCP' : 'the admin API'}`,
          link(e.runId, e.shop, e.app),
        );
      case 'run.failed':
        if (e.willRetry && e.step !== null) return null; // its step.retried line says it all
        if (e.willRetry) {
          return line(
            e.at,
            '✗',
            'yellow',
            `${name(e.flow)} attempt ${e.attempt} failed: ${oneLine(e.error)} — next try in ${formatDuration(e.retryInMs ?? 0)}`,
            where(e.shop, e.app),
            link(e.runId, e.shop, e.app),
          );
        }
        return line(
          e.at,
          '✗',
          'red',
          `${name(e.flow)} failed${e.attempt > 1 ? ` after ${e.attempt} attempts` : ''}${e.step ? ` in step "${oneLine(e.step, 80)}"` : ''}: ${oneLine(e.error)}`,
          where(e.shop, e.app),
          formatDuration(e.durationMs),
          link(e.runId, e.shop, e.app),
        );
      case 'step.retried':
        return line(
          e.at,
          '↻',
          'yellow',
          `${name(e.flow)} step "${oneLine(e.step, 80)}" retried (attempt ${e.nextAttempt}): ${oneLine(e.error)} — next try in ${formatDuration(e.retryInMs)}`,
          where(e.shop, e.app),
          link(e.runId, e.shop, e.app),
        );
      case 'webhook.received': {
        const outcome = e.duplicate ? paint('dim', 'duplicate, ignored') : !e.handled ? paint('dim', 'no handler, ignored') : null;
        return line(
          e.at,
          '⇢',
          'cyan',
          `webhook ${paint('bold', e.topic)} from ${where(e.shop, e.app)}`,
          outcome,
          link(e.runId, e.shop, e.app),
        );
      }
      case 'cron.fired':
        return line(
          e.at,
          '⏰',
          'magenta',
          `cron ${paint('bold', e.cron)} → ${name(e.flow)}`,
          where(e.shop, e.app),
          `scheduled ${formatClock(e.scheduledAt)}`,
          link(e.runId, e.shop, e.app),
        );
      case 'mcp.call': {
        const status = e.status === 'ok' ? paint('green', 'ok') : paint('red', 'error');
        const call = `MCP ${e.method}${e.target ? ` ${paint('bold', oneLine(e.target, 100))}` : ''} → ${status} ${formatDuration(e.durationMs)}`;
        return line(e.at, '⚙', 'blue', e.error ? `${call}: ${oneLine(e.error)}` : call, e.shop ? where(e.shop, e.app) : null);
      }
      default:
        return null;
    }
  };
}
