/**
 * The charts drawn with the platform's chart library (@shopify/polaris-viz). This module is loaded on demand
 * (charts.tsx, React.lazy): its code and styles are a chunk of their own, fetched the first time a page shows a chart,
 * so the pages without charts do not carry the library. The pages also give every chart's figures as text (charts.tsx,
 * the summaries), so the pictures are hidden from the accessibility tree (the library's own roles there are lists
 * without list items, which axe reports as critical).
 */
import '@shopify/polaris-viz/build/esm/styles.css';
import { BarChart, PolarisVizProvider, SparkLineChart } from '@shopify/polaris-viz';
import type { DataSeries } from '@shopify/polaris-viz';
import type { RunStatus } from 'mercato/api';

/** One colour per run status, the same in every chart (close to the tones of the status badges). */
export const STATUS_COLORS: Record<RunStatus, string> = {
  completed: '#29845a',
  failed: '#e22c38',
  running: '#0094d5',
  pending: '#b28400',
  sleeping: '#8051ff',
  canceled: '#8a8a8a',
};

export interface StackedSeries {
  status: RunStatus;
  label: string;
  values: number[];
}

/**
 * Runs per bucket by status, stacked; `keys` name the buckets (the tooltips). The time axis and the legend are ours: the
 * library leaves out every x-axis label once the bars are narrower than 14 px (24 or 28 bars on a phone), and its legend
 * is a set of buttons, which a picture hidden from screen readers must not hold. `axis`: a few times to show under the
 * bars, first to last.
 */
export function StatusBarChart({ keys, series, axis }: { keys: string[]; series: StackedSeries[]; axis: string[] }) {
  const data: DataSeries[] = series.map((s) => ({
    name: s.label,
    color: STATUS_COLORS[s.status],
    data: s.values.map((value, i) => ({ key: keys[i]!, value })),
  }));
  return (
    <PolarisVizProvider defaultTheme="Light">
      <div aria-hidden="true">
        <div className="chart-bars">
          <BarChart
            data={data}
            type="stacked"
            isAnimated={false}
            showLegend={false}
            xAxisOptions={{ hide: true }}
            yAxisOptions={{ integersOnly: true }}
          />
        </div>
        <div className="chart-axis">
          {axis.map((label, i) => (
            <span key={i}>{label}</span>
          ))}
        </div>
        <ul className="chart-legend">
          {series.map((s) => (
            <li key={s.status}>
              <span className="chart-swatch" style={{ background: STATUS_COLORS[s.status] }} />
              {s.label}
            </li>
          ))}
        </ul>
      </div>
    </PolarisVizProvider>
  );
}

/** A flow's runs per hour as a line without axes. */
export function Sparkline({ values }: { values: number[] }) {
  const data: DataSeries[] = [{ name: 'Runs', color: '#005bd3', data: values.map((value, i) => ({ key: i, value })) }];
  return (
    <PolarisVizProvider defaultTheme="Light">
      <div className="chart-sparkline" aria-hidden="true">
        <SparkLineChart data={data} isAnimated={false} />
      </div>
    </PolarisVizProvider>
  );
}
