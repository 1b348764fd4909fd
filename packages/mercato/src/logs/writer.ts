/** Writes log lines of runs. Every write is awaited, so no line is lost or reordered when the run ends. */
import { sql } from 'drizzle-orm';
import type { FlowLogger } from '../app/types.ts';

export type LogLevel = 'info' | 'warn' | 'error';
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
}

type Exec = (statement: ReturnType<typeof sql>) => Promise<unknown[]>;

export function limitMessage(message: unknown): string {
  const text = typeof message === 'string' ? message : String(message);
  return text.length > MAX_MESSAGE_CHARS ? text.slice(0, MAX_MESSAGE_CHARS - TRUNCATED_MARKER.length) + TRUNCATED_MARKER : text;
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
  if (json.length <= MAX_DATA_JSON_CHARS) return json;
  return JSON.stringify({ _truncated: true, preview: json.slice(0, 1024) + TRUNCATED_MARKER });
}

export async function writeLog(exec: Exec, line: LogLine): Promise<void> {
  await exec(sql`
    insert into logs (run_id, app_handle, shop, level, message, data, step, attempt)
    values (${line.runId}::uuid, ${line.appHandle}, ${line.shop}, ${line.level}, ${limitMessage(line.message)},
            ${limitData(line.data)}::jsonb, ${line.step ?? null}, ${line.attempt})`);
}

/** A FlowLogger bound to one run execution; `currentStep()` names the step a line is written in. */
export function createRunLogger(exec: Exec, base: Omit<LogLine, 'level' | 'message' | 'data' | 'step'>, currentStep: () => string | null): FlowLogger {
  const write = (level: LogLevel) => (message: string, data?: Record<string, unknown>) =>
    writeLog(exec, { ...base, level, message, data, step: currentStep() });
  return { info: write('info'), warn: write('warn'), error: write('error') };
}
