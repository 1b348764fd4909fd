/**
 * One SQL dialect, two engines: PGlite (embedded, file-backed) when no DATABASE_URL is given,
 * PostgreSQL through `pg` when it is. Both offer the same raw-SQL interface (`query`, `transaction`, `exec`, NOTIFY and
 * LISTEN); Mercato's own code outside `db/` uses only that. The Drizzle handle (`orm`) stays for user code (docs/mcp.md).
 */
import { mkdirSync } from 'node:fs';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { SQL } from 'drizzle-orm';
import type { Exec } from './sql.ts';

export type Orm = PgDatabase<PgQueryResultHKT, Record<string, never>>;
export type EngineKind = 'pglite' | 'postgres';

export interface Database {
  readonly kind: EngineKind;
  /** Drizzle over the engine's native driver, for user code (MCP tools); Mercato's own code uses query and transaction. */
  readonly orm: Orm;
  /**
   * Run a raw SQL statement (drizzle `sql` template) and return its rows, normalised across drivers. It is an `Exec`:
   * it may be passed on detached (`isInstalled(db.query, …)`).
   */
  query<T = Record<string, unknown>>(statement: SQL): Promise<T[]>;
  /**
   * Run `fn` in one transaction: its statements go through the `exec` it is given; the transaction commits when `fn`
   * resolves and rolls back when it throws. Rejects with what `fn` threw, or with the driver's own error.
   */
  transaction<T>(fn: (exec: Exec) => Promise<T>): Promise<T>;
  /** Run several statements separated by semicolons, without parameters (migrations, test resets). */
  exec(sqlText: string): Promise<void>;
  /** Send a notification on a channel (in the current session; transactional NOTIFY is done in SQL). */
  notify(channel: string, payload?: string): Promise<void>;
  /** Listen on a channel; resolves to a function that stops listening. */
  listen(channel: string, onMessage: (payload: string) => void): Promise<() => Promise<void>>;
  /** True when the database answers `select 1`. */
  ping(): Promise<boolean>;
  /**
   * PostgreSQL only: a connection of its own, outside the pool, for session-level state such as advisory locks.
   * `onLost` is called when the server drops it (its session locks are then released). Undefined on PGlite.
   */
  readonly openSession?: (purpose: string, onLost?: () => void) => Promise<DedicatedSession>;
  close(): Promise<void>;
}

export interface DedicatedSession {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** PostgreSQL connection string. Without it, PGlite is used. */
  url?: string;
  /** PGlite data directory; omit for an in-memory database. */
  dataDir?: string;
  /** pg pool size (PostgreSQL only). Default 10. */
  poolSize?: number;
  /** Application name shown in pg_stat_activity. */
  applicationName?: string;
}

export async function openDatabase(options: OpenOptions = {}): Promise<Database> {
  if (options.url) return openPostgres(options.url, options);
  return openPglite(options.dataDir);
}

/** The executor over drizzle or one of its transactions: rethrows the driver's own error (with its SQLSTATE `code`) instead of drizzle's wrapper. */
function executorOf(runner: Pick<Orm, 'execute'>): Exec {
  return async <T>(statement: SQL) => {
    try {
      return ((await runner.execute(statement)) as unknown as { rows: T[] }).rows;
    } catch (error) {
      throw unwrapDbError(error);
    }
  };
}

/** `Database.transaction` over drizzle's: one executor per transaction; a failed BEGIN or COMMIT is unwrapped too. */
function transactionsOf(orm: Orm): Database['transaction'] {
  return async (fn) => {
    try {
      return await orm.transaction((tx) => fn(executorOf(tx)));
    } catch (error) {
      throw unwrapDbError(error);
    }
  };
}

/** The driver error behind a drizzle error, when there is one. */
export function unwrapDbError(error: unknown): unknown {
  const cause = (error as { cause?: unknown })?.cause;
  return cause && typeof cause === 'object' && 'code' in cause ? cause : error;
}

