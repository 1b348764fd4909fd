/** Run list: query-parameter validation and the tenant-scoped, index-backed list query. */
import { type SQL, sql } from 'drizzle-orm';
import { RUN_STATUSES, type RunStatus } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import { type Tenant, isoTs, tenantWhere } from '../db/sql.ts';
import { InvalidInputError } from '../errors.ts';
import { describeBadText, hasBadText } from '../db/text.ts';

export const RUN_LIST_DEFAULT_LIMIT = 50;
export const RUN_LIST_MAX_LIMIT = 200;
const ERROR_SUMMARY_CHARS = 300;

export interface RunListQuery {
  limit: number;
  offset: number;
  search?: string;
  status?: RunStatus;
  from?: Date;
  to?: Date;
}

const KNOWN = new Set(['limit', 'offset', 'search', 'status', 'from', 'to']);

function intParam(name: string, raw: string | undefined, min: number, max: number, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new InvalidInputError(`${name}: must be an integer from ${min} to ${max}`, { field: name });
  const n = Number(raw);
  if (n < min || n > max) throw new InvalidInputError(`${name}: must be an integer from ${min} to ${max} (got ${n})`, { field: name });
  return n;
}

/** The calendar day exists (JavaScript would roll 2026-02-30 over to March). */
function validDay(raw: string): boolean {
  const [y, m, d] = raw.slice(0, 10).split('-').map(Number);
  const day = new Date(Date.UTC(y, m - 1, d));
  return day.getUTCFullYear() === y && day.getUTCMonth() === m - 1 && day.getUTCDate() === d;
}

function dateParam(name: string, raw: string | undefined): Date | undefined {
  if (raw === undefined || raw === '') return undefined;
  const iso = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.exec(raw);
  // A date-time without an offset is UTC (not the server's local time).
  const d = new Date(iso && iso[1] && !iso[4] ? `${raw}Z` : raw);
  if (!iso || Number.isNaN(d.getTime()) || !validDay(raw)) throw new InvalidInputError(`${name}: not a date (use ISO 8601, e.g. 2026-11-22 or 2026-11-22T10:00:00Z)`, { field: name });
  return d;
}

export function parseRunListQuery(query: Record<string, string | undefined>): RunListQuery {
  for (const key of Object.keys(query)) if (!KNOWN.has(key)) throw new InvalidInputError(`${key}: unknown query parameter`, { field: key });
  const status = query.status;
  if (status !== undefined && status !== '' && !RUN_STATUSES.includes(status as RunStatus)) {
    throw new InvalidInputError(`status: must be one of ${RUN_STATUSES.join(', ')}`, { field: 'status' });
  }
  const from = dateParam('from', query.from);
  const to = dateParam('to', query.to);
  if (from && to && from > to) throw new InvalidInputError('from: must not be after to', { field: 'from' });
  const search = query.search?.trim();
  if (search && search.length > 200) throw new InvalidInputError('search: at most 200 characters', { field: 'search' });
  if (search && hasBadText(search)) throw new InvalidInputError(`search: must not contain ${describeBadText(search)}`, { field: 'search' });
  return {
    limit: intParam('limit', query.limit, 1, RUN_LIST_MAX_LIMIT, RUN_LIST_DEFAULT_LIMIT),
    offset: intParam('offset', query.offset, 0, Number.MAX_SAFE_INTEGER, 0),
    search: search || undefined,
    status: (status || undefined) as RunStatus | undefined,
    from,
    to,
  };
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (m) => `\\${m}`);
}

/** A row of a run list (docs/runs.md). The full error, input and output are on the run detail only. */
export interface RunListRow {
  id: string;
  flowName: string;
  status: RunStatus;
  attempt: number;
  trigger: string;
  appHandle: string;
  shop: string | null;
  parentRunId: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  /** When a pending or sleeping run may next be claimed (retry backoff, sleep wake-up). */
  availableAt: string;
  /** `<error name>: <message>` of the last failure, at most 300 characters; null when the run has no error. */
  errorSummary: string | null;
}

const LIST_COLUMNS = sql.join(
  [
    sql.raw('id, flow_name as "flowName", status, attempt - attempt_base as attempt, trigger, app_handle as "appHandle", shop, parent_run_id as "parentRunId"'),
    sql`${isoTs('created_at')} as "createdAt", ${isoTs('started_at')} as "startedAt", ${isoTs('finished_at')} as "finishedAt"`,
    sql`${isoTs('updated_at')} as "updatedAt", ${isoTs('available_at')} as "availableAt"`,
    sql.raw(`case when error is null then null else left(coalesce(error->>'name', 'Error') || ': ' || coalesce(error->>'message', ''), ${ERROR_SUMMARY_CHARS}) end as "errorSummary"`),
  ],
  sql`, `,
);

export async function listRuns(
  db: Database,
  tenant: Tenant,
  q: RunListQuery,
  flowName?: string,
): Promise<{ runs: RunListRow[]; total: number; limit: number; offset: number }> {
  const where: SQL[] = [tenantWhere(tenant)];
  if (flowName !== undefined) where.push(sql`flow_name = ${flowName}`);
  if (q.status) where.push(sql`status = ${q.status}`);
  if (q.from) where.push(sql`created_at >= ${q.from.toISOString()}::timestamptz`);
  if (q.to) where.push(sql`created_at <= ${q.to.toISOString()}::timestamptz`);
  if (q.search) {
    // Same meaning as `flow_name ilike p or status ilike p or id::text ilike p`, cheaper: the statuses that contain the
    // term are found here, and the id is only compared when the term could be part of a UUID.
    const pattern = `%${escapeLike(q.search)}%`;
    const term = q.search.toLowerCase();
    const alternatives = [sql`flow_name ilike ${pattern}`];
    const statuses = RUN_STATUSES.filter((s) => s.includes(term));
    if (statuses.length > 0) alternatives.push(sql`status in (${sql.join(statuses.map((s) => sql`${s}`), sql`, `)})`);
    if (/^[0-9a-f-]+$/.test(term)) alternatives.push(sql`id::text like ${`%${term}%`}`);
    where.push(sql`(${sql.join(alternatives, sql` or `)})`);
  }
  const cond = sql.join(where, sql` and `);
  // `desc nulls last` is the order of the (app_handle, shop, …, created_at DESC NULLS LAST, id DESC NULLS LAST) indexes;
  // a plain `desc` (nulls first) would make PostgreSQL read every matching run and sort them.
  const [rows, [{ total }]] = await Promise.all([
    db.query<RunListRow>(sql`select ${LIST_COLUMNS} from runs where ${cond} order by created_at desc nulls last, id desc nulls last limit ${q.limit} offset ${q.offset}`),
    db.query<{ total: number }>(sql`select count(*)::int as total from runs where ${cond}`),
  ]);
  return { runs: rows, total: Number(total), limit: q.limit, offset: q.offset };
}
