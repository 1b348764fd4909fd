/**
 * The run page's waterfall: the run's steps as horizontal bars on one time axis (offset from the run's start, duration,
 * attempt), each `ctx.sleep` as a segment of its own (hatched, with the part still to sleep lighter), and the run's
 * current wait with its reason (`run.waiting`). Plain HTML and CSS: polaris-viz has no waterfall or Gantt chart. The
 * drawing is hidden from screen readers; a visually hidden table says the same in text. While the run is active the
 * page re-renders it from the run's watch, and a one-second clock moves the bars that are still growing.
 */
import type { RunDetail, StepRow } from 'mercato/api';
import { formatDuration, formatMoment } from '../lib/format.ts';
import { useNow, waitingTitle } from './waiting.tsx';

export type BarState = 'completed' | 'failed' | 'running' | 'sleeping' | 'interrupted' | 'waiting';

export interface Bar {
  key: string;
  label: string;
  kind: 'step' | 'sleep' | 'wait';
  state: BarState;
  /** ms from the axis' origin. */
  start: number;
  /** Where the drawn (elapsed) part ends, ms from the origin. */
  end: number;
  /** Where a planned part (the rest of a sleep, a wait's `until`) ends, ms from the origin; null when none. */
  plannedEnd: number | null;
  /** 0 for a wait. */
  attempt: number;
  /** What the row says in words: "2.01 s", "sleeping until 10:42:03", "Queued for a worker". */
  detail: string;
}

export interface WaterfallModel {
  /** The axis' origin (ms since the epoch): the run's start, or earlier when something of it came earlier. */
  origin: number;
  /** The axis' length in ms. */
  span: number;
  bars: Bar[];
  /** Where "now" is on the axis while the run is active; null once it has finished. */
  nowAt: number | null;
}

const time = (iso: string | null | undefined): number | null => {
  if (!iso) return null;
  const t = new Date(iso).getTime();
  return Number.isNaN(t) ? null : t;
};

/** As the step list says it; a sleep of a run that has finished (canceled while asleep) was cut short: interrupted. */
function stepState(step: StepRow, run: RunDetail, active: boolean): BarState {
  if (step.status === 'running') return run.status === 'running' ? 'running' : 'interrupted';
  if (step.status === 'sleeping' && !active) return 'interrupted';
  return step.status;
}

/** The bars of a run at `now`: its steps and sleeps in the order they started, then its current wait. */
export function waterfallModel(run: RunDetail, now: number, active: boolean): WaterfallModel {
  const finished = time(run.finishedAt);
  // while active, unfinished bars reach "now"; once finished, the run's end
  const until = active ? now : (finished ?? now);
  const raw: Omit<Bar, 'start' | 'end' | 'plannedEnd'>[] = [];
  const spans: { start: number; end: number; plannedEnd: number | null }[] = [];
  // the last thing the run did: a step or sleep that ended, or one that started and has not ended
  let lastEvent = time(run.startedAt) ?? time(run.createdAt) ?? now;
  for (const step of run.steps) {
    const start = time(step.startedAt) ?? until;
    const state = stepState(step, run, active);
    const done = time(step.finishedAt);
    const wake = time(step.wakeAt);
    const kind = step.kind === 'sleep' ? 'sleep' : 'step';
    let end = done ?? Math.max(start, until);
    let plannedEnd: number | null = null;
    let detail: string;
    if (kind === 'sleep') {
      if (state === 'sleeping') {
        end = Math.max(start, Math.min(until, wake ?? until));
        plannedEnd = wake !== null && wake > end ? wake : null;
        detail = wake !== null ? `sleeping until ${formatMoment(step.wakeAt)}` : 'sleeping';
      } else if (state === 'interrupted') detail = 'cut short';
      else detail = `slept ${formatDuration(step.durationMs)}`;
    } else if (state === 'running') detail = `running for ${formatDuration(end - start)}`;
    else if (state === 'interrupted') detail = 'interrupted';
    else detail = `${state === 'failed' ? 'failed after ' : ''}${formatDuration(step.durationMs)}`;
    raw.push({ key: `s:${step.name}`, label: step.name, kind, state, attempt: step.attempt, detail });
    spans.push({ start, end, plannedEnd });
    lastEvent = Math.max(lastEvent, done ?? start);
  }
  const waiting = active ? run.waiting : null;
  if (waiting) {
    const start = Math.min(lastEvent, now);
    const due = time(waiting.until);
    const title = waitingTitle(waiting);
    raw.push({
      key: 'wait',
      label: title,
      kind: 'wait',
      state: 'waiting',
      attempt: 0,
      detail: due !== null ? `until ${formatMoment(waiting.until)}` : 'now',
    });
    spans.push({ start, end: now, plannedEnd: due !== null && due > now ? due : null });
  }
  const runStart = time(run.startedAt) ?? time(run.createdAt) ?? now;
  const origin = Math.min(runStart, ...spans.map((s) => s.start));
  const last = Math.max(until, ...spans.map((s) => Math.max(s.end, s.plannedEnd ?? 0)));
  const span = Math.max(1000, last - origin);
  const bars = raw.map((b, i) => {
    const s = spans[i]!;
    return { ...b, start: s.start - origin, end: s.end - origin, plannedEnd: s.plannedEnd === null ? null : s.plannedEnd - origin };
  });
  return { origin, span, bars, nowAt: active ? Math.min(span, now - origin) : null };
}

const TICK_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21_600, 43_200, 86_400].map((s) => s * 1000);

/** At most `count` + 1 round ticks from 0 to `span`. */
export function ticks(span: number, count = 5): number[] {
  const step = TICK_STEPS.find((s) => span / s <= count) ?? Math.ceil(span / count / 86_400_000) * 86_400_000;
  const out: number[] = [];
  for (let t = 0; t <= span; t += step) out.push(t);
  return out;
}

