/**
 * The query tree → a SQL condition on the `logs` table (every value a bound parameter). Each construct is written so
 * an index can serve it: text and regexes use the trigram index on `message`, data equality the jsonb_path_ops GIN
 * index on `data` (containment `@>`), level/step/attempt and time the plain columns. See docs/logs.md. This file builds
 * conditions only; the statements that use them are in store.ts.
 */
import { type SQL, sql } from 'drizzle-orm';
import type { Cmp, DataValue, QueryNode } from './query.ts';
import { LOG_LEVELS, type LogLevel } from './writer.ts';

const LEVEL_RANK: Record<LogLevel, number> = { info: 0, warn: 1, error: 2 };
const LEVELS = Object.keys(LEVEL_RANK) as LogLevel[];

/** `%`, `_` and `\` are literal in the searched text. */
export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (m) => `\\${m}`);
}

function cmp(op: Cmp): SQL {
  return sql.raw(op === '!=' ? '<>' : op);
}

function levelCondition(op: Cmp, value: LogLevel): SQL {
  const rank = LEVEL_RANK[value];
  const keep = LEVELS.filter((l) => {
    const r = LEVEL_RANK[l];
    switch (op) {
      case '=':
        return r === rank;
      case '!=':
        return r !== rank;
      case '>':
        return r > rank;
      case '>=':
        return r >= rank;
      case '<':
        return r < rank;
      case '<=':
        return r <= rank;
    }
  });
  if (keep.length === 0) return sql`false`;
  return sql`level in (${sql.join(
    keep.map((l) => sql`${l}`),
    sql`, `,
  )})`;
}

function nest(path: string[], leaf: unknown): unknown {
  return path.reduceRight<unknown>((acc, key) => ({ [key]: acc }), leaf);
}

function jsonPath(path: string[]): SQL {
  return sql`array[${sql.join(
    path.map((p) => sql`${p}`),
    sql`, `,
  )}]::text[]`;
}

/** Containment works for object keys only: a numeric path segment may be an array index, so those use `#>`. */
function dataEquals(path: string[], value: DataValue): SQL {
  const candidates: unknown[] =
    value.type === 'number'
      ? [Number(value.raw), value.raw]
      : value.type === 'boolean'
        ? [value.value, String(value.value)]
        : value.type === 'null'
          ? [null]
          : [value.value];
  if (path.some((p) => /^\d+$/.test(p))) {
    const at = sql`(data #> ${jsonPath(path)})`;
    return sql`(${sql.join(
      candidates.map((c) => sql`${at} = ${JSON.stringify(c)}::jsonb`),
      sql` or `,
    )})`;
  }
  return sql`(${sql.join(
    candidates.map((c) => sql`data @> ${JSON.stringify(nest(path, c))}::jsonb`),
    sql` or `,
  )})`;
}

function dataCompare(path: string[], op: Cmp, value: DataValue): SQL {
  const at = sql`(data #> ${jsonPath(path)})`;
  if (value.type === 'number') {
    // CASE guarantees the cast only sees numbers.
    return sql`(case when jsonb_typeof(${at}) = 'number' then (${at})::numeric ${cmp(op)} ${value.raw}::numeric end)`;
  }
  const text = value.type === 'string' ? value.value : '';
  return sql`(case when jsonb_typeof(${at}) = 'string' then (${at} #>> '{}') collate "C" ${cmp(op)} ${text} end)`;
}

export function toSql(node: QueryNode): SQL {
  switch (node.kind) {
    case 'and':
    case 'or':
      return sql`(${sql.join(node.items.map(toSql), node.kind === 'and' ? sql` and ` : sql` or `)})`;
    case 'not':
      // NULL (a missing step or data key) counts as "does not match", so its negation matches.
      return sql`not coalesce(${toSql(node.item)}, false)`;
    case 'text':
      return sql`message ilike ${`%${escapeLike(node.value)}%`}`;
    case 'regex':
      return node.caseInsensitive ? sql`message ~* ${node.pattern}` : sql`message ~ ${node.pattern}`;
    case 'level':
      return levelCondition(node.op, node.value);
    case 'step':
      return node.prefix ? sql`step like ${`${escapeLike(node.value)}%`}` : sql`step = ${node.value}`;
    case 'attempt':
      return sql`attempt ${cmp(node.op)} ${node.value}`;
    case 'data':
      if (node.op === '=') return dataEquals(node.path, node.value);
      if (node.op === '!=') return sql`not coalesce(${dataEquals(node.path, node.value)}, false)`;
      return dataCompare(node.path, node.op, node.value);
    case 'time':
      return sql`created_at ${cmp(node.op)} ${node.at.toISOString()}::timestamptz`;
    case 'last':
      return sql`created_at >= now() - ${node.ms} * interval '1 millisecond'`;
  }
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
