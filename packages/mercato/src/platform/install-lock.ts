/**
 * Mutual exclusion of installations across processes, without a transaction open during the token exchange.
 *
 * PostgreSQL: a session-level advisory lock per (app, shop), taken with `pg_try_advisory_lock` on one dedicated
 * connection per process — outside the pool, opened while at least one installation of the process is under way and
 * closed after the last. The try-lock never blocks that shared connection: a process whose lock is taken elsewhere
 * polls until it gets it (the holder then has finished: the caller re-checks the installation) or gives up.
 * If the connection is lost the locks go with it; the installation upsert is idempotent, so the worst case is a second
 * exchange, never a broken row.
 *
 * PGlite: one process owns the database, so the in-memory promise of the installer is enough: no lock.
 */
import type { Database, DedicatedSession } from '../db/engine.ts';
import { sleep } from './admin-client.ts';
import { advisoryUnlock, tryAdvisoryLock } from './store.ts';

const POLL_MS = 100;

export interface InstallLocks {
  /** Runs `fn` holding the lock of `key`; 'busy' when another process held it for `waitMs`. */
  exclusive<T>(key: string, waitMs: number, fn: () => Promise<T>): Promise<T | 'busy'>;
}

export function installLocks(db: Database): InstallLocks | undefined {
  const openSession = db.openSession;
  if (!openSession) return undefined;
  let connection: Promise<DedicatedSession> | undefined;
  let users = 0;

  const connect = (): Promise<DedicatedSession> => {
    const opened: Promise<DedicatedSession> = openSession('install-lock', () => {
      // connection lost: the server released its locks; the next installation opens a new one
      if (connection === opened) connection = undefined;
    });
    return opened;
  };
  const open = (): Promise<DedicatedSession> => {
    users++;
    connection ??= connect();
    return connection;
  };
  const close = async () => {
    if (--users > 0 || !connection) return;
    const last = connection;
    connection = undefined;
    await last.then((c) => c.close()).catch(() => {});
  };

  return {
    async exclusive(key, waitMs, fn) {
      const id = `installation/${key}`;
      try {
        const client = await open();
        const deadline = Date.now() + waitMs;
        for (;;) {
          if (await tryAdvisoryLock(client, id)) break;
          if (Date.now() >= deadline) return 'busy';
          await sleep(POLL_MS);
        }
        try {
          return await fn();
        } finally {
          await advisoryUnlock(client, id).catch(() => {});
        }
      } finally {
        await close();
      }
    },
  };
}
