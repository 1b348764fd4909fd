/**
 * The SQL kernel every store builds on: the statement executor, the tenant key and its one predicate, the timestamp
 * projection and the id helpers. Statements are drizzle `sql` templates; rows come back as plain objects.
 */
import { type SQL, sql } from 'drizzle-orm';

/**
 * A statement of the run engine's hot path, written once as SQL text with `$1…$n` placeholders. On PostgreSQL it is a
 * named prepared statement: each pooled connection parses and plans it once, then only binds values (a drizzle `sql`
 * template is parsed and planned by the server on every call). On PGlite it runs like any other statement.
 */
export interface Prepared {
  /** Unique per text: `pg` prepares it under this name on each connection. */
  readonly name: string;
  readonly text: string;
  readonly values: readonly unknown[];
}

/** A prepared statement's text and name, bound to values at each call: `const claim = prepared('claim', 'select …')`. */
export function prepared(name: string, text: string): (...values: unknown[]) => Prepared {
  const compact = text.replace(/\s+/g, ' ').trim();
  return (...values) => ({ name: `mercato_${name}`, text: compact, values });
}

export const isPrepared = (statement: SQL | Prepared): statement is Prepared =>
  typeof (statement as Prepared).text === 'string' && typeof (statement as Prepared).name === 'string';

/**
 * A prepared statement as a drizzle `sql` template (PGlite and drizzle transactions run it that way): each `$n` becomes
 * a parameter with the n-th value.
 */
export function preparedAsSql(p: Prepared): SQL {
  const parts = p.text.split(/\$(\d+)/);
  let out = sql.raw(parts[0]);
  for (let i = 1; i < parts.length; i += 2) out = sql`${out}${p.values[Number(parts[i]) - 1]}${sql.raw(parts[i + 1])}`;
  return out;
}

/**
 * Runs one statement and returns its rows: `db.query` outside a transaction, or the `exec` that `db.transaction(fn)`
 * hands to `fn`. A failing statement rejects with the driver's own error (its SQLSTATE in `code`, see `dbErrorCode`).
 */
export type Exec = <T = Record<string, any>>(statement: SQL | Prepared) => Promise<T[]>;

/**
 * The tenant key of every tenant-owned row: an app and a shop. `shop` is null for app-level data (a global run, its
 * steps and logs); `Tenant<string>` is the tenant of one shop (an authenticated /api request, an installation, an MCP
 * token, a provider config).
 */
export interface Tenant<Shop extends string | null = string | null> {
  appHandle: string;
  shop: Shop;
}

/**
 * The tenant predicate: `app_handle = $1 and shop = $2`, or `app_handle = $1 and shop is null` for an app-level tenant.
 * Plain equality, never `shop is not distinct from $2`, which no btree index can serve: the (app_handle, shop, …)
 * indexes are used.
 */
export function tenantWhere(t: Tenant): SQL {
  return t.shop == null ? sql`app_handle = ${t.appHandle} and shop is null` : sql`app_handle = ${t.appHandle} and shop = ${t.shop}`;
}

/**
 * A timestamp expression as an ISO 8601 string (`to_json(x) #>> '{}'`): the same text on PGlite and PostgreSQL, not a
 * Date parsed by the driver. `expression` is SQL text (a column, `now()`, `max(…)`), never user input.
 */
export function isoTs(expression: string): SQL {
  return sql.raw(`to_json(${expression}) #>> '{}'`);
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID in its text form (run ids, MCP token ids): check before a `::uuid` cast, which fails on anything else. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID_RE.test(value);

/** `$1::uuid, $2::uuid, …` for an `in (…)` list; the ids must be UUIDs (`isUuid`). */
export function uuidList(ids: readonly string[]): SQL {
  return sql.join(
    ids.map((id) => sql`${id}::uuid`),
    sql`, `,
  );
}

/** The database clock: `now()` of the statement's transaction, identical for every process that asks the same server. */
export async function databaseNow(exec: Exec): Promise<Date> {
  const [row] = await exec<{ now: string }>(sql`select ${isoTs('now()')} as now`);
  return new Date(row!.now);
}
