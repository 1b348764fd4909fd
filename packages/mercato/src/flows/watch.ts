/**
 * Live updates of a run for the admin UI, by long polling, and the run figures of the Home page.
 *
 * `GET /api/runs/:id/watch?since=<version>&timeout=<seconds>` answers at once with `{ changed: true, version, run }`
 * when the run's version differs from `since` (or `since` is absent), else waits until it changes or `timeout` passes
 * (`{ changed: false, version }`). The version covers the run row (updated_at, status), its steps and its newest log
 * line. Changes are noticed through NOTIFY mercato_run_updates '<run id>' (sent by database triggers on runs and steps,
 * migration 0007_run_watch, so a worker in another process wakes the watcher too), with a re-check every 250 ms growing
 * to 3 s as the backstop (it is what notices new log lines).
 *
 * `GET /api/home` gives the tenant's run counts by status over the last 24 hours and its five latest failed runs.
 */
import { sql } from 'drizzle-orm';
import { Hono } from 'hono';
import { RUN_STATUSES } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import { type Tenant, isUuid, isoTs, tenantWhere } from '../db/sql.ts';
import { InvalidInputError, NotFoundError } from '../errors.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import { RUN_COLUMNS, type RunRecord, type StepRecord, listSteps } from './store.ts';

export const RUN_UPDATES_CHANNEL = 'mercato_run_updates';
export const WATCH_DEFAULT_TIMEOUT_S = 25;
export const WATCH_MAX_TIMEOUT_S = 30;
const RECHECK_FIRST_MS = 250;
const RECHECK_MAX_MS = 3000;
const RECENT_FAILURES = 5;

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
      if (!hub.closed) listening ??= db
        .listen(RUN_UPDATES_CHANNEL, (id) => {
          for (const wake of subscribers.get(id) ?? []) wake();
        })
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
  const [row] = await db.query<RunRecord & { stepCount: number; stepsAt: string | null; lastLogId: number | string }>(sql`
    select ${RUN_COLUMNS},
      (select count(*)::int from steps s where s.run_id = runs.id) as "stepCount",
      (select ${isoTs('max(coalesce(s.finished_at, s.started_at))')} from steps s where s.run_id = runs.id) as "stepsAt",
      coalesce((select l.id from logs l where l.run_id = runs.id order by l.id desc limit 1), 0) as "lastLogId"
    from runs where id = ${id}::uuid and ${tenantWhere(t)}`);
  if (!row) return undefined;
  const { stepCount, stepsAt, lastLogId, ...run } = row;
  const steps = await listSteps(db.query, id);
  const logId = Number(lastLogId);
  return { run: { ...run, steps }, version: [run.updatedAt, run.status, stepCount, stepsAt ?? '', logId].join('|'), lastLogId: logId };
}

function parseTimeout(raw: string | undefined): number {
  if (raw === undefined || raw === '') return WATCH_DEFAULT_TIMEOUT_S;
  if (!/^\d{1,3}$/.test(raw) || Number(raw) > WATCH_MAX_TIMEOUT_S) {
    throw new InvalidInputError(`timeout: must be a whole number of seconds from 0 to ${WATCH_MAX_TIMEOUT_S}`, { field: 'timeout' });
  }
  return Number(raw);
}

function answer(s: Snapshot, changed: boolean) {
  return changed ? { changed, version: s.version, run: s.run, lastLogId: s.lastLogId } : { changed, version: s.version };
}

export function watchApi(deps: WatchDeps): ApiRouteGroup[] {
  const hub = createHub(deps.db, deps.onClose);

  const runs = new Hono<ApiEnv>();
  runs.get('/:id/watch', async (c) => {
    const id = c.req.param('id');
    const query = c.req.query();
    for (const key of Object.keys(query)) if (key !== 'since' && key !== 'timeout') throw new InvalidInputError(`${key}: unknown query parameter (expected since, timeout)`, { field: key });
    const timeoutMs = parseTimeout(query.timeout) * 1000;
    const since = query.since;
    if (since !== undefined && since.length > 300) throw new InvalidInputError('since: at most 300 characters', { field: 'since' });
    if (!isUuid(id)) throw new NotFoundError('Run not found');
    const t = c.get('tenant');

    // Subscribe before the first read, so a change between the read and the wait is not missed.
    let dirty = false;
    let wake: (() => void) | undefined;
    const unsubscribe = await hub.subscribe(id, () => {
      dirty = true;
      wake?.();
    });
    const signal = c.req.raw.signal;
    const onAbort = () => wake?.();
    signal.addEventListener('abort', onAbort);
    try {
      let current = await snapshot(deps.db, t, id);
      if (!current) throw new NotFoundError('Run not found');
      if (since !== current.version) return c.json(answer(current, true));
      const deadline = Date.now() + timeoutMs;
      let delay = RECHECK_FIRST_MS;
      for (;;) {
        const remaining = deadline - Date.now();
        if (remaining <= 0 || signal.aborted || hub.closed) return c.json(answer(current, false));
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
        if (signal.aborted || hub.closed) return c.json(answer(current, false));
        const next = await snapshot(deps.db, t, id);
        if (!next) throw new NotFoundError('Run not found');
        current = next;
        if (current.version !== since) return c.json(answer(current, true));
      }
    } finally {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
    }
  });

  const home = new Hono<ApiEnv>();
  home.get('/', async (c) => {
    const t = c.get('tenant');
    const tenant = tenantWhere(t);
    const [[{ since }], rows, failures] = await Promise.all([
      deps.db.query<{ since: string }>(sql`select ${isoTs("now() - interval '24 hours'")} as since`),
      deps.db.query<{ status: string; n: number }>(sql`
        select status, count(*)::int as n from runs where ${tenant} and created_at >= now() - interval '24 hours' group by status`),
      deps.db.query<{ id: string; flowName: string; createdAt: string; finishedAt: string | null; error: { name?: string; message?: string } | null }>(sql`
        select id, flow_name as "flowName", ${isoTs('created_at')} as "createdAt", ${isoTs('finished_at')} as "finishedAt", error
        from runs where ${tenant} and status = 'failed' order by created_at desc, id desc limit ${RECENT_FAILURES}`),
    ]);
    const counts = Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<string, number>;
    for (const row of rows) counts[row.status] = Number(row.n);
    return c.json({
      since,
      counts,
      total: Object.values(counts).reduce((a, b) => a + b, 0),
      recentFailures: failures.map(({ error, ...run }) => ({ ...run, errorSummary: error ? `${error.name ?? 'Error'}: ${error.message ?? ''}`.slice(0, 300) : null })),
    });
  });

  return [
    { prefix: '/api/runs', page: 'flows', app: runs },
    { prefix: '/api/home', page: 'flows', app: home },
  ];
}