/** A tick's label: "0 s", "45 s", "2 min", "1 h 30 min". */
export function tickLabel(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
}

const pct = (ms: number, span: number) => `${Math.max(0, Math.min(100, (ms / span) * 100)).toFixed(3)}%`;

const STATE_WORDS: Record<BarState, string> = {
  completed: 'completed',
  failed: 'failed',
  running: 'running',
  sleeping: 'sleeping',
  interrupted: 'interrupted',
  waiting: 'waiting',
};

function offsetLabel(ms: number): string {
  return `+${formatDuration(Math.max(0, ms))}`;
}

function Row({ bar, span }: { bar: Bar; span: number }) {
  const width = Math.max(0, bar.end - bar.start);
  const planned = bar.plannedEnd !== null ? Math.max(0, bar.plannedEnd - bar.end) : 0;
  return (
    <div className="waterfall-row" data-kind={bar.kind} data-state={bar.state}>
      <div className="waterfall-label">
        <span className="waterfall-name" title={bar.label}>
          {bar.label}
        </span>
        <span className="waterfall-meta">
          {bar.kind === 'wait' ? '' : `${offsetLabel(bar.start)} · `}
          {bar.detail}
          {bar.attempt > 1 ? ` · attempt ${bar.attempt}` : ''}
        </span>
      </div>
      <div className="waterfall-track">
        <span
          className="waterfall-bar"
          data-kind={bar.kind}
          data-state={bar.state}
          style={{ left: pct(bar.start, span), width: pct(width, span) }}
          title={`${bar.label}: ${bar.detail}`}
        />
        {planned > 0 ? (
          <span
            className="waterfall-bar waterfall-planned"
            data-kind={bar.kind}
            style={{ left: pct(bar.end, span), width: pct(planned, span) }}
          />
        ) : null}
        {bar.attempt > 1 ? <span className="waterfall-retry" style={{ left: pct(bar.start, span) }} /> : null}
      </div>
    </div>
  );
}

/** The summary a screen reader gets first, and the caption people see: "23 steps and sleeps over 58 s; …". */
function summary(model: WaterfallModel, run: RunDetail): string {
  const steps = model.bars.filter((b) => b.kind === 'step').length;
  const sleeps = model.bars.filter((b) => b.kind === 'sleep').length;
  const wait = model.bars.find((b) => b.kind === 'wait');
  const counted = `${steps} step${steps === 1 ? '' : 's'}${sleeps ? ` and ${sleeps} sleep${sleeps === 1 ? '' : 's'}` : ''}`;
  // the time the run has taken so far (or took): the axis may go further, to a planned wake-up or `until`
  const elapsed = formatDuration(model.nowAt ?? model.span);
  const parts = [steps + sleeps ? `${counted} over ${elapsed}` : `No step yet, ${elapsed} after its creation`];
  if (wait) parts.push(`now: ${wait.label.charAt(0).toLowerCase()}${wait.label.slice(1)}${wait.detail === 'now' ? '' : ` ${wait.detail}`}`);
  else if (run.finishedAt) parts.push(`the run ${run.status === 'canceled' ? 'was canceled' : run.status}`);
  return parts.join('; ');
}

export function Waterfall({ run, active }: { run: RunDetail; active: boolean }) {
  const now = useNow(active);
  const model = waterfallModel(run, now, active);
  if (model.bars.length === 0) return null;
  const marks = ticks(model.span);
  const caption = summary(model, run);
  return (
    <figure className="waterfall" data-testid="waterfall" aria-labelledby={`waterfall-caption-${run.id}`}>
      <figcaption id={`waterfall-caption-${run.id}`} className="waterfall-caption" data-testid="waterfall-summary">
        {caption}
      </figcaption>
      <div className="waterfall-chart" aria-hidden="true">
        <div className="waterfall-row waterfall-axis">
          <div className="waterfall-label" />
          <div className="waterfall-track">
            {marks.map((t) => (
              <span
                key={t}
                className="waterfall-tick"
                data-edge={t === 0 ? 'start' : t / model.span > 0.88 ? 'end' : undefined}
                style={{ left: pct(t, model.span) }}
              >
                {tickLabel(t)}
              </span>
            ))}
          </div>
        </div>
        {model.bars.map((bar) => (
          <Row key={bar.key} bar={bar} span={model.span} />
        ))}
        {model.nowAt !== null ? (
          <div className="waterfall-row waterfall-now-row">
            <div className="waterfall-label" />
            <div className="waterfall-track">
              <span className="waterfall-now" style={{ left: pct(model.nowAt, model.span) }} />
            </div>
          </div>
        ) : null}
      </div>
      <div className="waterfall-legend" aria-hidden="true">
        <span data-legend="completed">step</span>
        <span data-legend="running">running</span>
        <span data-legend="failed">failed</span>
        <span data-legend="sleep">sleep</span>
        <span data-legend="wait">waiting</span>
      </div>
      <table className="visually-hidden">
        <caption>Steps, sleeps and the current wait in the order they started, with their times from the run&apos;s start</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Kind</th>
            <th scope="col">State</th>
            <th scope="col">Starts after</th>
            <th scope="col">Time</th>
            <th scope="col">Attempt</th>
          </tr>
        </thead>
        <tbody>
          {model.bars.map((bar) => (
            <tr key={bar.key}>
              <th scope="row">{bar.label}</th>
              <td>{bar.kind}</td>
              <td>{STATE_WORDS[bar.state]}</td>
              <td>{bar.kind === 'wait' ? 'now' : formatDuration(bar.start)}</td>
              <td>{bar.detail}</td>
              <td>{bar.attempt > 0 ? bar.attempt : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}
