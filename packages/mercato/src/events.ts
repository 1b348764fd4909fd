/**
 * The runtime's event feed: a small typed, in-process bus (`runtime.events`) that the dispatcher, the run engine, the
 * webhook receiver, the cron scheduler and the MCP endpoint report to. The terminal (src/cli/terminal.ts) renders it;
 * anything else in the process may listen too. Events are facts after the fact (the run row is committed, the final
 * state is stored): a listener can never change what happens, and a listener that throws (or rejects) is reported
 * through `onListenerError` and never reaches the code that emitted.
 *
 * Events are local to the process that did the work: a `mercato start` process sees dispatches, webhooks, crons and
 * MCP calls; a `mercato worker` process sees run starts, completions, failures and step retries (and the dispatches
 * its flows make with ctx.dispatchFlow).
 */

interface EventBase<T extends string> {
  type: T;
  /** When the event was emitted. */
  at: Date;
}

/** A run row was committed (any trigger). */
export interface RunDispatchedEvent extends EventBase<'run.dispatched'> {
  runId: string;
  flow: string;
  /** null for a global run. */
  shop: string | null;
  app: string;
  trigger: string;
  parentRunId: string | null;
  /** True when a debounced dispatch joined a run that was already waiting (`runId` is that run): no new row. */
  joined?: boolean;
  /** The HTTP request that asked for it (X-Request-Id): API, route, page, webhook or MCP dispatches; null otherwise. */
  requestId?: string | null;
  /** The trace of that request when tracing is on (docs/tracing.md), else null. */
  traceId?: string | null;
}

/**
 * A run is held back by its flow's load shaping (docs/flows.md, "Fairness and load shaping"): a worker found it due but
 * its `rateLimit` key was used up or every `concurrency` slot of its key was held, and set it aside until `until`.
 * Emitted by the worker that set it aside (once per setting aside).
 */
export interface RunWaitingEvent extends EventBase<'run.waiting'> {
  runId: string;
  flow: string;
  shop: string | null;
  app: string;
  reason: 'rate_limited' | 'concurrency';
  /** When it is due again (a freed concurrency slot makes it due earlier). */
  until: Date;
  /** `concurrency`: a run holding a slot of the key. */
  heldBy: string | null;
  /** The shaping key, as the flow's key function gave it. */
  key: string;
}

/**
 * The Admin GraphQL client waited for the shop's query-cost budget (THROTTLED, or a request costlier than what is
 * available): emitted by the process whose run (or route) made the request, before it waits.
 */
export interface AdminThrottledEvent extends EventBase<'admin.throttled'> {
  /** The run that made the request, or null outside a run. */
  runId: string | null;
  flow: string | null;
  shop: string;
  app: string;
  /** How long the client waits before it tries again. */
  waitMs: number;
  /** The query cost the request asked for, and what the bucket had when it answered (null when unknown). */
  requestedCost: number | null;
  availableCost: number | null;
  /** The 1-based attempt of this request that was throttled. */
  attempt: number;
}

/** A worker began executing a run (each execution: a retry, a wake-up after a sleep, a reclaimed lease). */
export interface RunStartedEvent extends EventBase<'run.started'> {
  runId: string;
  flow: string;
  shop: string | null;
  app: string;
  /** Attempt within the run's retry budget (ctx.attempt). */
  attempt: number;
}

export interface RunCompletedEvent extends EventBase<'run.completed'> {
  runId: string;
  flow: string;
  shop: string | null;
  app: string;
  attempt: number;
  /** Execution time of the attempt (time asleep not counted). */
  durationMs: number;
}

/** An attempt failed and its outcome is stored: the run is retried later (`willRetry`) or is now `failed`. */
export interface RunFailedEvent extends EventBase<'run.failed'> {
  runId: string;
  flow: string;
  shop: string | null;
  app: string;
  attempt: number;
  durationMs: number;
  error: string;
  willRetry: boolean;
  /** Delay before the next attempt (null when it will not retry). */
  retryInMs: number | null;
  /** The step whose error failed the attempt (null when the flow itself threw). */
  step: string | null;
}

