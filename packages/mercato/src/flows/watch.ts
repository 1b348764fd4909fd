/**
 * Live updates of a run for the admin UI, by long polling (the route is watch-router.ts).
 *
 * A watch answers at once with `{ changed: true, version, run, lastLogId }` when the run's version differs from `since`
 * (or `since` is absent), else waits until it changes or the timeout passes (`{ changed: false, version }`). The version
 * covers the run row (updated_at, status), its steps and its newest log line.
 *
 * Changes are noticed by polling, only while someone watches: one statement per process every 250 ms reads the change
 * marks of every watched run (`watchMarks`), whichever process (HTTP server or worker) made the change, and wakes the
 * watchers of the runs whose mark moved; they then read the full run. No NOTIFY is sent by the engine's writes (issue 18:
 * a notifying commit holds PostgreSQL's cluster-wide notify lock through its WAL flush, which serialized every worker
 * commit), so a change is seen within one interval plus a read, and an idle server costs nothing.
 */
import type { Database } from '../db/engine.ts';
import { type Tenant, isUuid } from '../db/sql.ts';
import { NotFoundError } from '../errors.ts';
import { type RunRecord, tenantWatchMarks, watchMarks, watchedRun } from './store/runs.ts';
import { type StepRecord, listSteps } from './store/steps.ts';

export { WATCH_DEFAULT_TIMEOUT_S, WATCH_MAX_TIMEOUT_S } from './schemas.ts';

/** How often the watched runs' marks are read while at least one watch waits. */
export const WATCH_POLL_MS = 250;

export interface WatchDeps {
  db: Database;
  /** Registers the hub's cleanup (wake the watchers, stop polling) with the runtime. */
  onClose?: (fn: () => Promise<void>) => void;
  /** Default WATCH_POLL_MS. */
  pollMs?: number;
}

interface Snapshot {
  run: RunRecord & { steps: StepRecord[] };
  version: string;
  lastLogId: number;
}

/** GET /api/runs/watch: whether the tenant's runs changed since `since`, and their version now. */
export interface TenantWatchAnswer {
  changed: boolean;
  version: string;
}

export type WatchAnswer =
  { changed: true; version: string; run: RunRecord & { steps: StepRecord[] }; lastLogId: number } | { changed: false; version: string };

/**
 * The watchers of one process, per key (a run id, or a tenant's key for its runs lists), and the one poller that serves
 * them all. The poller runs only while a watcher waits. A key's first mark after it is subscribed wakes its watchers once
 * (they re-read and wait again when nothing changed), so a change between a watcher's first read and the first poll is
 * not missed. Its cleanup is registered with the runtime at the first watch, so it runs before the HTTP server's close
 * (closers run newest first): closing wakes every waiting watcher, which answers at once instead of holding the server's
 * shutdown for the rest of its timeout.
 */
function createHub(db: Database, pollMs: number, onClose?: (fn: () => Promise<void>) => void) {
  const subscribers = new Map<string, Set<() => void>>();
  const marks = new Map<string, string | undefined>();
  /** The tenant of each tenant key (the other keys are run ids). */
  const tenants = new Map<string, Tenant>();
  let timer: NodeJS.Timeout | undefined;
  let registered = false;

  const wakeAll = (key: string) => {
    for (const wake of subscribers.get(key) ?? []) wake();
  };
  const schedule = () => {
    if (timer || hub.closed || subscribers.size === 0) return;
    timer = setTimeout(() => void poll(), pollMs);
    timer.unref?.();
  };
  async function poll() {
    const keys = [...subscribers.keys()];
    const runIds = keys.filter((k) => !tenants.has(k));
    const tenantKeys = keys.filter((k) => tenants.has(k));
    try {
      const now = runIds.length > 0 ? await watchMarks(db.query, runIds) : new Map<string, string>();
      const tenantMarks = await tenantWatchMarks(
        db.query,
        tenantKeys.map((k) => tenants.get(k)!),
      );
      tenantKeys.forEach((k, i) => now.set(k, tenantMarks[i]!));
      for (const key of keys) {
        if (!subscribers.has(key)) continue;
        const mark = now.get(key) ?? 'deleted';
        if (marks.get(key) !== mark) {
          marks.set(key, mark);
          wakeAll(key);
        }
      }
    } catch {
      // the database is away: the watchers answer at their timeout; polling goes on
    }
    timer = undefined;
    schedule();
  }

  const hub = {
    closed: false,
    /** `tenant` makes `key` a tenant key: its mark is that of the tenant's runs (tenantWatchMarks). */
    subscribe(key: string, fn: () => void, tenant?: Tenant): () => void {
      if (!registered) {
        registered = true;
        onClose?.(() => hub.close());
      }
      let set = subscribers.get(key);
      if (!set) {
        subscribers.set(key, (set = new Set()));
        marks.set(key, undefined);
        if (tenant) tenants.set(key, tenant);
      }
      set.add(fn);
      schedule();
      return () => {
        set.delete(fn);
        if (set.size === 0 && subscribers.get(key) === set) {
          subscribers.delete(key);
          marks.delete(key);
          tenants.delete(key);
        }
      };
    },
    async close() {
      hub.closed = true;
      clearTimeout(timer);
      timer = undefined;
      for (const set of subscribers.values()) for (const wake of set) wake();
    },
  };
  return hub;
}

