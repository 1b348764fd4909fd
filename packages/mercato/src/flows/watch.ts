/**
 * Live updates of a run for the admin UI, by long polling (the route is watch-router.ts).
 *
 * A watch answers at once with `{ changed: true, version, run, lastLogId }` when the run's version differs from `since`
 * (or `since` is absent), else waits until it changes or the timeout passes (`{ changed: false, version }`). The version
 * covers the run row (updated_at, status), its steps and its newest log line. Changes are noticed through NOTIFY
 * mercato_run_updates '<run id>' (sent by database triggers on runs and steps, migration 0007_run_watch, so a worker in
 * another process wakes the watcher too), with a re-check every 250 ms growing to 3 s as the backstop (it is what
 * notices new log lines).
 */
import type { Database } from '../db/engine.ts';
import { type Tenant, isUuid } from '../db/sql.ts';
import { NotFoundError } from '../errors.ts';
import { type RunRecord, watchedRun } from './store/runs.ts';
import { type StepRecord, listSteps } from './store/steps.ts';

export { WATCH_DEFAULT_TIMEOUT_S, WATCH_MAX_TIMEOUT_S } from './schemas.ts';

export const RUN_UPDATES_CHANNEL = 'mercato_run_updates';
const RECHECK_FIRST_MS = 250;
const RECHECK_MAX_MS = 3000;

export interface WatchDeps {
  db: Database;
  /** Registers the hub's cleanup (wake the watchers, stop listening) with the runtime. */
  onClose?: (fn: () => Promise<void>) => void;
}

interface Snapshot {
  run: RunRecord & { steps: StepRecord[] };
  version: string;
  lastLogId: number;
}

export type WatchAnswer =
  { changed: true; version: string; run: RunRecord & { steps: StepRecord[] }; lastLogId: number } | { changed: false; version: string };

/**
 * One LISTEN per process, fanned out to the watchers of each run. Its cleanup is registered with the runtime at the first
 * watch, so it runs before the HTTP server's close (closers run newest first): closing wakes every waiting watcher, which
 * answers at once instead of holding the server's shutdown for the rest of its timeout.
 */
function createHub(db: Database, onClose?: (fn: () => Promise<void>) => void) {
  const subscribers = new Map<string, Set<() => void>>();
  let listening: Promise<(() => Promise<void>) | undefined> | undefined;
  let registered = false;
  const hub = {
    closed: false,
    async subscribe(runId: string, fn: () => void): Promise<() => void> {
      if (!registered) {
        registered = true;
        onClose?.(() => hub.close());
      }
      if (!hub.closed)
        listening ??= db
          .listen(
            RUN_UPDATES_CHANNEL,
            (id) => {
              for (const wake of subscribers.get(id) ?? []) wake();
            },
            // updates sent while the LISTEN connection was away were not heard: every watcher re-reads its run
            { onRestored: () => subscribers.forEach((set) => set.forEach((wake) => wake())) },
          )
          .catch(() => {
            // No notifications (connection trouble): the re-check loop still answers; try again on the next watch.
            listening = undefined;
            return undefined;
          });
      await listening;
      let set = subscribers.get(runId);
      if (!set) subscribers.set(runId, (set = new Set()));
      set.add(fn);
      return () => {
        set.delete(fn);
        if (set.size === 0) subscribers.delete(runId);
      };
    },
    async close() {
      hub.closed = true;
      for (const set of subscribers.values()) for (const wake of set) wake();
      const stop = await listening;
      listening = undefined;
      await stop?.().catch(() => {});
    },
  };
  return hub;
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

export function createRunWatch(deps: WatchDeps) {
  const hub = createHub(deps.db, deps.onClose);
  return {
    /**
     * The run's state once it differs from `since`, or unchanged once `timeoutMs` passes, the request is aborted or the
     * hub closes. NotFoundError when the tenant has no such run (or it is deleted meanwhile).
     */
    async watch(t: Tenant, id: string, since: string | undefined, timeoutMs: number, signal: AbortSignal): Promise<WatchAnswer> {
      if (!isUuid(id)) throw new NotFoundError('Run not found');
      // Subscribe before the first read, so a change between the read and the wait is not missed.
      let dirty = false;
      let wake: (() => void) | undefined;
      const unsubscribe = await hub.subscribe(id, () => {
        dirty = true;
        wake?.();
      });
      const onAbort = () => wake?.();
      signal.addEventListener('abort', onAbort);
      try {
        let current = await snapshot(deps.db, t, id);
        if (!current) throw new NotFoundError('Run not found');
        if (since !== current.version) return answer(current, true);
        const deadline = Date.now() + timeoutMs;
        let delay = RECHECK_FIRST_MS;
        for (;;) {
          const remaining = deadline - Date.now();
          if (remaining <= 0 || signal.aborted || hub.closed) return answer(current, false);
          if (!dirty) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, Math.min(delay, remaining));
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = undefined;
          }
          dirty = false;
          delay = Math.min(delay * 1.5, RECHECK_MAX_MS);
          if (signal.aborted || hub.closed) return answer(current, false);
          const next = await snapshot(deps.db, t, id);
          if (!next) throw new NotFoundError('Run not found');
          current = next;
          if (current.version !== since) return answer(current, true);
        }
      } finally {
        unsubscribe();
        signal.removeEventListener('abort', onAbort);
      }
    },
  };
}

export type RunWatch = ReturnType<typeof createRunWatch>;
