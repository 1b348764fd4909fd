/**
 * The authentication cache: the token rows the endpoint has read, so a request of a known token costs no database read.
 * Correctness rests on three things (docs/mcp.md, "Token secrets"):
 *  - every change of a token (edit, permissions, rotate, revoke) drops its entry at once in this process (the cache is
 *    shared by everything in the process that uses the same Database) and sends a NOTIFY that drops it in the others;
 *  - entries are only used while this process listens for those notifications;
 *  - an entry is re-read after a short time (2 s by default) anyway, in case a notification was lost.
 * The secret is never cached: each request still computes the HMAC and compares it in constant time.
 */
import type { Database } from '../db/engine.ts';
import type { Logger } from '../logger.ts';
import type { TokenAuthRow } from './store.ts';

export const TOKENS_CHANNEL = 'mercato_mcp_tokens';
export const AUTH_CACHE_TTL_MS = 2000;
const MAX_ENTRIES = 10_000;

export interface AuthEntry {
  row: TokenAuthRow;
  /** Local time the row was read. */
  loadedAt: number;
  /** Local deadline of the token's expiry (computed from the database clock's remaining time); null = never. */
  expiresAt: number | null;
  /** Local time from which lastUsedAt is due for a write. */
  nextTouchAt: number;
}

export interface AuthCache {
  /** A fresh entry, or undefined (missing, older than `ttlMs`, or not listening for invalidations). */
  get(id: string, now: number, ttlMs: number): AuthEntry | undefined;
  /** Stores an entry read when `epoch()` was `readAt` (dropped if an invalidation happened meanwhile). */
  set(id: string, entry: AuthEntry, readAt: number): void;
  /** Drops an entry here and tells the other processes (after the change is committed). */
  invalidate(id: string): Promise<void>;
  /** Increases on every invalidation. */
  epoch(): number;
  /** Starts listening for invalidations (otherwise started by the first `get`); settles once listening or refused. */
  ready(): Promise<void>;
}

const caches = new WeakMap<Database, AuthCache>();

export function authCacheFor(db: Database, logger: Logger): AuthCache {
  let cache = caches.get(db);
  if (cache) return cache;
  const entries = new Map<string, AuthEntry>();
  let epoch = 0;
  let listening = false;
  let starting: Promise<void> | undefined;
  let connected = true;
  const drop = (id: string) => {
    epoch++;
    entries.delete(id);
  };
  const listen = () => {
    starting ??= db
      .listen(TOKENS_CHANNEL, drop, {
        // while the LISTEN connection is away, invalidations from other processes are not heard: cache nothing
        onLost: () => {
          connected = false;
          listening = false;
          epoch++;
          entries.clear();
        },
        onRestored: () => {
          connected = true;
          epoch++;
          entries.clear();
          listening = true;
        },
      })
      .then(
        () => {
          listening = connected;
        },
        (error: unknown) => {
          starting = undefined;
          logger.warn(
            { err: error },
            'MCP token cache: cannot listen for invalidations; reading tokens from the database on every request',
          );
        },
      );
  };
  cache = {
    get(id, now, ttlMs) {
      if (!listening) {
        listen();
        return undefined;
      }
      const entry = entries.get(id);
      if (entry && now - entry.loadedAt <= ttlMs) return entry;
      return undefined;
    },
    set(id, entry, readAt) {
      if (!listening || readAt !== epoch) return;
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      entries.set(id, entry);
    },
    async invalidate(id) {
      drop(id);
      try {
        await db.notify(TOKENS_CHANNEL, id);
      } catch (error) {
        logger.warn(
          { err: error, tokenId: id },
          'MCP token cache: could not notify other processes (they re-read the token within seconds)',
        );
      }
    },
    epoch: () => epoch,
    async ready() {
      if (listening) return;
      listen();
      await starting;
    },
  };
  caches.set(db, cache);
  return cache;
}
