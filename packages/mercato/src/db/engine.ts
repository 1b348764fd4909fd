/**
 * One SQL dialect, two engines: PGlite (embedded, file-backed) when no DATABASE_URL is given,
 * PostgreSQL through `pg` when it is. Both offer the same raw-SQL interface (`query`, `transaction`, `exec`, NOTIFY and
 * LISTEN); Mercato's own code outside `db/` uses only that. The Drizzle handle (`orm`) stays for user code (docs/mcp.md).
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { SQL } from 'drizzle-orm';
import { lockDataDir } from './data-dir-lock.ts';
import { seedFromTemplate, templateDump } from './pglite-template.ts';
import { type Exec, type Prepared, isPrepared, preparedAsSql } from './sql.ts';

export type Orm = PgDatabase<PgQueryResultHKT, Record<string, never>>;
export type EngineKind = 'pglite' | 'postgres';

export interface Database {
  readonly kind: EngineKind;
  /** PGlite only: this opening made the database, from the package's migrated template (db/pglite-template.ts). */
  readonly fromTemplate?: boolean;
  /** Drizzle over the engine's native driver, for user code (MCP tools); Mercato's own code uses query and transaction. */
  readonly orm: Orm;
  /**
   * Run a raw SQL statement (drizzle `sql` template) and return its rows, normalised across drivers. It is an `Exec`:
   * it may be passed on detached (`isInstalled(db.query, …)`).
   */
  query<T = Record<string, unknown>>(statement: SQL | Prepared): Promise<T[]>;
  /**
   * Run `fn` in one transaction: its statements go through the `exec` it is given; the transaction commits when `fn`
   * resolves and rolls back when it throws. Rejects with what `fn` threw, or with the driver's own error.
   */
  transaction<T>(fn: (exec: Exec) => Promise<T>): Promise<T>;
  /** Run several statements separated by semicolons, without parameters (migrations, test resets). */
  exec(sqlText: string): Promise<void>;
  /** Send a notification on a channel (in the current session; transactional NOTIFY is done in SQL). */
  notify(channel: string, payload?: string): Promise<void>;
  /**
   * Listen on a channel; resolves to a function that stops listening. On PostgreSQL the LISTEN connection can drop
   * (server restart, failover, network): the engine reconnects by itself with backoff and listens on every channel
   * again. Notifications sent while it was away are lost, so `events.onLost` and `events.onRestored` let the listener
   * distrust what it caches and catch up (poll once) when the connection is back.
   */
  listen(channel: string, onMessage: (payload: string) => void, events?: ListenEvents): Promise<() => Promise<void>>;
  /** True when the database answers `select 1`. */
  ping(): Promise<boolean>;
  /** PostgreSQL only: the connection pool right now (the metrics); undefined on PGlite, which is one connection. */
  readonly poolStats?: () => PoolStats;
  /**
   * PostgreSQL only: a connection of its own, outside the pool, for session-level state such as advisory locks.
   * `onLost` is called when the server drops it (its session locks are then released). Undefined on PGlite.
   */
  readonly openSession?: (purpose: string, onLost?: () => void) => Promise<DedicatedSession>;
  close(): Promise<void>;
}

export interface PoolStats {
  /** Connections the pool may open (`poolSize`). */
  max: number;
  /** Open connections lent out. */
  inUse: number;
  /** Open connections waiting to be lent. */
  idle: number;
  /** Queries waiting for a connection (every one is in use). */
  waiting: number;
}

export interface ListenEvents {
  /** The LISTEN connection dropped: notifications are not heard until `onRestored`. */
  onLost?: () => void;
  /** The LISTEN connection is back and listens on the channel again; notifications in between were lost. */
  onRestored?: () => void;
}

