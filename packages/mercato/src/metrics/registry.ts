/**
 * The Prometheus metrics of one runtime (docs/observability.md): a prom-client Registry of its own (never the global
 * one: a process may hold several runtimes), the process's default metrics (CPU, memory, event-loop lag, GC), counters
 * and histograms fed by the runtime's event feed, and gauges read at scrape time (queue, connection pool, worker slots).
 * Labels are bounded: flows, topics, tools, crons and routes come from the app's code; no shop, run or token id is a label.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PoolStats } from '../db/engine.ts';
import type { RuntimeEvents } from '../events.ts';
import type { Logger } from '../logger.ts';
import { MCP_METHOD_NAMES } from '../mcp/rpc.ts';
import { QUEUE_COUNT_CAP } from '../flows/store/queue.ts';

/** Due runs of a flow (flows/store/queue.ts). */
export interface QueueSample {
  flow: string;
  depth: number;
  oldestAgeSeconds: number;
}

/** How the counted due runs spread over tenants (app, shop): counts only, never which tenant (flows/store/queue.ts). */
export interface QueueTenants {
  /** Tenants with at least one counted due run. */
  waiting: number;
  /** Counted due runs of the tenant with the most of them. */
  largest: number;
  /** Counted due runs, all tenants. */
  total: number;
}

/** One queue reading: the same capped sample of due runs, per flow and over tenants. */
export interface QueueReading {
  flows: QueueSample[];
  tenants: QueueTenants;
}

export interface MetricsOptions {
  version: string;
  /** The due runs per flow and over tenants, cluster-wide (one database query; cached for `queueCacheMs`). */
  queue?: () => Promise<QueueReading>;
  /** The connection pool now (PostgreSQL). */
  pool?: () => PoolStats;
  /** The worker of this process, when it runs one. */
  worker?: () => WorkerFigures | undefined;
  /** How long a queue reading is reused (default 5 s): a scrape every second costs at most one query per 5 s. */
  queueCacheMs?: number;
  /** process_* and nodejs_* metrics (default true). */
  defaultMetrics?: boolean;
  /** Where a failed queue query is reported (once per failure streak). */
  logger?: Pick<Logger, 'warn'>;
}

/** What the worker gauges read from the process's worker. */
export interface WorkerFigures {
  active: number;
  queued: number;
  concurrency: number;
}

/** Distinct values a label keeps; later ones are reported as `other` (a guard: label values come from code, not from users). */
export const MAX_LABEL_VALUES = 500;
export const OTHER = 'other';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** MCP methods keep their name as a label; anything else a client sends is `other`. */
const MCP_METHODS: ReadonlySet<string> = new Set(MCP_METHOD_NAMES);

/** A label's values, at most `max` distinct; the rest become `other`. */
function boundedLabel(max = MAX_LABEL_VALUES): (value: string) => string {
  const seen = new Set<string>();
  return (value) => {
    if (seen.has(value)) return value;
    if (seen.size >= max) return OTHER;
    seen.add(value);
    return value;
  };
}

