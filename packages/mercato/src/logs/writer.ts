/**
 * Writes log lines of runs. A run logger keeps its pending writes so the engine can await them (flush) before it stores
 * a step result or the run's final state: no line is lost or lands after the result. A failed write never rejects into
 * the flow or the worker: it is reported to `onWriteError` and the run goes on.
 *
 * Written once: a line written in the flow body outside any step carries its position (`body_seq`, the n-th such call
 * of the execution). When the flow body runs again (after a sleep, a retry or a crash reclaim), a call whose position,
 * level, message and data match a stored line of the run is not written again. Lines written in a step are not matched:
 * a step that runs again (failed, or cut off by a crash) writes its lines again, as lines of that new execution.
 */
import type { FlowLogger } from '../app/types.ts';
import type { Exec } from '../db/sql.ts';
import { cleanJson, cleanText } from '../db/text.ts';
import { insertBodyLineOnce, insertLine } from './store.ts';
import type { LogLevel } from '../api/types.ts';

export type { LogLevel } from '../api/types.ts';
export const LOG_LEVELS: readonly LogLevel[] = ['info', 'warn', 'error'];

/** A message longer than this is cut and ends with TRUNCATED_MARKER. */
export const MAX_MESSAGE_CHARS = 8 * 1024;
/** Structured data whose JSON is longer than this is replaced by `{ _truncated: true, preview }`. */
export const MAX_DATA_JSON_CHARS = 32 * 1024;
export const TRUNCATED_MARKER = '…[truncated]';

export interface LogLine {
  runId: string;
  appHandle: string;
  shop: string | null;
  level: LogLevel;
  message: string;
  data?: Record<string, unknown> | null;
  step?: string | null;
  attempt: number;
  /** Position of an outside-step line in its execution of the flow body (1, 2, …); null for every other line. */
  bodySeq?: number | null;
}

/** NUL characters and lone surrogates (which PostgreSQL refuses) become U+FFFD; a long message is cut. */
export function limitMessage(message: unknown): string {
  const text = typeof message === 'string' ? message : String(message);
  return cleanText(text.length > MAX_MESSAGE_CHARS ? text.slice(0, MAX_MESSAGE_CHARS - TRUNCATED_MARKER.length) + TRUNCATED_MARKER : text);
}

export function limitData(data: unknown): string | null {
  if (data === undefined || data === null) return null;
  let json: string;
  try {
    json = JSON.stringify(data, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  } catch (error) {
    return JSON.stringify({ _unserializable: String((error as Error).message ?? error) });
  }
  if (json === undefined) return null;
  if (json.length <= MAX_DATA_JSON_CHARS) return cleanJson(json);
  return cleanJson(JSON.stringify({ _truncated: true, preview: json.slice(0, 1024) + TRUNCATED_MARKER }));
}

/**
 * Stores a line. A line with a `bodySeq` is skipped when the run already holds an outside-step line at that position
 * with the same level, message and data (as stored: cut and cleaned), so that a replay of the flow body writes it once.
 */
export async function writeLog(exec: Exec, line: LogLine): Promise<void> {
  const stored = {
    runId: line.runId,
    appHandle: line.appHandle,
    shop: line.shop,
    level: line.level,
    message: limitMessage(line.message),
    data: limitData(line.data),
    step: line.step == null ? null : cleanText(line.step),
    attempt: line.attempt,
  };
  if (line.bodySeq == null) await insertLine(exec, stored);
  else await insertBodyLineOnce(exec, stored, line.bodySeq);
}

export interface RunLogger {
  log: FlowLogger;
  /** Settles when every write started so far has settled. Never rejects. */
  flush(): Promise<void>;
}

/**
 * A FlowLogger bound to one run execution; `currentStep()` names the step a line is written in. Each write resolves once
 * stored (or once its failure has been reported to `onWriteError`); it never rejects. Lines are stored in call order.
 * Outside-step calls are numbered in call order (synchronously, at the call) so that a replay can skip the stored ones.
 */
export function createRunLogger(
  exec: Exec,
  base: Omit<LogLine, 'level' | 'message' | 'data' | 'step'>,
  currentStep: () => string | null,
  onWriteError: (error: unknown, line: LogLine) => void,
): RunLogger {
  // Writes are chained: each insert starts when the one before has settled, so lines are stored in the order they were
  // written even when the flow does not await them (a pool would otherwise run them on different connections).
  let tail: Promise<void> = Promise.resolve();
  let outsideSteps = 0;
  const write = (level: LogLevel) => (message: string, data?: Record<string, unknown>) => {
    const step = currentStep();
    const line: LogLine = { ...base, level, message, data, step, bodySeq: step === null ? ++outsideSteps : null };
    const p: Promise<void> = tail.then(() =>
      writeLog(exec, line).then(
        () => undefined,
        (error) => {
          try {
            onWriteError(error, line);
          } catch {
            // reporting must not fail the write either
          }
        },
      ),
    );
    tail = p;
    return p;
  };
  return {
    log: { info: write('info'), warn: write('warn'), error: write('error') },
    flush: () => tail,
  };
}
