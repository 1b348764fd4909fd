/**
 * The admin's charts (docs/admin-ui.md, "Charts"): each is a picture (VizCharts.tsx, loaded on demand) and a text
 * that says the same for screen readers (a visually hidden sentence, and for the runs over time a table of every bucket).
 * The text is rendered at once, with the figures, whether or not the picture has loaded.
 */
import { SkeletonBodyText } from '@shopify/polaris';
import type { FlowStatsRow, RunStatsResponse, RunStatus } from 'mercato/api';
import { Suspense, lazy } from 'react';
import { capitalize } from '../badges.tsx';
import { formatDuration } from '../../lib/format.ts';

const StatusBarChart = lazy(() => import('./VizCharts.tsx').then((m) => ({ default: m.StatusBarChart })));
const Sparkline = lazy(() => import('./VizCharts.tsx').then((m) => ({ default: m.Sparkline })));

/** The order of the stacked series: finished first (the bulk), then the active ones. */
const CHART_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'canceled', 'running', 'sleeping', 'pending'];

/** A rate of 0 to 1 as a percentage with at most one decimal (`33.3%`, `75%`); `—` when there is none. */
export function formatRate(rate: number | null): string {
  if (rate === null) return '—';
  return `${(rate * 100).toFixed(1).replace(/\.0$/, '')}%`;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

const hourLabel = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayHourLabel = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit' });
const fullLabel = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** The label of a bucket on the x axis: its start hour (24 hours), or its day and hour (7 days). */
function bucketKey(stats: RunStatsResponse, start: string): string {
  return (stats.range === '24h' ? hourLabel : dayHourLabel).format(new Date(start));
}

/** The sentence that says what the runs chart shows (also the accessible summary). */
export function runStatsSentence(stats: RunStatsResponse): string {
  const per = stats.range === '24h' ? 'per hour over the last 24 hours' : 'per 6 hours over the last 7 days';
  const byStatus = CHART_STATUSES.map((s) => `${stats.counts[s]} ${s}`).join(', ');
  const finished = stats.counts.completed + stats.counts.failed;
  const rate =
    stats.failureRate === null
      ? 'No run finished, so there is no failure rate.'
      : `Failure rate ${formatRate(stats.failureRate)} (${stats.counts.failed} of ${plural(finished, 'finished run')}).`;
  return `Runs ${per}: ${plural(stats.total, 'run')} in total, ${byStatus}. ${rate}`;
}

/** Runs per bucket by status, stacked bars, with the sentence and a table of every bucket for screen readers. */
export function RunStatsChart({ stats }: { stats: RunStatsResponse }) {
  const keys = stats.buckets.map((b) => bucketKey(stats, b.start));
  const series = CHART_STATUSES.map((status) => ({
    status,
    label: capitalize(status),
    values: stats.buckets.map((b) => b.counts[status]),
  }));
  const bucket = stats.range === '24h' ? 'Hour from' : '6 hours from';
  // under the bars: the first bucket's start, two between, and the end of the window (now, within the last bucket)
  const n = stats.buckets.length;
  const axis = [0, Math.round(n / 3), Math.round((2 * n) / 3)].map((i) => keys[i]!).concat('now');
  return (
    <div className="run-stats-chart" data-range={stats.range}>
      <div className="visually-hidden" data-testid="run-stats-summary">
        <p>{runStatsSentence(stats)}</p>
        <table>
          <caption>{`Runs ${stats.range === '24h' ? 'per hour, last 24 hours' : 'per 6 hours, last 7 days'}, by status`}</caption>
          <thead>
            <tr>
              <th scope="col">{bucket}</th>
              {CHART_STATUSES.map((s) => (
                <th key={s} scope="col">
                  {capitalize(s)}
                </th>
              ))}
              <th scope="col">Total</th>
            </tr>
          </thead>
          <tbody>
            {stats.buckets.map((b) => (
              <tr key={b.start}>
                <th scope="row">{fullLabel.format(new Date(b.start))}</th>
                {CHART_STATUSES.map((s) => (
                  <td key={s}>{b.counts[s]}</td>
                ))}
                <td>{b.total}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Suspense fallback={<ChartLoading />}>
        <StatusBarChart keys={keys} series={series} axis={axis} />
      </Suspense>
    </div>
  );
}

/** The sentence that says what a flow's figures and sparkline show. */
export function flowStatsSentence(flowName: string, row: FlowStatsRow | undefined): string {
  if (!row || row.runs === 0) return `${flowName}: no runs in the last 24 hours.`;
  const finished = row.completed + row.failed;
  const success =
    row.successRate === null
      ? 'none finished yet'
      : `success rate ${formatRate(row.successRate)} (${row.completed} of ${plural(finished, 'finished run')})`;
  const durations = row.p50Ms === null ? 'no durations yet' : `duration p50 ${formatDuration(row.p50Ms)}, p95 ${formatDuration(row.p95Ms)}`;
  return `${flowName}, last 24 hours: ${plural(row.runs, 'run')}, ${success}, ${durations}. Runs per hour, oldest first: ${row.hourly.join(', ')}.`;
}

/** A flow's runs per hour over 24 hours. */
export function FlowSparkline({ row }: { row: FlowStatsRow }) {
  return (
    <Suspense fallback={<ChartLoading small />}>
      <Sparkline values={row.hourly} />
    </Suspense>
  );
}

function ChartLoading({ small = false }: { small?: boolean }) {
  return (
    <div className={small ? 'chart-sparkline' : 'chart-bars'}>
      <SkeletonBodyText lines={small ? 1 : 4} />
    </div>
  );
}