export interface Metrics {
  readonly registry: Registry;
  /** The exposition text of every metric (scrape-time gauges are read first). */
  scrape(): Promise<string>;
  readonly contentType: string;
  /** Counts the runtime's events (dispatches, executions, steps, retries, leases, webhooks, crons, MCP calls). Returns the detach function. */
  observe(events: RuntimeEvents): () => void;
  /** One answered HTTP request: `route` is the matched route pattern, never the raw path. */
  httpRequest(method: string, route: string, code: number, seconds: number): void;
  /**
   * Rows the retention job removed from a table (`mercato_retention_pruned_rows_total{table}`). The retention job calls it
   * after each batch; nothing else does.
   */
  recordPrunedRows(table: string, rows: number): void;
}

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const flowLabel = boundedLabel();
  const topicLabel = boundedLabel();
  const toolLabel = boundedLabel();
  const cronLabel = boundedLabel();
  const routeLabel = boundedLabel();
  const tableLabel = boundedLabel();

  new Gauge({ name: 'mercato_build_info', help: 'Always 1; the version of Mercato in the label', labelNames: ['version'], registers }).set(
    { version: options.version },
    1,
  );
  const dispatched = new Counter({
    name: 'mercato_runs_dispatched_total',
    help: 'Runs dispatched by this process (committed run rows), by flow and trigger',
    labelNames: ['flow', 'trigger'],
    registers,
  });
  const started = new Counter({
    name: 'mercato_runs_started_total',
    help: 'Executions started by this worker (first attempts, retries, wake-ups after a sleep, reclaimed leases), by flow',
    labelNames: ['flow'],
    registers,
  });
  const finished = new Counter({
    name: 'mercato_runs_finished_total',
    help: 'Runs that reached a final state in this worker, by flow and status (completed or failed)',
    labelNames: ['flow', 'status'],
    registers,
  });
  const retries = new Counter({
    name: 'mercato_run_retries_total',
    help: 'Failed attempts that will be retried, by flow and cause (step: a step threw; flow: the flow itself threw)',
    labelNames: ['flow', 'cause'],
    registers,
  });
  const runDuration = new Histogram({
    name: 'mercato_run_duration_seconds',
    help: 'Execution time of each attempt (time asleep not counted), by flow and outcome (completed, failed, retry)',
    labelNames: ['flow', 'status'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const stepDuration = new Histogram({
    name: 'mercato_step_duration_seconds',
    help: 'Time a step function took (replayed results not counted), by flow and status (completed, failed)',
    labelNames: ['flow', 'status'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const leaseRecoveries = new Counter({
    name: 'mercato_lease_recoveries_total',
    help: 'Runs whose lease expired (their worker died) found by this worker, by flow and outcome (requeued, failed)',
    labelNames: ['flow', 'outcome'],
    registers,
  });
  const webhooks = new Counter({
    name: 'mercato_webhook_deliveries_total',
    help: 'Signed webhook deliveries accepted, by topic and outcome (dispatched, duplicate, unhandled)',
    labelNames: ['topic', 'outcome'],
    registers,
  });
  const cronFires = new Counter({
    name: 'mercato_cron_fires_total',
    help: 'Cron ticks claimed and dispatched by this scheduler, by cron and flow',
    labelNames: ['cron', 'flow'],
    registers,
  });
  const cronLateness = new Histogram({
    name: 'mercato_cron_fire_delay_seconds',
    help: 'How long after its scheduled time a cron tick was dispatched',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers,
  });
  const mcpCalls = new Counter({
    name: 'mercato_mcp_calls_total',
    help: 'Authenticated MCP JSON-RPC requests answered, by method, tool (tools/call only, else empty) and outcome (ok, error)',
    labelNames: ['method', 'tool', 'outcome'],
    registers,
  });
  const mcpDuration = new Histogram({
    name: 'mercato_mcp_call_duration_seconds',
    help: 'Time to answer an authenticated MCP JSON-RPC request, by method',
    labelNames: ['method'],
    buckets: HTTP_BUCKETS,
    registers,
  });
  const httpRequests = new Counter({
    name: 'mercato_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code',
    labelNames: ['method', 'route', 'code'],
    registers,
  });
  const httpDuration = new Histogram({
    name: 'mercato_http_request_duration_seconds',
    help: 'Time to answer an HTTP request (until the handler returned its response), by method and route pattern',
    labelNames: ['method', 'route'],
    buckets: HTTP_BUCKETS,
    registers,
  });
  const pruned = new Counter({
    name: 'mercato_retention_pruned_rows_total',
    help: 'Rows removed by the retention job, by table',
    labelNames: ['table'],
    registers,
  });

  // scrape-time gauges
  const queueRead = cachedQueue(options);
  if (options.queue) {
    new Gauge({
      name: 'mercato_queue_depth',
      help: 'Due runs waiting for a worker, by flow (cluster-wide: every process reports the same value; aggregate with max)',
      labelNames: ['flow'],
      registers,
      async collect() {
        this.reset();
        for (const q of (await queueRead())?.flows ?? []) this.set({ flow: flowLabel(q.flow) }, q.depth);
      },
    });
    new Gauge({
      name: 'mercato_queue_oldest_age_seconds',
      help: 'Seconds since the oldest due run of a flow became due (cluster-wide; aggregate with max)',
      labelNames: ['flow'],
      registers,
      async collect() {
        this.reset();
        for (const q of (await queueRead())?.flows ?? []) this.set({ flow: flowLabel(q.flow) }, q.oldestAgeSeconds);
      },
    });
    // A noisy neighbour without a label per shop: how many tenants wait and how much of the queue the largest one holds,
    // over the same capped sample as the gauges above. No label at all (a shop or app label would be a series per tenant).
    const counted = `among the oldest ${QUEUE_COUNT_CAP} due runs`;
    const tenantGauges: Array<[name: string, help: string, read: (t: QueueTenants) => number]> = [
      [
        'mercato_queue_tenants_waiting',
        `Tenants (app and shop) with due runs waiting, ${counted} (cluster-wide; aggregate with max)`,
        (t) => t.waiting,
      ],
      [
        'mercato_queue_largest_tenant_depth',
        `Due runs of the tenant that has the most of them, ${counted} (cluster-wide; aggregate with max)`,
        (t) => t.largest,
      ],
      [
        'mercato_queue_largest_tenant_share_ratio',
        `Share (0 to 1) of the due runs held by the tenant that has the most of them, ${counted}; 0 when none (cluster-wide; aggregate with max)`,
        (t) => (t.total > 0 ? t.largest / t.total : 0),
      ],
    ];
    for (const [name, help, read] of tenantGauges) {
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          const reading = await queueRead();
          // no reading (the query failed or was too slow): no sample, rather than a 0 that reads as an empty queue
          if (reading) this.set(read(reading.tenants));
          else this.remove();
        },
      });
    }
  }
  if (options.pool) {
    const pool = options.pool;
    new Gauge({
      name: 'mercato_db_pool_connections',
      help: 'Open connections of the database pool, by state (in_use, idle)',
      labelNames: ['state'],
      registers,
      collect() {
        const s = pool();
        this.set({ state: 'in_use' }, s.inUse);
        this.set({ state: 'idle' }, s.idle);
      },
    });
    new Gauge({
      name: 'mercato_db_pool_max_connections',
      help: 'Connections the database pool may open',
      registers,
      collect() {
        this.set(pool().max);
      },
    });
    new Gauge({
      name: 'mercato_db_pool_waiting_queries',
      help: 'Queries waiting for a connection of the pool (every connection is in use)',
      registers,
      collect() {
        this.set(pool().waiting);
      },
    });
  }
  if (options.worker) {
    const worker = options.worker;
    const workerGauges: Array<[name: string, help: string, read: (w: WorkerFigures) => number]> = [
      ['mercato_worker_active_runs', 'Runs this worker is executing', (w) => w.active],
      ['mercato_worker_queued_runs', 'Runs this worker claimed ahead and has not started yet (worker.prefetch)', (w) => w.queued],
      ['mercato_worker_concurrency', 'Runs this worker may execute at once', (w) => w.concurrency],
    ];
    for (const [name, help, read] of workerGauges) {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.reset();
          const w = worker();
          if (w) this.set(read(w));
        },
      });
    }
  }

  const seconds = (ms: number) => Math.max(0, ms) / 1000;

  return {
    registry,
    contentType: registry.contentType,
    scrape: () => registry.metrics(),
    observe(events) {
      const detach = [
        events.on('run.dispatched', (e) => dispatched.inc({ flow: flowLabel(e.flow), trigger: e.trigger })),
        events.on('run.started', (e) => started.inc({ flow: flowLabel(e.flow) })),
        events.on('run.completed', (e) => {
          const flow = flowLabel(e.flow);
          finished.inc({ flow, status: 'completed' });
          runDuration.observe({ flow, status: 'completed' }, seconds(e.durationMs));
        }),
        events.on('run.failed', (e) => {
          const flow = flowLabel(e.flow);
          if (e.willRetry) retries.inc({ flow, cause: e.step === null ? 'flow' : 'step' });
          else finished.inc({ flow, status: 'failed' });
          runDuration.observe({ flow, status: e.willRetry ? 'retry' : 'failed' }, seconds(e.durationMs));
        }),
        events.on('step.finished', (e) => stepDuration.observe({ flow: flowLabel(e.flow), status: e.status }, seconds(e.durationMs))),
        events.on('lease.recovered', (e) =>
          leaseRecoveries.inc({ flow: flowLabel(e.flow), outcome: e.status === 'failed' ? 'failed' : 'requeued' }),
        ),
        events.on('webhook.received', (e) =>
          webhooks.inc({ topic: topicLabel(e.topic), outcome: e.duplicate ? 'duplicate' : e.handled ? 'dispatched' : 'unhandled' }),
        ),
        events.on('cron.fired', (e) => {
          cronFires.inc({ cron: cronLabel(e.cron), flow: flowLabel(e.flow) });
          cronLateness.observe(seconds(e.lateMs));
        }),
        events.on('mcp.call', (e) => {
          const method = MCP_METHODS.has(e.method) ? e.method : OTHER;
          const tool = e.method === 'tools/call' && e.target ? toolLabel(e.target) : '';
          mcpCalls.inc({ method, tool, outcome: e.status });
          mcpDuration.observe({ method }, seconds(e.durationMs));
        }),
        events.on('retention.pruned', (e) => {
          if (e.rows > 0) pruned.inc({ table: tableLabel(e.table) }, e.rows);
        }),
      ];
      return () => {
        for (const fn of detach) fn();
      };
    },
    httpRequest(method, route, code, secs) {
      const r = routeLabel(route);
      httpRequests.inc({ method, route: r, code: String(code) });
      httpDuration.observe({ method, route: r }, secs);
    },
    recordPrunedRows(table, rows) {
      if (rows > 0) pruned.inc({ table: tableLabel(table) }, rows);
    },
  };
}

