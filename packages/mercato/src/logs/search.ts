/**
 * Log search of one run: the matching lines newest first (keyset or offset paging), a capped count of every match, and
 * context lines around the page's matches. Every statement runs in a short transaction with a statement timeout; the
 * regular expressions of the query are compiled by the database first, so an invalid one is a 400 with its position.
 */
import type { LogRow } from '../api/types.ts';
import { type Database, dbErrorCode, unwrapDbError } from '../db/engine.ts';
import { type Exec, type Tenant, isUuid } from '../db/sql.ts';
import { DomainError, InvalidInputError, NotFoundError } from '../errors.ts';
import { matchCondition } from './compile.ts';
import { type ParsedQuery, QueryError, type QueryNode, regexesOf } from './query.ts';
import {
  type StoredLine,
  compileRegex,
  countAndPage,
  isRunOfTenant,
  linesByIds,
  linesWithContext,
  pageOfMatches,
  setStatementTimeout,
} from './store.ts';
import type { LogLevel } from './writer.ts';

export const LOG_SEARCH_DEFAULT_LIMIT = 50;
export const LOG_SEARCH_MAX_LIMIT = 200;
/** `total` is exact up to this many matching lines; beyond it, `total` is this figure and `totalExact` is false. */
export const LOG_COUNT_CAP = 10_000;
/** PostgreSQL's statement_timeout for every log query (PGlite cannot interrupt a statement: there it has no effect). */
export const LOG_QUERY_TIMEOUT_MS = 5_000;

/** A log line as the API shows it (the admin API contract, src/api/types.ts). */
export type { LogRow } from '../api/types.ts';

export interface LogSearchParams {
  query: ParsedQuery;
  levels: readonly LogLevel[];
  limit: number;
  offset: number;
  /** Keyset cursor: only matches with an id below this one. */
  before?: number;
}

export interface LogSearchResult {
  logs: LogRow[];
  total: number;
  totalExact: boolean;
  limit: number;
  offset: number;
  /** Pass as `before` for the next page; null when this page is not full (no more matches). */
  nextBefore: number | null;
}

/** True when the run exists and belongs to the tenant (false for an id that is not a UUID). */
export async function runExists(db: Pick<Database, 'query'>, tenant: Tenant, runId: string): Promise<boolean> {
  return isUuid(runId) && isRunOfTenant(db.query, tenant, runId);
}

/**
 * Runs `fn` in a transaction with `SET LOCAL statement_timeout`, after compiling each regular expression of the query
 * (`'' ~ pattern`): an invalid or too complex pattern becomes a QueryError at its position; a timeout a 400.
 */
export async function withLogQuery<T>(
  db: Database,
  where: QueryNode | null,
  fn: (exec: Exec) => Promise<T>,
  timeoutMs = LOG_QUERY_TIMEOUT_MS,
): Promise<T> {
  try {
    return await db.transaction(async (exec) => {
      await setStatementTimeout(exec, timeoutMs);
      for (const re of regexesOf(where)) {
        try {
          await compileRegex(exec, re.pattern);
        } catch (error) {
          const code = dbErrorCode(error);
          if (code === '2201B' || code === '54001') {
            // PostgreSQL's own message already starts with the same words on both engines
            const reason = (unwrapDbError(error) as Error).message.replace(/^invalid regular expression:\s*/i, '');
            throw new QueryError(re.position, `invalid regular expression: ${reason}`);
          }
          throw error;
        }
      }
      return fn(exec);
    });
  } catch (error) {
    if (error instanceof DomainError) throw error;
    const code = dbErrorCode(error);
    if (code === '57014') {
      throw new InvalidInputError(
        `The log query took longer than ${timeoutMs} ms and was stopped; narrow it (a time bound, a field filter, fewer regular expressions)`,
        { field: 'q' },
      );
    }
    if (code === '2201B' || code === '54001')
      throw new InvalidInputError(`Invalid regular expression: ${(unwrapDbError(error) as Error).message}`, { field: 'q' });
    throw unwrapDbError(error);
  }
}

/**
 * Two statements. The first collects at most LOG_COUNT_CAP + 1 matching ids once (whichever index serves the
 * condition best, e.g. the trigram index for text) and derives both the count and, when that set is complete, the page
 * from it. Only when there are more matches than the cap is the page read separately, newest first along the
 * (run_id, id) index, where it finds its matches quickly because they are many. The second statement reads the page's
 * lines and their context. Throws NotFoundError when the run is not the tenant's (checked in the same transaction).
 */
export async function searchLogs(db: Database, tenant: Tenant, runId: string, p: LogSearchParams): Promise<LogSearchResult> {
  if (!isUuid(runId)) throw new NotFoundError('Run not found');
  const match = matchCondition(runId, p.levels, p.query.where);
  const page = { before: p.before, limit: p.limit, offset: p.offset };
  const { before, after } = p.query;

  const found = await withLogQuery<[number, Array<StoredLine & { contextOf: number[] | null }>] | null>(db, p.query.where, async (exec) => {
    if (!(await isRunOfTenant(exec, tenant, runId))) return null;
    const first = await countAndPage(exec, match, page, LOG_COUNT_CAP);
    const pageIds = first.n > LOG_COUNT_CAP ? await pageOfMatches(exec, match, page) : first.page;
    if (pageIds.length === 0) return [first.n, []];
    if (before === 0 && after === 0) return [first.n, await linesByIds(exec, pageIds)];
    return [first.n, await linesWithContext(exec, runId, pageIds, before, after)];
  });

  if (!found) throw new NotFoundError('Run not found');
  const [counted, rows] = found;
  const logs: LogRow[] = rows.map((r) => {
    const { contextOf, ...line } = r;
    const base = { ...line, id: Number(line.id), attempt: Number(line.attempt) };
    return contextOf ? { ...base, context: true, contextOf: contextOf.map(Number) } : { ...base, context: false };
  });
  const matchIds = logs.filter((l) => !l.context).map((l) => l.id);
  return {
    logs,
    total: Math.min(counted, LOG_COUNT_CAP),
    totalExact: counted <= LOG_COUNT_CAP,
    limit: p.limit,
    offset: p.offset,
    nextBefore: matchIds.length === p.limit ? matchIds[matchIds.length - 1] : null,
  };
}