/** A step threw, the attempt failed, and the run will try again (completed steps are replayed, this one runs again). */
export interface StepRetriedEvent extends EventBase<'step.retried'> {
  runId: string;
  flow: string;
  shop: string | null;
  app: string;
  step: string;
  /** The attempt that failed. */
  attempt: number;
  /** The attempt that will run the step again. */
  nextAttempt: number;
  error: string;
  retryInMs: number;
  nextTryAt: Date;
}

/** A run was canceled (admin API or MCP) while pending, running or sleeping; emitted by the process that canceled it. */
export interface RunCanceledEvent extends EventBase<'run.canceled'> {
  runId: string;
  flow: string;
  shop: string | null;
  app: string;
  /** The state it was canceled in. */
  previousStatus: 'pending' | 'running' | 'sleeping';
  /** Who asked: the admin API or an MCP tool call. */
  via: 'api' | 'mcp';
}

/** A signed, well-formed webhook delivery was accepted (or acknowledged as a duplicate, or had no handler). */
export interface WebhookReceivedEvent extends EventBase<'webhook.received'> {
  topic: string;
  shop: string;
  app: string;
  webhookId: string;
  duplicate: boolean;
  /** false when no handler exists for the topic (acknowledged and ignored). */
  handled: boolean;
  /** The run of `webhook:<topic>` (null for a duplicate or an unhandled topic). */
  runId: string | null;
  /** The delivery's HTTP request id (X-Request-Id) and trace id (null without tracing). */
  requestId?: string | null;
  traceId?: string | null;
}

/** A cron tick was claimed and dispatched. */
export interface CronFiredEvent extends EventBase<'cron.fired'> {
  /** The cron's key. */
  cron: string;
  flow: string;
  app: string;
  /** null for a global cron. */
  shop: string | null;
  /** The fire time of the schedule. */
  scheduledAt: Date;
  runId: string;
  /** How long after the fire time it was dispatched. */
  lateMs: number;
}

/** One authenticated JSON-RPC request on POST /mcp was answered. */
export interface McpCallEvent extends EventBase<'mcp.call'> {
  /** The JSON-RPC method: tools/call, resources/read, tools/list, initialize… */
  method: string;
  /**
   * The tool name (tools/call) or resource URI (resources/read); null for other methods. Not `name`: a JSON log line's
   * `name` is the logger's (`mercato`).
   */
  target: string | null;
  /** The MCP token's id (never its secret). */
  tokenId: string | null;
  app: string | null;
  shop: string | null;
  status: 'ok' | 'error';
  durationMs: number;
  /** The JSON-RPC error message when status is `error`. */
  error: string | null;
  /** The HTTP request id (X-Request-Id) and trace id (null without tracing) of the call. */
  requestId?: string | null;
  traceId?: string | null;
}

/**
 * A step's function returned or threw (each execution of it; a replayed result is not one). Emitted only while a listener
 * for this type is attached (the metrics of src/metrics/); the terminal does not show it.
 */
export interface StepFinishedEvent extends EventBase<'step.finished'> {
  runId: string;
  flow: string;
  shop: string | null;
  app: string;
  step: string;
  status: 'completed' | 'failed';
  durationMs: number;
}

/** A worker found a run whose lease had expired (its worker died): it is queued again, or failed after too many losses. */
export interface LeaseRecoveredEvent extends EventBase<'lease.recovered'> {
  runId: string;
  flow: string;
  /** `pending` (queued again) or `failed` (its workers kept dying). */
  status: 'pending' | 'failed';
}

/** A batch of old records was deleted by the retention pruner (docs/retention.md); one event per batch statement. */
export interface RetentionPrunedEvent extends EventBase<'retention.pruned'> {
  /** `runs`, `mcp_audits`, `webhook_deliveries` or `cron_ticks` (a run's steps and log lines go with it, not counted). */
  table: string;
  rows: number;
}

export type RuntimeEvent =
  | RunDispatchedEvent
  | RunWaitingEvent
  | AdminThrottledEvent
  | RunStartedEvent
  | RunCompletedEvent
  | RunFailedEvent
  | StepRetriedEvent
  | RunCanceledEvent
  | WebhookReceivedEvent
  | CronFiredEvent
  | McpCallEvent
  | StepFinishedEvent
  | LeaseRecoveredEvent
  | RetentionPrunedEvent;

