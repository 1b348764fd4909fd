/**
 * Export of a run's matching log lines (no context) as CSV or JSON, streamed: lines are read in keyset-paginated batches
 * (`id > last`, oldest first) as the client consumes the body, so memory holds one batch whatever the run's size.
 */
import type { Database } from '../db/engine.ts';
import type { Tenant } from '../db/sql.ts';
import { matchCondition } from './compile.ts';
import type { ParsedQuery } from './query.ts';
import { withLogQuery } from './search.ts';
import { exportBatch } from './store.ts';
import type { LogLevel } from './writer.ts';

export const EXPORT_BATCH_SIZE = 5_000;
export const CSV_COLUMNS = ['id', 'createdAt', 'level', 'step', 'attempt', 'message', 'data'] as const;

export interface ExportLine {
  id: number;
  createdAt: string;
  level: LogLevel;
  step: string | null;
  attempt: number;
  message: string;
  data: unknown;
}

/**
 * One CSV cell (RFC 4180): a cell starting with `=`, `+`, `-`, `@`, tab or carriage return is prefixed with `'` so a
 * spreadsheet shows it as text instead of running it as a formula; a cell containing a comma, a quote, CR or LF is
 * quoted, with quotes doubled.
 */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function csvRow(line: ExportLine): string {
  const cells = [
    String(line.id),
    line.createdAt,
    line.level,
    line.step ?? '',
    String(line.attempt),
    line.message,
    line.data === null || line.data === undefined ? '' : JSON.stringify(line.data),
  ];
  return cells.map(csvCell).join(',') + '\r\n';
}

export function csvHeader(): string {
  return CSV_COLUMNS.join(',') + '\r\n';
}

/** The matching lines in batches, oldest first. Each batch is one short statement (nothing held open between batches). */
export async function* exportBatches(
  db: Database,
  tenant: Tenant,
  runId: string,
  levels: readonly LogLevel[],
  query: ParsedQuery,
  batchSize = EXPORT_BATCH_SIZE,
): AsyncGenerator<ExportLine[]> {
  // The run's tenant is checked in every batch (one primary-key lookup), not only once before the download.
  const match = matchCondition(runId, levels, query.where);
  let last = 0;
  for (;;) {
    const rows = await withLogQuery(db, null, (exec) => exportBatch(exec, tenant, runId, match, last, batchSize));
    if (rows.length === 0) return;
    const lines = rows.map((r) => ({ ...r, id: Number(r.id), attempt: Number(r.attempt) }));
    yield lines;
    if (rows.length < batchSize) return;
    last = lines[lines.length - 1].id;
  }
}

/** A byte stream of the export that reads the next batch only when the consumer asks for more (backpressure). */
export function exportStream(
  batches: AsyncGenerator<ExportLine[]>,
  format: 'csv' | 'json',
  onError: (error: unknown) => void,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let started = false;
  let first = true;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          let text = '';
          if (!started) {
            started = true;
            text = format === 'csv' ? csvHeader() : '[';
          }
          const next = await batches.next();
          if (next.done) {
            if (format === 'json') text += first ? ']\n' : '\n]\n';
            if (text) controller.enqueue(encoder.encode(text));
            controller.close();
            return;
          }
          if (format === 'csv') {
            text += next.value.map(csvRow).join('');
          } else {
            for (const line of next.value) {
              text += (first ? '\n' : ',\n') + JSON.stringify(line);
              first = false;
            }
          }
          controller.enqueue(encoder.encode(text));
        } catch (error) {
          onError(error);
          controller.error(error);
        }
      },
      async cancel() {
        await batches.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}
