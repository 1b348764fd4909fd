/** Small statistics and table helpers of the benchmarks (no dependencies). */

/** The p-th percentile (nearest rank) of ascending-sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** The median (nearest rank; the lower middle of an even count, as every round's figure is a real measurement). */
export const median = (values: readonly number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

export interface Spread {
  min: number;
  median: number;
  max: number;
}

/** min / median / max of the finite values (NaN when there is none). */
export function spread(values: readonly (number | undefined)[]): Spread {
  const finite = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
  if (finite.length === 0) return { min: Number.NaN, median: Number.NaN, max: Number.NaN };
  return { min: finite[0], median: percentile(finite, 50), max: finite[finite.length - 1] };
}

/** A number for a table cell: '–' when unknown, else with the given decimals. */
export function fmt(value: number | undefined, decimals = 2): string {
  return value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(decimals);
}

/**
 * A plain-text table: the first row is the header, the first column is left-aligned, the others right-aligned, except
 * the columns named in `leftColumns`.
 */
export function table(input: string[][], leftColumns: readonly number[] = [0]): string {
  // a column that is empty in every row (header included) is left out
  const keep = input[0].map((_, i) => input.some((r) => (r[i] ?? '') !== ''));
  const rows = input.map((r) => r.filter((_, i) => keep[i]));
  leftColumns = leftColumns.map((c) => keep.slice(0, c).filter(Boolean).length);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => (leftColumns.includes(i) ? (cell ?? '').padEnd(widths[i]) : (cell ?? '').padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}