export type RuntimeEventType = RuntimeEvent['type'];
export type RuntimeEventOf<T extends RuntimeEventType> = Extract<RuntimeEvent, { type: T }>;
/** What an emitter gives: the event without `type` and `at` (added by emit). */
export type RuntimeEventPayload<T extends RuntimeEventType> = Omit<RuntimeEventOf<T>, 'type' | 'at'>;

export const RUNTIME_EVENT_TYPES: readonly RuntimeEventType[] = [
  'run.dispatched',
  'run.waiting',
  'admin.throttled',
  'run.started',
  'run.completed',
  'run.failed',
  'step.retried',
  'run.canceled',
  'webhook.received',
  'cron.fired',
  'mcp.call',
  'step.finished',
  'lease.recovered',
  'retention.pruned',
];

export interface RuntimeEvents {
  /** Listens to one type of event; returns the function that stops listening. */
  on<T extends RuntimeEventType>(type: T, listener: (event: RuntimeEventOf<T>) => unknown): () => void;
  /** Listens to every event; returns the function that stops listening. */
  onAny(listener: (event: RuntimeEvent) => unknown): () => void;
  /** Delivers an event to its listeners, synchronously. Never throws. */
  emit<T extends RuntimeEventType>(type: T, payload: RuntimeEventPayload<T>): void;
  /** How many listeners are attached (all types). */
  listenerCount(): number;
  /** True when a listener of this type (or of every type) is attached: lets a hot path skip building an event nobody hears. */
  hears(type: RuntimeEventType): boolean;
}

export interface RuntimeEventsOptions {
  /** Told about a listener that threw or rejected (default: ignored). Its own errors are ignored. */
  onListenerError?: (error: unknown, event: RuntimeEvent) => void;
}

export function createRuntimeEvents(options: RuntimeEventsOptions = {}): RuntimeEvents {
  const byType = new Map<RuntimeEventType, Set<(event: RuntimeEvent) => unknown>>();
  const any = new Set<(event: RuntimeEvent) => unknown>();

  const report = (error: unknown, event: RuntimeEvent) => {
    try {
      options.onListenerError?.(error, event);
    } catch {
      // the error reporter failed too: nothing more to do
    }
  };
  const call = (listener: (event: RuntimeEvent) => unknown, event: RuntimeEvent) => {
    try {
      const result = listener(event);
      if (result && typeof (result as PromiseLike<unknown>).then === 'function') {
        (result as PromiseLike<unknown>).then(undefined, (error: unknown) => report(error, event));
      }
    } catch (error) {
      report(error, event);
    }
  };
  const add = (set: Set<(event: RuntimeEvent) => unknown>, listener: (event: RuntimeEvent) => unknown) => {
    // a wrapper per registration: the same function added twice is called twice and removed once per call
    const entry = (event: RuntimeEvent) => listener(event);
    set.add(entry);
    return () => {
      set.delete(entry);
    };
  };

  return {
    on(type, listener) {
      let set = byType.get(type);
      if (!set) byType.set(type, (set = new Set()));
      return add(set, listener as (event: RuntimeEvent) => unknown);
    },
    onAny(listener) {
      return add(any, listener);
    },
    emit(type, payload) {
      try {
        const set = byType.get(type);
        if (!set?.size && any.size === 0) return;
        const event = { ...payload, type, at: new Date() } as unknown as RuntimeEvent;
        // copies: a listener that detaches (or attaches) while being called does not change this delivery
        for (const listener of set ? [...set] : []) call(listener, event);
        for (const listener of [...any]) call(listener, event);
      } catch {
        // building the event cannot fail in practice; emitting must never reach the engine anyway
      }
    },
    hears(type) {
      return any.size > 0 || (byType.get(type)?.size ?? 0) > 0;
    },
    listenerCount() {
      let n = any.size;
      for (const set of byType.values()) n += set.size;
      return n;
    },
  };
}

/** A duration for an event, in ms to a tenth (`1203.4`, not `1203.3827999999`). */
export function eventMs(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/** The message of anything thrown, for an event (at most 500 characters). */
export function errorMessage(error: unknown): string {
  try {
    const message = error instanceof Error ? error.message : typeof error === 'string' ? error : String(error);
    return message.slice(0, 500);
  } catch {
    return 'unknown error';
  }
}
