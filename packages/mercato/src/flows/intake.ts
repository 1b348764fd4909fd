/**
 * Group commit of dispatches (docs/architecture.md, "The intake path"): the plain dispatches of one process that arrive
 * while another insert of the process is in flight share one INSERT statement and one commit (one WAL flush), as the
 * completions of a worker do (completions.ts). A lone dispatch is not delayed: it goes at once in a statement of its
 * own. No dispatch is answered before the statement holding its run has committed, so an acknowledged run is durable.
 *
 * The run ids are made here (UUID v4, as the column's default would), so that each caller learns its run's id however
 * the rows come back. A batch that fails is retried row by row, so that one caller's failure is its own.
 *
 * A webhook's dispatch carries its delivery record: the same statement inserts the deliveries (`on conflict do
 * nothing`: the dedupe by webhook id and event id) and the runs of the deliveries it inserted, so a duplicate delivery
 * gets no run and its caller is told (DuplicateDeliveryError); the record and the run commit together.
 */
export class DuplicateDeliveryError extends Error {
  constructor() {
    super('Duplicate webhook delivery');
    this.name = 'DuplicateDeliveryError';
  }
}

/** The delivery record a webhook's dispatch writes with its run (app and shop are the run's). */
export interface DeliveryRecord {
  webhookId: string;
  eventId: string | null;
  topic: string;
}

import { randomUUID } from 'node:crypto';
import { type Exec, prepared } from '../db/sql.ts';
import { type NewRun, insertRun } from './store/runs.ts';

/** Insert statements of one process in flight at once; dispatches that come meanwhile go together in the next one. */
export const MAX_INSERTS_IN_FLIGHT = 2;
/** At most this many runs share one statement. */
export const MAX_INSERT_BATCH = 500;
/** A batch stops growing past this many characters of inputs (one parameter carries them all). */
export const MAX_INSERT_BATCH_CHARS = 4_000_000;

const insertBatchStatement = prepared(
  'insert_runs_batch',
  `with v as (
    select * from jsonb_to_recordset($1::jsonb) as v(id uuid, app text, shop text, flow text, trigger text, input jsonb,
      policy jsonb, parent uuid, trace text, priority smallint, ckey text, rkey text, wid text, eid text, topic text)
  ), d as (
    insert into webhook_deliveries (app_handle, webhook_id, event_id, shop, topic, run_id)
    select v.app, v.wid, v.eid, v.shop, v.topic, v.id from v where v.wid is not null
    on conflict do nothing
    returning run_id
  ), r as (
    insert into runs (id, app_handle, shop, flow_name, trigger, input, retry_policy, parent_run_id, trace_context, priority,
      concurrency_key, rate_key)
    select v.id, v.app, v.shop, v.flow, v.trigger, v.input, v.policy, v.parent, v.trace, coalesce(v.priority, 0), v.ckey, v.rkey
    from v where v.wid is null or v.id in (select run_id from d)
    returning id
  )
  select id from r`,
);

interface Pending {
  id: string;
  run: NewRun;
  json: string;
  resolve: (id: string) => void;
  reject: (error: unknown) => void;
}

function rowJson(id: string, run: NewRun, delivery: DeliveryRecord | undefined): string {
  return JSON.stringify({
    ...(delivery ? { wid: delivery.webhookId, eid: delivery.eventId, topic: delivery.topic } : {}),
    id,
    app: run.appHandle,
    shop: run.shop,
    flow: run.flowName,
    trigger: run.trigger,
    input: run.input ?? {},
    policy: run.retryPolicy,
    parent: run.parentRunId ?? null,
    trace: run.traceContext ?? null,
    priority: run.priority ?? 0,
    ckey: run.concurrencyKey ?? null,
    rkey: run.rateKey ?? null,
  });
}

export interface IntakeStats {
  /** Insert statements sent (batches and lone inserts). */
  statements: number;
  /** Runs inserted through them. */
  runs: number;
}

/**
 * `insert(run, solo)`: resolves with the run's id once its row is committed. `solo` (no other dispatch of the process in
 * flight) sends it at once with the workers' NOTIFY in the same statement; otherwise it joins the next batch.
 */
export function intakeBatcher(exec: Exec) {
  const queue: Pending[] = [];
  let inFlight = 0;
  let scheduled = false;
  const stats: IntakeStats = { statements: 0, runs: 0 };

  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => void flush());
  };

  async function flush() {
    scheduled = false;
    if (queue.length === 0 || inFlight >= MAX_INSERTS_IN_FLIGHT) return;
    let chars = 0;
    let n = 0;
    while (n < queue.length && n < MAX_INSERT_BATCH) {
      chars += queue[n].json.length;
      if (n > 0 && chars > MAX_INSERT_BATCH_CHARS) break;
      n++;
    }
    const batch = queue.splice(0, n);
    if (queue.length > 0) schedule();
    inFlight++;
    const settle = (p: Pending, stored: Set<string>) => (stored.has(p.id) ? p.resolve(p.id) : p.reject(new DuplicateDeliveryError())); // only a delivery's run can be left out
    try {
      stats.statements++;
      const rows = await exec<{ id: string }>(insertBatchStatement(`[${batch.map((p) => p.json).join(',')}]`));
      const stored = new Set(rows.map((r) => r.id));
      stats.runs += stored.size;
      for (const p of batch) settle(p, stored);
    } catch {
      // one caller's failure is its own: each row again on its own (their ids are new, so nothing was half-written)
      await Promise.all(
        batch.map((p) =>
          exec<{ id: string }>(insertBatchStatement(`[${p.json}]`)).then(
            (rows) => settle(p, new Set(rows.map((r) => r.id))),
            (error: unknown) => p.reject(error),
          ),
        ),
      );
    } finally {
      inFlight--;
      if (queue.length > 0) schedule();
    }
  }

  return {
    stats,
    /**
     * Resolves with the run's id once committed. `solo` (and nothing of this intake in flight): at once, with the
     * workers' NOTIFY in the same statement. With `delivery`, rejects with DuplicateDeliveryError for a duplicate.
     */
    async insert(run: NewRun, solo: boolean, delivery?: DeliveryRecord): Promise<string> {
      if (solo && !delivery && inFlight === 0 && queue.length === 0) {
        stats.statements++;
        stats.runs++;
        return insertRun(exec, run, true);
      }
      const id = randomUUID();
      return new Promise<string>((resolve, reject) => {
        queue.push({ id, run, json: rowJson(id, run, delivery), resolve, reject });
        schedule();
      });
    },
  };
}
