/** Query parameters of the log search and export endpoints (docs/logs.md). Any invalid one is a 400 naming it. */
import { describeBadText, hasBadText } from '../db/text.ts';
import { InvalidInputError } from '../errors.ts';
import { type ParsedQuery, parseQuery } from './query.ts';
import { LOG_SEARCH_DEFAULT_LIMIT, LOG_SEARCH_MAX_LIMIT, type LogSearchParams } from './search.ts';
import { LOG_LEVELS, type LogLevel } from './writer.ts';

type Query = Record<string, string | undefined>;

function rejectUnknown(query: Query, known: readonly string[]) {
  for (const key of Object.keys(query)) {
    if (!known.includes(key)) throw new InvalidInputError(`${key}: unknown query parameter (expected ${known.join(', ')})`, { field: key });
  }
}

function intParam(name: string, raw: string | undefined, min: number, max: number, fallback: number | undefined): number | undefined {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d{1,16}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new InvalidInputError(`${name}: must be an integer from ${min} to ${max}`, { field: name });
  }
  return Number(raw);
}

export function parseLevels(raw: string | undefined): LogLevel[] {
  if (raw === undefined) return [...LOG_LEVELS];
  const parts = raw.split(',').map((s) => s.trim());
  if (raw.trim() === '' || parts.some((p) => !LOG_LEVELS.includes(p as LogLevel))) {
    throw new InvalidInputError(`levels: must be a comma-separated subset of ${LOG_LEVELS.join(',')}`, { field: 'levels' });
  }
  return LOG_LEVELS.filter((l) => parts.includes(l));
}

/** A query that does not parse: 400 `{ error, field: 'q', position, reason }`. */
export function parseQ(raw: string | undefined): ParsedQuery {
  if (raw !== undefined && hasBadText(raw)) throw new InvalidInputError(`q: must not contain ${describeBadText(raw)}`, { field: 'q' });
  return parseQuery(raw);
}

export function parseSearchParams(query: Query): LogSearchParams {
  rejectUnknown(query, ['q', 'levels', 'limit', 'offset', 'before']);
  return {
    levels: parseLevels(query.levels),
    limit: intParam('limit', query.limit, 1, LOG_SEARCH_MAX_LIMIT, LOG_SEARCH_DEFAULT_LIMIT)!,
    offset: intParam('offset', query.offset, 0, Number.MAX_SAFE_INTEGER, 0)!,
    before: intParam('before', query.before, 1, Number.MAX_SAFE_INTEGER, undefined),
    query: parseQ(query.q),
  };
}

export type ExportFormat = 'csv' | 'json';

export function parseExportParams(query: Query): { format: ExportFormat; levels: LogLevel[]; query: ParsedQuery } {
  rejectUnknown(query, ['format', 'q', 'levels']);
  return { format: query.format === 'csv' ? 'csv' : 'json', levels: parseLevels(query.levels), query: parseQ(query.q) };
}
