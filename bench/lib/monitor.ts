/**
 * The benchmark's own connections to the cluster, as a role of their own (MONITOR_USER), so that its statements can be
 * told apart in pg_stat_statements (by userid) and its backends in /proc (by process title). Every statement a `Target`
 * sends on a measured database is counted: each is one transaction, subtracted from that database's xact_commit.
 */
import pg from 'pg';

export const MONITOR_USER = 'bench_monitor';

export interface StatementRow {
  query: string;
  calls: number;
}

/** A monitor connection to one measured database. `transactions` counts what it committed there. */
export class Target {
  transactions = 0;
  constructor(
    readonly database: string,
    private readonly client: pg.Client,
  ) {}

  /** One statement (or several separated by `;` without parameters: one implicit transaction), counted. */
  async query<T = Record<string, any>>(text: string, values?: unknown[]): Promise<T[]> {
    this.transactions++;
    return (await this.client.query(text, values)).rows as T[];
  }

  /** Flushes this session's pending statistics now (else a backend may hold them back up to 10 s after going idle). */
  async flush(): Promise<void> {
    await this.query('select pg_stat_force_next_flush()');
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => {});
  }
}

export class Monitor {
  private readonly targets = new Map<string, Target>();

  private constructor(
    private readonly url: (database: string, user?: string) => string,
    private readonly admin: pg.Client,
  ) {}

  /**
   * Creates the monitor role (superuser, so it sees every statistic) and pg_stat_statements, through a `postgres`
   * connection of the cluster, then connects as the monitor to the `postgres` database.
   */
  static async open(url: (database: string, user?: string) => string): Promise<Monitor> {
    const setup = new pg.Client({ connectionString: url('postgres') });
    await setup.connect();
    try {
      await setup.query(`create role ${MONITOR_USER} login superuser`);
      await setup.query('create extension if not exists pg_stat_statements');
    } finally {
      await setup.end();
    }
    const admin = new pg.Client({ connectionString: url('postgres', MONITOR_USER), application_name: 'bench-monitor' });
    await admin.connect();
    return new Monitor(url, admin);
  }

  async sql<T = Record<string, any>>(text: string, values?: unknown[]): Promise<T[]> {
    return (await this.admin.query(text, values)).rows as T[];
  }

  async createDatabase(name: string): Promise<void> {
    await this.sql(`create database ${name}`);
  }

  /** The monitor connection to a measured database (opened once). */
  async target(database: string): Promise<Target> {
    let target = this.targets.get(database);
    if (!target) {
      const client = new pg.Client({ connectionString: this.url(database, MONITOR_USER), application_name: 'bench-monitor' });
      await client.connect();
      target = new Target(database, client);
      this.targets.set(database, target);
    }
    return target;
  }

  async resetStatements(): Promise<void> {
    await this.sql('select pg_stat_statements_reset()');
  }

  /** Top-level statements run on `database` by anybody but the monitor since the last reset, most called first. */
  async statements(database: string): Promise<StatementRow[]> {
    return this.sql<StatementRow>(
      `select s.query, sum(s.calls)::float8 as calls
         from pg_stat_statements s
         join pg_database d on d.oid = s.dbid
         join pg_roles r on r.oid = s.userid
        where d.datname = $1 and r.rolname <> $2 and s.toplevel
        group by s.query
        order by calls desc`,
      [database, MONITOR_USER],
    );
  }

  /** pg_stat_database.xact_commit of a database (as flushed so far). */
  async xactCommit(database: string): Promise<number> {
    const [row] = await this.sql<{ n: number }>(`select xact_commit::float8 as n from pg_stat_database where datname = $1`, [database]);
    return row?.n ?? 0;
  }

  /** Backends connected to `database` other than the monitor's. */
  async otherBackends(database: string): Promise<number> {
    const [row] = await this.sql<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = $1 and usename <> $2 and backend_type = 'client backend'`,
      [database, MONITOR_USER],
    );
    return row.n;
  }

  /** Waits until only the monitor is connected to `database` (a backend flushes its statistics when it exits). */
  async waitForNoBackends(database: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.otherBackends(database)) > 0) {
      if (Date.now() > deadline) throw new Error(`connections to ${database} still open after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    for (const target of this.targets.values()) await target.close();
    this.targets.clear();
    await this.admin.end().catch(() => {});
  }
}
