/**
 * Log search of one run: the matching lines newest first (keyset or offset paging), a capped count of every match, and
 * context lines around the page's matches. Every statement runs in a short transaction with a statement timeout; the
 * regular expressions of the query are compiled by the database first, so an invalid one is a 400 with its position.
 */
import { type SQL, sql } from 'drizzle-orm';
import { type Database, dbErrorCode, unwrapDbError } from '../db/engine.ts';
import { type Exec, type Tenant, isUuid, isoTs, tenantWhere } from '../db/sql.ts';
import { DomainError, InvalidInputError, NotFoundError } from '../errors.ts';
import { type ParsedQuery, QueryError, type QueryNode, regexesOf } from './query.ts';
import { toSql } from './sql.ts';
import { LOG_LEVELS, type LogLevel } from './writer.ts';

export const LOG_SEARCH_DEFAULT_LIMIT = 50;
export const LOG_SEARCH_MAX_LIMIT = 200;
/** `total` is exact up to this many matching lines; beyond it, `total` is this figure and `totalExact` is false. */
export const LOG_COUNT_CAP = 10_000;
/** PostgreSQL's statement_timeout for every log query (PGlite cannot interrupt a statement: there it has no effect). */
export const LOG_QUERY_TIMEOUT_MS = 5_000;

export interface LogRow {
  id: number;
  level: LogLevel;
  message: string;
  data: unknown;
  step: string | null;
  attempt: number;
  createdAt: string;
  /** true: the line is shown only as context of a match; false: the line matches the query. */
  context: boolean;
  /** On context lines: the ids of the page's matches it surrounds (newest first). */
  contextOf?: number[];
}

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

export async function runExists(db: Database, tenant: Tenant, runId: string): Promise<boolean> {
  if (!isUuid(runId)) return false;
  const rows = await db.query(sql`select 1 from runs where id = ${runId}::uuid and ${tenantWhere(tenant)}`);
  return rows.length > 0;
}

/**
 * The condition selecting the matching lines of a run: levels and the query tree. Callers check the run's tenant
 * first (searchLogs in its transaction, exports in every batch); a run's lines carry its tenant, so filtering each line
 * by tenant again would only stop index-only scans.
 */
export function matchCondition(runId: string, levels: readonly LogLevel[], where: QueryNode | null): SQL {
  const parts: SQL[] = [sql`run_id = ${runId}::uuid`];
  if (levels.length < LOG_LEVELS.length) {
    parts.push(
      sql`level in (${sql.join(
        levels.map((l) => sql`${l}`),
        sql`, `,
      )})`,
    );
  }
  if (where) parts.push(toSql(where));
  return sql.join(parts, sql` and `);
}

/**
 * Runs `fn` in a transaction with `SET LOCAL statement_timeout`, after compiling each regular expression of the query
 * (`'' ~ pattern`): an invalid or too complex pattern becomes a QueryError at its position; a timeout a 400.
 */
export async function withLogQuery<T>(db: Database, where: QueryNode | null, fn: (exec: Exec) => Promise<T>, timeoutMs = LOG_QUERY_TIMEOUT_MS): Promise<T> {
  try {
    return await db.transaction(async (exec) => {
      await exec(sql.raw(`set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`));
      for (const re of regexesOf(where)) {
        try {
          await exec(sql`select '' ~ ${re.pattern} as ok`);
        } catch (error) {
          const code = dbErrorCode(error);
          if (code === '2201B' || code === '54001') {
            throw new QueryError(re.position, `invalid regular expression: ${(unwrapDbError(error) as Error).message}`);
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
      throw new InvalidInputError(`The log query took longer than ${timeoutMs} ms and was stopped; narrow it (a time bound, a field filter, fewer regular expressions)`, { field: 'q' });
    }
    if (code === '2201B' || code === '54001') throw new InvalidInputError(`Invalid regular expression: ${(unwrapDbError(error) as Error).message}`, { field: 'q' });
    throw unwrapDbError(error);
  }
}

const LINE_COLUMNS = sql`l.id, l.level, l.message, l.data, l.step, l.attempt, ${isoTs('l.created_at')} as "createdAt"`;

/**
 * Two statements. The first collects at most LOG_COUNT_CAP + 1 matching ids once (whichever index serves the
 * condition best, e.g. the trigram index for text) and derives both the count and, when that set is complete, the page
 * from it. Only when there are more matches than the cap is the page read separately, newest first along the
 * (run_id, id) index, where it finds its matches quickly because they are many. The second statement reads the page's
 * lines and their context. Throws NotFoundError when the run is not the tenant's (checked in the same transaction).
 */
export async function searchLogs(db: Database, tenant: Tenant, runId: string, p: LogSearchParams): Promise<LogSearchResult> {
  if (!isUuid(runId)) throw new NotFoundError('Run not found');
  const cond = matchCondition(runId, p.levels, p.query.where);
  const cursor = p.before !== undefined ? sql`id < ${p.before}` : sql`true`;
  const { before, after } = p.query;

  const found = await withLogQuery(db, p.query.where, async (exec) => {
    if ((await exec(sql`select 1 from runs where id = ${runId}::uuid and ${tenantWhere(tenant)}`)).length === 0) return null;
    const [first] = await exec<{ n: number; page: number[] }>(sql`
      with m as materialized (select id from logs where ${cond} limit ${LOG_COUNT_CAP + 1})
      select (select count(*)::int from m) as n,
             (select coalesce(json_agg(id), '[]'::json) from (select id from m where ${cursor} order by id desc limit ${p.limit} offset ${p.offset}) p) as page`);
    let pageIds = first.page;
    if (Number(first.n) > LOG_COUNT_CAP) {
      // `nulls last` (ids are never null) is the order of the (run_id, …, id DESC NULLS LAST) indexes; a plain
      // `order by id desc` would not match them.
      const found = await exec<{ id: number }>(sql`select id from logs where ${cond} and ${cursor} order by id desc nulls last limit ${p.limit} offset ${p.offset}`);
      pageIds = found.map((r) => r.id);
    }
    const m = sql`select (jsonb_array_elements_text(${JSON.stringify(pageIds.map(Number))}::jsonb))::bigint as id`;
    if (pageIds.length === 0) return [Number(first.n), []] as const;
    if (before === 0 && after === 0) {
      const found = await exec<Omit<LogRow, 'context'>>(sql`
        with m as (${m})
        select ${LINE_COLUMNS}, null as "contextOf" from m join logs l on l.id = m.id order by l.id desc`);
      return [Number(first.n), found] as const;
    }
    const found = await exec<Omit<LogRow, 'context'> & { contextOf: number[] | null }>(sql`
      with m as (${m}),
      c as (
        select b.id, m.id as of from m cross join lateral (
          select x.id from logs x where x.run_id = ${runId}::uuid and x.id < m.id order by x.id desc nulls last limit ${before}) b
        union all
        select a.id, m.id as of from m cross join lateral (
          select x.id from logs x where x.run_id = ${runId}::uuid and x.id > m.id order by x.id asc nulls first limit ${after}) a
      ),
      picked as (
        select id, null::json as of from m
        union all
        select id, to_json(array_agg(of order by of desc)) from c where id not in (select id from m) group by id
      )
      select ${LINE_COLUMNS}, p.of as "contextOf" from picked p join logs l on l.id = p.id order by l.id desc`);
    return [Number(first.n), found] as const;
  });

  if (!found) throw new NotFoundError('Run not found');
  const [counted, rows] = found;
  const logs: LogRow[] = rows.map((r) => {
    const { contextOf, ...line } = r as typeof r & { contextOf: number[] | null };
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