/**
 * The queue reading, shared by every queue gauge of a scrape and reused for `queueCacheMs`. One query at a time; a scrape
 * waits for it at most QUEUE_WAIT_MS. A failure (or a slow database) reads as undefined (no series), and the next scrape
 * asks again.
 */
function cachedQueue(options: MetricsOptions): () => Promise<QueueReading | undefined> {
  const ttl = options.queueCacheMs ?? 5_000;
  let last: { at: number; reading: QueueReading | undefined } = { at: -Infinity, reading: undefined };
  let inflight: Promise<QueueReading | undefined> | undefined;
  let failing = false;
  return () => {
    if (!options.queue) return Promise.resolve(undefined);
    if (Date.now() - last.at < ttl) return Promise.resolve(last.reading);
    inflight ??= options
      .queue()
      .then(
        (reading) => {
          last = { at: Date.now(), reading };
          failing = false;
          return reading;
        },
        (error: unknown) => {
          if (!failing) options.logger?.warn({ err: error }, 'metrics: the queue query failed; the queue gauges are left out');
          failing = true;
          return undefined;
        },
      )
      .finally(() => (inflight = undefined));
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<QueueReading | undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), QUEUE_WAIT_MS);
      timer.unref?.();
    });
    return Promise.race([inflight, waited]).finally(() => clearTimeout(timer));
  };
}

/** The longest a scrape waits for the queue query. */
export const QUEUE_WAIT_MS = 2_000;
