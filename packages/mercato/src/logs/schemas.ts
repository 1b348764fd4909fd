/**
 * Query parameters of the log search and export endpoints (docs/logs.md), as zod schemas parsed with parseInput
 * (src/input.ts): any invalid or unknown parameter is a 400 naming it (`{ error: "<parameter>: <rule>", field }`).
 * The query itself (`q`) is then parsed by the query language (query.ts), whose errors carry a position.
 */
import { z } from 'zod';
import { describeBadText, hasBadText } from '../db/text.ts';
import { parseInput } from '../input.ts';
import { type ParsedQuery, parseQuery } from './query.ts';
import { LOG_SEARCH_DEFAULT_LIMIT, LOG_SEARCH_MAX_LIMIT, type LogSearchParams } from './search.ts';
import { LOG_LEVELS, type LogLevel } from './writer.ts';

type Query = Record<string, string | undefined>;

const QUERY_STRING = { unknownKey: 'query parameter' } as const;

/** An integer from `min` to `max` in decimal digits; absent or empty: `fallback`. */
function integerParam(min: number, max: number, fallback?: number) {
  const rule = `must be an integer from ${min} to ${max}`;
  return z.preprocess(
    (raw) => (raw === '' ? undefined : raw),
    z
      .string()
      .regex(/^\d{1,16}$/, { error: rule })
      .transform(Number)
      .refine((n) => n >= min && n <= max, { error: rule })
      .optional()
      .transform((n) => n ?? fallback),
  );
}

const LEVELS_RULE = `must be a comma-separated subset of ${LOG_LEVELS.join(',')}`;

/** A comma-separated subset of the levels (spaces around names allowed), in level order; absent: every level. */
const levelsParam = z
  .string()
  .refine((raw) => raw.trim() !== '' && raw.split(',').every((part) => LOG_LEVELS.includes(part.trim() as LogLevel)), {
    error: LEVELS_RULE,
  })
  .transform((raw): LogLevel[] => {
    const parts = raw.split(',').map((part) => part.trim());
    return LOG_LEVELS.filter((level) => parts.includes(level));
  })
  .optional()
  .transform((levels) => levels ?? [...LOG_LEVELS]);

/** The query text, before the query language parses it: PostgreSQL cannot store a NUL or a lone surrogate. */
const qParam = z
  .string()
  .refine((raw) => !hasBadText(raw), { error: (issue) => `must not contain ${describeBadText(String(issue.input))}` })
  .optional();

/** GET /api/runs/:id/logs */
export const logSearchQuery = z.strictObject({
  q: qParam,
  levels: levelsParam,
  limit: integerParam(1, LOG_SEARCH_MAX_LIMIT, LOG_SEARCH_DEFAULT_LIMIT),
  offset: integerParam(0, Number.MAX_SAFE_INTEGER, 0),
  before: integerParam(1, Number.MAX_SAFE_INTEGER),
});

/** GET /api/runs/:id/logs/export; a `format` other than `csv` is JSON. */
export const logExportQuery = z.strictObject({
  format: z
    .string()
    .optional()
    .transform((format): ExportFormat => (format === 'csv' ? 'csv' : 'json')),
  q: qParam,
  levels: levelsParam,
});

export type ExportFormat = 'csv' | 'json';

/** A query that does not parse: 400 `{ error, field: 'q', position, reason }`. */
export function parseQ(raw: string | undefined): ParsedQuery {
  return parseQuery(parseInput(qParam, raw, { prefix: 'q' }));
}

export function parseSearchParams(query: Query): LogSearchParams {
  const p = parseInput(logSearchQuery, query, QUERY_STRING);
  return { levels: p.levels, limit: p.limit!, offset: p.offset!, before: p.before, query: parseQuery(p.q) };
}

export function parseExportParams(query: Query): { format: ExportFormat; levels: LogLevel[]; query: ParsedQuery } {
  const p = parseInput(logExportQuery, query, QUERY_STRING);
  return { format: p.format, levels: p.levels, query: parseQuery(p.q) };
}