/** What the engine says about its LISTEN connection (a logger's warn and info fit). */
export interface EngineLog {
  warn(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
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
  /** Where the loss and the return of the LISTEN connection are logged (PostgreSQL only). */
  log?: EngineLog;
  /** Backoff of LISTEN reconnects: first wait and cap in ms (default 100 and 5000, doubling with jitter). */
  listenBackoffMs?: { initial: number; max: number };
  /**
   * PGlite with a data directory that holds no database yet: start it as a copy of this template folder
   * (pglite-template.ts; default the package's own, made by the build), or `false` to run initdb. PGlite in memory
   * loads the template only when one is named here (its dump), else runs initdb.
   */
  template?: string | false;
}

export async function openDatabase(options: OpenOptions = {}): Promise<Database> {
  if (options.url) return openPostgres(options.url, options);
  return openPglite(options.dataDir, options.template);
}

/** The executor over drizzle or one of its transactions: rethrows the driver's own error (with its SQLSTATE `code`) instead of drizzle's wrapper. */
function executorOf(runner: Pick<Orm, 'execute'>, direct?: (p: Prepared) => Promise<{ rows: unknown[] }>): Exec {
  return async <T>(statement: SQL | Prepared) => {
    try {
      if (isPrepared(statement)) {
        if (direct) return (await direct(statement)).rows as T[];
        return ((await runner.execute(preparedAsSql(statement))) as unknown as { rows: T[] }).rows;
      }
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

/**
 * `Database.transaction` on PostgreSQL, on a client of its own: BEGIN, COMMIT and ROLLBACK inside one try/finally, so
 * a client whose connection broke (a server restart between two statements, a failed BEGIN) is always released, with
 * the error, and the pool discards it instead of lending it again or losing it (drizzle's own transaction does not
 * release a client whose BEGIN failed: after a few restarts the pool was exhausted).
 */
function pgTransactions(pool: import('pg').Pool, drizzle: typeof import('drizzle-orm/node-postgres').drizzle): Database['transaction'] {
  return async (fn) => {
    const client = await pool.connect().catch((error: unknown) => {
      throw unwrapDbError(error);
    });
    let broken: Error | undefined;
    const failed = (error: unknown) => {
      broken = error instanceof Error ? error : new Error(String(error));
      return unwrapDbError(error);
    };
    try {
      await client.query('begin').catch((error: unknown) => {
        throw failed(error);
      });
      let result;
      try {
        result = await fn(
          executorOf(drizzle({ client }) as unknown as Orm, (p) => client.query({ name: p.name, text: p.text, values: [...p.values] })),
        );
      } catch (error) {
        await client.query('rollback').catch(failed);
        throw unwrapDbError(error);
      }
      await client.query('commit').catch((error: unknown) => {
        throw failed(error);
      });
      return result;
    } finally {
      client.release(broken);
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

async function openPglite(dataDir?: string, template?: string | false): Promise<Database> {
  const [{ PGlite }, { pg_trgm }, { drizzle }] = await Promise.all([
    import('@electric-sql/pglite'),
    // pg_trgm backs the trigram indexes of log search (a migration creates the extension on both engines).
    import('@electric-sql/pglite/contrib/pg_trgm'),
    import('drizzle-orm/pglite'),
  ]);
  let unlock = () => {};
  let seeded = false;
  if (dataDir) {
    mkdirSync(dirname(resolve(dataDir)), { recursive: true });
    unlock = lockDataDir(dataDir); // one process at a time (data-dir-lock.ts)
    try {
      // a new database as a copy of the package's migrated template, not initdb (pglite-template.ts)
      // MERCATO_PGLITE_TEMPLATE=0 turns the template off (docs/environment.md): initdb, then every migration
      if (template !== false && process.env.MERCATO_PGLITE_TEMPLATE !== '0') seeded = seedFromTemplate(dataDir, template);
      mkdirSync(dataDir, { recursive: true });
    } catch (error) {
      unlock();
      throw error;
    }
  }
  let client: InstanceType<typeof PGlite>;
  try {
    // in memory, a named template's dump is loaded instead of initdb (the test suite's databases)
    const loadDataDir = !dataDir && typeof template === 'string' ? templateDump(template) : undefined;
    if (loadDataDir) seeded = true;
    client = new PGlite({ dataDir, extensions: { pg_trgm }, loadDataDir });
    await client.waitReady;
  } catch (error) {
    unlock();
    throw error;
  }
  const orm = drizzle({ client }) as unknown as Orm;
  let closed = false;
  return {
    kind: 'pglite',
    fromTemplate: seeded,
    orm,
    query: executorOf(orm, (p) => client.query(p.text, [...p.values])),
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
      try {
        await client.close();
      } finally {
        unlock();
      }
    },
  };
}

async function openPostgres(url: string, options: OpenOptions): Promise<Database> {
  const pg = (await import('pg')).default;
  const { drizzle } = await import('drizzle-orm/node-postgres');
  // bigint (int8) as number, numeric stays string; timestamps parsed by pg as Date.
  pg.types.setTypeParser(20, (v: string) => Number(v));
  // a server that drops packets instead of refusing: fail the connect after 10 s (answered 503) rather than hang
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    application_name: options.applicationName ?? 'mercato',
    connectionTimeoutMillis: 10_000,
  });
  pool.on('error', () => {
    /* idle client errors (server restart): the pool replaces the client */
  });
  // A client checked out of the pool (inside a transaction, between two statements) has no listener of the pool's: a
  // server restart would raise an uncaught 'error' event and end the process. The statement in flight rejects to its
  // caller anyway; the broken client is released with that error and discarded.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  const orm = drizzle({ client: pool }) as unknown as Orm;
  let closed = false;
  const listening = listenerOf(pg, url, options, () => closed);

  return {
    kind: 'postgres',
    orm,
    query: executorOf(orm, (p) => pool.query({ name: p.name, text: p.text, values: [...p.values] })),
    transaction: pgTransactions(pool, drizzle),
    async exec(sqlText) {
      await pool.query(sqlText);
    },
    async notify(channel, payload = '') {
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
    listen: listening.listen,
    ping: () => answers(() => pool.query('select 1')),
    poolStats: () => ({
      max: options.poolSize ?? 10,
      inUse: pool.totalCount - pool.idleCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
    }),
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
      await listening.close();
      await pool.end();
    },
  };
}

/**
 * The one LISTEN connection of a PostgreSQL engine. It is opened on the first `listen()`; when it drops (server restart,
 * failover, network) it is opened again with backoff (initial, doubling with jitter, capped), LISTEN is sent again for
 * every channel with a handler, and each handler's `onRestored` runs so it can catch up. The loss and the return are
 * logged once each.
 */
function listenerOf(pg: typeof import('pg').default, url: string, options: OpenOptions, isClosed: () => boolean) {
  type Handler = { onMessage: (payload: string) => void; events?: ListenEvents };
  const handlers = new Map<string, Set<Handler>>();
  const backoff = options.listenBackoffMs ?? { initial: 100, max: 5000 };
  let client: import('pg').Client | undefined;
  let connecting: Promise<import('pg').Client> | undefined;
  let lostAt: number | undefined;
  let retryTimer: NodeJS.Timeout | undefined;

  const each = (fn: (h: Handler) => void) => {
    for (const set of handlers.values()) for (const h of set) fn(h);
  };

  async function connect(): Promise<import('pg').Client> {
    const c = new pg.Client({ connectionString: url, application_name: `${options.applicationName ?? 'mercato'}-listen` });
    c.on('error', () => lost(c));
    c.on('end', () => lost(c));
    await c.connect();
    c.on('notification', (msg) => {
      for (const h of handlers.get(msg.channel) ?? []) h.onMessage(msg.payload ?? '');
    });
    for (const channel of handlers.keys()) await c.query(`LISTEN ${quoteIdent(channel)}`);
    return c;
  }

  function open(): Promise<import('pg').Client> {
    if (client) return Promise.resolve(client);
    connecting ??= connect().then(
      (c) => {
        connecting = undefined;
        if (isClosed()) {
          void c.end().catch(() => {});
          throw new Error('the database is closed');
        }
        client = c;
        return c;
      },
      (error: unknown) => {
        connecting = undefined;
        throw error;
      },
    );
    return connecting;
  }

  function lost(c: import('pg').Client) {
    if (client !== c) return;
    client = undefined;
    void c.end().catch(() => {});
    if (isClosed()) return;
    lostAt = Date.now();
    options.log?.warn({ channels: [...handlers.keys()] }, 'database LISTEN connection lost; reconnecting (polling covers the gap)');
    each((h) => h.events?.onLost?.());
    reconnect(0);
  }

  function reconnect(attempt: number) {
    const base = Math.min(backoff.max, backoff.initial * 2 ** attempt);
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      if (isClosed() || client) return;
      open().then(
        () => {
          options.log?.info(
            { channels: [...handlers.keys()], downMs: lostAt === undefined ? undefined : Date.now() - lostAt, attempts: attempt + 1 },
            'database LISTEN connection restored; listening on every channel again',
          );
          lostAt = undefined;
          each((h) => h.events?.onRestored?.());
        },
        () => reconnect(attempt + 1),
      );
    }, delay);
    retryTimer.unref?.();
  }

  return {
    async listen(channel: string, onMessage: (payload: string) => void, events?: ListenEvents) {
      const handler: Handler = { onMessage, events };
      let set = handlers.get(channel);
      const isNew = !set;
      if (!set) handlers.set(channel, (set = new Set()));
      set.add(handler);
      try {
        if (retryTimer) {
          // reconnecting: the new connection will LISTEN on this channel too; until then the handler hears nothing
          events?.onLost?.();
        } else {
          const c = await open();
          if (isNew) await c.query(`LISTEN ${quoteIdent(channel)}`);
        }
      } catch (error) {
        set.delete(handler);
        if (set.size === 0) handlers.delete(channel);
        throw error;
      }
      return async () => {
        set.delete(handler);
        if (set.size === 0 && handlers.get(channel) === set) {
          handlers.delete(channel);
          if (!isClosed() && client) await client.query(`UNLISTEN ${quoteIdent(channel)}`).catch(() => {});
        }
      };
    },
    async close() {
      clearTimeout(retryTimer);
      const c = client ?? (await connecting?.catch(() => undefined));
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