/** SQLSTATE of a database error, if any (23505 = unique violation, 40001 = serialization failure, ...). */
export function dbErrorCode(error: unknown): string | undefined {
  const e = unwrapDbError(error) as { code?: unknown };
  return typeof e?.code === 'string' ? e.code : undefined;
}

/** True when the query succeeds (health checks). */
async function answers(query: () => Promise<unknown>): Promise<boolean> {
  try {
    await query();
    return true;
  } catch {
    return false;
  }
}

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/i.test(name)) throw new Error(`invalid channel name: ${name}`);
  return `"${name}"`;
}

async function openPglite(dataDir?: string): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  // pg_trgm backs the trigram indexes of log search (a migration creates the extension on both engines).
  const { pg_trgm } = await import('@electric-sql/pglite/contrib/pg_trgm');
  const { drizzle } = await import('drizzle-orm/pglite');
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const client = new PGlite({ dataDir, extensions: { pg_trgm } });
  await client.waitReady;
  const orm = drizzle({ client }) as unknown as Orm;
  let closed = false;
  return {
    kind: 'pglite',
    orm,
    query: executorOf(orm),
    transaction: transactionsOf(orm),
    async exec(sqlText) {
      await client.exec(sqlText);
    },
    async notify(channel, payload = '') {
      await client.query(`select pg_notify($1, $2)`, [channel, payload]);
    },
    async listen(channel, onMessage) {
      const unsubscribe = await client.listen(channel, (payload) => onMessage(payload));
      return async () => {
        if (!closed) await unsubscribe();
      };
    },
    ping: () => answers(() => client.query('select 1')),
    async close() {
      if (closed) return;
      closed = true;
      await client.close();
    },
  };
}

async function openPostgres(url: string, options: OpenOptions): Promise<Database> {
  const pg = (await import('pg')).default;
  const { drizzle } = await import('drizzle-orm/node-postgres');
  // bigint (int8) as number, numeric stays string; timestamps parsed by pg as Date.
  pg.types.setTypeParser(20, (v: string) => Number(v));
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10, application_name: options.applicationName ?? 'mercato' });
  pool.on('error', () => {
    /* idle client errors (server restart): the pool replaces the client */
  });
  const orm = drizzle({ client: pool }) as unknown as Orm;
  let listener: import('pg').Client | undefined;
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let closed = false;

  async function getListener() {
    if (listener) return listener;
    const client = new pg.Client({ connectionString: url, application_name: `${options.applicationName ?? 'mercato'}-listen` });
    await client.connect();
    client.on('notification', (msg) => {
      for (const fn of handlers.get(msg.channel) ?? []) fn(msg.payload ?? '');
    });
    client.on('error', () => {
      /* connection lost: the poll backstop keeps workers going; a later listen() reconnects */
      listener = undefined;
    });
    listener = client;
    return client;
  }

  return {
    kind: 'postgres',
    orm,
    query: executorOf(orm),
    transaction: transactionsOf(orm),
    async exec(sqlText) {
      await pool.query(sqlText);
    },
    async notify(channel, payload = '') {
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
    async listen(channel, onMessage) {
      const client = await getListener();
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await client.query(`LISTEN ${quoteIdent(channel)}`);
      }
      set.add(onMessage);
      return async () => {
        set!.delete(onMessage);
        if (set!.size === 0 && !closed && listener) {
          handlers.delete(channel);
          await listener.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => {});
        }
      };
    },
    ping: () => answers(() => pool.query('select 1')),
    async openSession(purpose, onLost) {
      const client = new pg.Client({ connectionString: url, application_name: `${options.applicationName ?? 'mercato'}-${purpose}` });
      client.on('error', () => onLost?.());
      await client.connect();
      return {
        async query<T>(text: string, params?: unknown[]) {
          return (await client.query(text, params)).rows as T[];
        },
        close: () => client.end().catch(() => {}),
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      await listener?.end().catch(() => {});
      await pool.end();
    },
  };
}
