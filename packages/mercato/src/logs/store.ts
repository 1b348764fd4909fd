/**
 * The logs store: every statement of the logs capability (the `logs` table, and the run-tenant check of the log
 * endpoints). Search, export and the writer keep their logic and call these; the conditions they pass in are built by
 * compile.ts (bound parameters only).
 */
import { type SQL, sql } from 'drizzle-orm';
import { type Exec, type Tenant, isoTs, tenantWhere } from '../db/sql.ts';
import type { LogRow } from '../api/types.ts';
import type { LogLevel } from '../api/types.ts';

/** A log line as the API shows it, without the search's context marks (ids and attempts may come back from the driver as strings: callers convert). */
export type StoredLine = Omit<LogRow, 'context' | 'contextOf'>;

/** A line to insert: message and data already cut and cleaned by the writer (`data` is JSON text or null). */
export interface NewLine {
  runId: string;
  appHandle: string;
  shop: string | null;
  level: LogLevel;
  message: string;
  data: string | null;
  step: string | null;
  attempt: number;
}

// ---- writing

export async function insertLine(exec: Exec, line: NewLine): Promise<void> {
  await exec(sql`
    insert into logs (run_id, app_handle, shop, level, message, data, step, attempt)
    values (${line.runId}::uuid, ${line.appHandle}, ${line.shop}, ${line.level}, ${line.message}, ${line.data}::jsonb, ${line.step}, ${line.attempt})`);
}

/**
 * Inserts an outside-step line at position `bodySeq`, unless the run already holds a line at that position with the
 * same level, message and data (a replay of the flow body).
 */
export async function insertBodyLineOnce(exec: Exec, line: NewLine, bodySeq: number): Promise<void> {
  await exec(sql`
    insert into logs (run_id, app_handle, shop, level, message, data, step, attempt, body_seq)
    select ${line.runId}::uuid, ${line.appHandle}, ${line.shop}, ${line.level}, ${line.message}, ${line.data}::jsonb, ${line.step}, ${line.attempt}, ${bodySeq}::int
    where not exists (
      select 1 from logs
      where run_id = ${line.runId}::uuid and body_seq = ${bodySeq}::int and level = ${line.level}
        and message = ${line.message} and data is not distinct from ${line.data}::jsonb)`);
}

// ---- the query transaction

/** True when the run exists and belongs to the tenant. `runId` must be a UUID (`isUuid`). */
export async function isRunOfTenant(exec: Exec, tenant: Tenant, runId: string): Promise<boolean> {
  const rows = await exec(sql`select 1 from runs where id = ${runId}::uuid and ${tenantWhere(tenant)}`);
  return rows.length > 0;
}

/** `SET LOCAL statement_timeout` for the rest of the transaction of `exec`. */
export async function setStatementTimeout(exec: Exec, timeoutMs: number): Promise<void> {
  await exec(sql.raw(`set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`));
}

/** Has the database compile a regular expression (`'' ~ pattern`); rejects with the driver's error when it is invalid. */
export async function compileRegex(exec: Exec, pattern: string): Promise<void> {
  await exec(sql`select '' ~ ${pattern} as ok`);
}

// ---- search

/** Which page of matches: newest first, below the keyset cursor `before` when set, after skipping `offset`. */
export interface MatchPage {
  before?: number;
  limit: number;
  offset: number;
}

const cursorOf = (page: MatchPage): SQL => (page.before !== undefined ? sql`id < ${page.before}` : sql`true`);

/**
 * Collects at most `cap + 1` matching ids once and derives both the count (`n`, at most cap + 1) and the page from
 * them. The page is right only when `n` is at most `cap` (the set is complete); else read it with pageOfMatches.
 */
export async function countAndPage(exec: Exec, match: SQL, page: MatchPage, cap: number): Promise<{ n: number; page: number[] }> {
  const [first] = await exec<{ n: number; page: number[] }>(sql`
      with m as materialized (select id from logs where ${match} limit ${cap + 1})
      select (select count(*)::int from m) as n,
             (select coalesce(json_agg(id), '[]'::json) from (select id from m where ${cursorOf(page)} order by id desc limit ${page.limit} offset ${page.offset}) p) as page`);
  return { n: Number(first.n), page: first.page };
}

/** The page's match ids, newest first along the (run_id, id) index. */
export async function pageOfMatches(exec: Exec, match: SQL, page: MatchPage): Promise<number[]> {
  // `nulls last` (ids are never null) is the order of the (run_id, …, id DESC NULLS LAST) indexes; a plain
  // `order by id desc` would not match them.
  const rows = await exec<{ id: number }>(
    sql`select id from logs where ${match} and ${cursorOf(page)} order by id desc nulls last limit ${page.limit} offset ${page.offset}`,
  );
  return rows.map((r) => r.id);
}

const LINE_COLUMNS = sql`l.id, l.level, l.message, l.data, l.step, l.attempt, ${isoTs('l.created_at')} as "createdAt"`;

const idsOf = (ids: readonly number[]) => sql`select (jsonb_array_elements_text(${JSON.stringify(ids.map(Number))}::jsonb))::bigint as id`;

/** The lines of these ids, newest first; `contextOf` is always null. */
export async function linesByIds(exec: Exec, ids: readonly number[]): Promise<Array<StoredLine & { contextOf: null }>> {
  return exec<StoredLine & { contextOf: null }>(sql`
        with m as (${idsOf(ids)})
        select ${LINE_COLUMNS}, null as "contextOf" from m join logs l on l.id = m.id order by l.id desc`);
}

/**
 * The lines of these match ids and up to `before` lines before and `after` lines after each (in the run), newest
 * first; a context line carries in `contextOf` the ids of the matches it surrounds (newest first), a match null.
 */
export async function linesWithContext(
  exec: Exec,
  runId: string,
  ids: readonly number[],
  before: number,
  after: number,
): Promise<Array<StoredLine & { contextOf: number[] | null }>> {
  return exec<StoredLine & { contextOf: number[] | null }>(sql`
      with m as (${idsOf(ids)}),
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
}

// ---- export

/**
 * One export batch: the matching lines with an id above `afterId`, oldest first, at most `limit`. The run's tenant is
 * checked in the same statement (one primary-key lookup), so every batch checks it, not only the first.
 */
export async function exportBatch(
  exec: Exec,
  tenant: Tenant,
  runId: string,
  match: SQL,
  afterId: number,
  limit: number,
): Promise<StoredLine[]> {
  return exec<StoredLine>(sql`
        select id, ${isoTs('created_at')} as "createdAt", level, step, attempt, message, data
        from logs where ${match} and exists (select 1 from runs where id = ${runId}::uuid and ${tenantWhere(tenant)}) and id > ${afterId} order by id asc nulls first limit ${limit}`);
}