type Hub = ReturnType<typeof createHub>;

/**
 * The long poll itself: `read()` at once; when its version differs from `since`, that is the answer; else wait until the
 * hub wakes the key (then read again), the timeout passes, the request is aborted or the hub closes.
 */
async function follow<S extends { version: string }>(
  hub: Hub,
  key: string,
  tenant: Tenant | undefined,
  read: () => Promise<S>,
  since: string | undefined,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<{ changed: boolean; state: S }> {
  // Subscribe before the first read, so a change between the read and the wait is not missed.
  let dirty = false;
  let wake: (() => void) | undefined;
  const unsubscribe = hub.subscribe(
    key,
    () => {
      dirty = true;
      wake?.();
    },
    tenant,
  );
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  try {
    let current = await read();
    if (since !== current.version) return { changed: true, state: current };
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || signal.aborted || hub.closed) return { changed: false, state: current };
      if (!dirty) {
        // woken by the hub's poller when the key's mark moves, by the request's abort or the hub's close
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, remaining);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      dirty = false;
      if (signal.aborted || hub.closed) return { changed: false, state: current };
      current = await read();
      if (current.version !== since) return { changed: true, state: current };
    }
  } finally {
    unsubscribe();
    signal.removeEventListener('abort', onAbort);
  }
}

async function snapshot(db: Database, t: Tenant, id: string): Promise<Snapshot | undefined> {
  const row = await watchedRun(db.query, t, id);
  if (!row) return undefined;
  const { run, stepCount, stepsAt, lastLogId } = row;
  const steps = await listSteps(db.query, id);
  return { run: { ...run, steps }, version: [run.updatedAt, run.status, stepCount, stepsAt ?? '', lastLogId].join('|'), lastLogId };
}

function answer(s: Snapshot, changed: boolean): WatchAnswer {
  return changed ? { changed, version: s.version, run: s.run, lastLogId: s.lastLogId } : { changed, version: s.version };
}

/** The hub key of a tenant's runs (never a UUID, so never a run's key). */
const tenantKey = (t: Tenant) => `tenant:${JSON.stringify([t.appHandle, t.shop])}`;

export function createRunWatch(deps: WatchDeps) {
  const hub = createHub(deps.db, deps.pollMs ?? WATCH_POLL_MS, deps.onClose);
  return {
    /**
     * The run's state once it differs from `since`, or unchanged once `timeoutMs` passes, the request is aborted or the
     * hub closes. NotFoundError when the tenant has no such run (or it is deleted meanwhile).
     */
    async watch(t: Tenant, id: string, since: string | undefined, timeoutMs: number, signal: AbortSignal): Promise<WatchAnswer> {
      if (!isUuid(id)) throw new NotFoundError('Run not found');
      const read = async () => {
        const current = await snapshot(deps.db, t, id);
        if (!current) throw new NotFoundError('Run not found');
        return current;
      };
      const { changed, state } = await follow(hub, id, undefined, read, since, timeoutMs, signal);
      return answer(state, changed);
    },

    /**
     * The tenant's runs (GET /api/runs/watch): `{ changed: true, version }` once their mark differs from `since` — a run
     * dispatched, changing status or finishing —, else `{ changed: false, version }` after `timeoutMs` (or the abort, or
     * the hub's close). The answer carries no runs: the page reloads what it shows.
     */
    async watchTenant(t: Tenant, since: string | undefined, timeoutMs: number, signal: AbortSignal): Promise<TenantWatchAnswer> {
      const read = async () => ({ version: (await tenantWatchMarks(deps.db.query, [t]))[0]! });
      const { changed, state } = await follow(hub, tenantKey(t), t, read, since, timeoutMs, signal);
      return { changed, version: state.version };
    },
  };
}

export type RunWatch = ReturnType<typeof createRunWatch>;
