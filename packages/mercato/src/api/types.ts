/**
 * The admin HTTP API's contract: every JSON shape the server answers under `/api` (and the request bodies and query
 * parameters a client builds), as types only. No runtime code and no import of a server module, so a client (the admin
 * UI in packages/admin-ui) can `import type { … } from 'mercato/api'` without bundling anything of the server.
 * docs/admin-api.md and the per-capability docs (runs.md, logs.md, crons.md, providers.md, functions.md, mcp.md,
 * custom-pages.md) describe the endpoints; test/api/ checks that the server still answers these shapes.
 *
 * Conventions: times are ISO 8601 strings with an offset (`IsoTime`); every error is `ApiErrorBody` with a 4xx/5xx
 * status; fields are never left out unless marked optional (`?`), absent values are `null`.
 *
 * Glossary
 * - run: one execution request of a flow for a tenant (an app and a shop, or no shop for a global run).
 * - trigger: what made a run (`Trigger`): the admin API, `instance.dispatchFlow`, a cron, MCP, a webhook, another flow's
 *   `ctx.dispatchFlow`, a public route or a custom page.
 * - attempt: one try of a run under its retry policy. A failed attempt is retried after a backoff until `maxAttempts`;
 *   sleeps, crash-reclaims and resumes continue the same attempt. Steps and log lines carry the *absolute* attempt
 *   number (never reset, so the history stays distinguishable).
 * - budget attempt: the attempt counted within the current retry budget, i.e. since the last manual retry (which gives
 *   a fresh budget). The `attempt` of a run row and run detail is this figure (0 before the first claim).
 * - lease: a worker's time-limited claim on a running run, extended by heartbeats and identified by a lease token; every
 *   write of the execution is fenced on it. A lease that expires (the worker died) puts the run back to `pending` for
 *   the same attempt and counts in `lostLeases`; 3 lost leases fail the run.
 * - step: a checkpointed unit of a run (`ctx.step`, `ctx.sleep`); its stored result is replayed on later executions.
 * - tenant: the (app handle, shop) pair a session token names; every answer is scoped to it.
 */

// ---------------------------------------------------------------------------------------------------------------------
// Shared

/** An ISO 8601 timestamp with an offset, e.g. `2026-11-01T03:00:00.012+00:00`. */
export type IsoTime = string;

/** A JSON Schema document (draft 2020-12 subset, as produced from a zod schema). */
export type JsonSchema = Record<string, unknown>;

/** Every error answer (4xx, 5xx): `error` is the message; the other fields depend on the error. */
export interface ApiErrorBody {
  error: string;
  /** 400: the request field at fault (`limit`, `input.email`, `ids[2]`, …). */
  field?: string;
  /** 400 of a schema check (flow input, custom page input): every issue found. */
  issues?: InputIssue[];
  /** 500: the request id to find the cause in the server log. */
  requestId?: string;
  /** 409 of a concurrency limit: the active run that holds the slot. */
  existingRunId?: string;
  /** 409 of a run in the wrong state: its status. */
  status?: string;
  [key: string]: unknown;
}

/** One problem found by a schema check. */
export interface InputIssue {
  /** Dotted path in the input (`items.0.sku`); `` for the root. */
  path: string;
  message: string;
  code: string;
}

/** `{ ok: true }`: PATCH /api/mcp/tokens/:id, POST /api/mcp/tokens/:id/revoke. */
export interface OkResponse {
  ok: true;
}

// ---------------------------------------------------------------------------------------------------------------------
// Pages and health

export type PageKey = 'flows' | 'providers' | 'crons' | 'functions' | 'mcp';
export type PageMode = 'visible' | 'hidden' | 'disabled';

/** GET /api/pages: the resolved mode of each admin page (never gated). */
export interface PagesResponse {
  pages: Record<PageKey, PageMode>;
}

/** GET /healthz (outside /api, no auth): the process is alive; always 200 (docs/observability.md). */
export interface HealthResponse {
  ok: true;
  status: 'alive';
  version: string;
  uptimeSeconds: number;
}

/** One check of GET /readyz: `ok`, and what it found (`error`, `pending`, `running`…). */
export type ReadinessCheckResult = { ok: boolean } & Record<string, unknown>;

/**
 * GET /readyz (outside /api, no auth): 200 when every check passes, else 503. Checks: `database`, `migrations`, and
 * `worker` in a process that runs one.
 */
export interface ReadyResponse {
  ok: boolean;
  status: 'ready' | 'not ready';
  checks: Record<string, ReadinessCheckResult>;
  version: string;
}

// ---------------------------------------------------------------------------------------------------------------------
// Flows and runs (docs/flows.md, docs/runs.md)

export type RunStatus = 'pending' | 'running' | 'sleeping' | 'completed' | 'failed' | 'canceled';

/** What made a run (see the glossary). */
export type Trigger = 'api' | 'dispatch' | 'cron' | 'mcp' | 'webhook' | 'flow' | 'route' | 'page';

/** The merged retry policy, frozen on a run at dispatch. */
export interface RetryPolicy {
  /** Attempts in total, the first included. */
  maxAttempts: number;
  /** Delay before the second attempt, ms. */
  initialIntervalMs: number;
  /** Multiplier applied to the delay after each failed attempt. */
  backoffCoefficient: number;
  /** Upper bound of the delay, ms. */
  maxIntervalMs: number;
}

/** Which shops a cron fires for: `global` (once, without a shop), `all` installed shops, or the listed shops. */
export type CronShops = 'global' | 'all' | string | readonly string[];

/** A cron of a flow, as GET /api/flows lists it. */
export interface FlowCron {
  /** `<flow>:<schedule>`, the key of POST /api/crons/toggle. */
  key: string;
  name: string;
  schedule: string;
  shops: CronShops;
  timezone: string;
  input: unknown;
}

/** A registered flow: an entry of GET /api/flows. */
export interface FlowInfo {
  name: string;
  description: string | null;
  /** The input's JSON Schema (the admin UI builds the Run form from it). */
  inputSchema: JsonSchema;
  crons: FlowCron[];
  /** Maximum active runs per (app, shop, flow), a further dispatch refused with 409; null: no such limit. */
  concurrency: number | null;
  /** Load shaping (docs/flows.md, "Fairness and load shaping"); each rule null when the flow has none. */
  shaping: FlowShapingInfo;
  /** Execution time limit of one attempt, ms; null: none. */
  timeout: number | null;
  retryPolicy: RetryPolicy;
}

/** A flow's load shaping as GET /api/flows shows it (key functions are code: not shown). */
export interface FlowShapingInfo {
  /** Keyed concurrency: at most `limit` runs execute at once per key; the others wait. */
  concurrency: { limit: number } | null;
  rateLimit: { limit: number; periodMs: number } | null;
  debounce: { periodMs: number; maxWaitMs: number | null } | null;
  /** -100 to 100 (default 0): the order of a shop's runs. */
  priority: number;
}

/** GET /api/flows */
export interface FlowListResponse {
  flows: FlowInfo[];
}

/** Body of POST /api/flows/:name/run (no other field is accepted). */
export interface RunFlowRequest {
  /** The flow's input (default `{}`), checked against its schema (400 with `issues`). */
  input?: unknown;
  /** Overrides of the flow's retry policy for this run. */
  retryPolicy?: Partial<RetryPolicy>;
  /** Overrides the flow's priority for this run: an integer from -100 to 100, higher first within the shop's runs. */
  priority?: number;
}

/**
 * POST /api/flows/:name/run → 202; 409 `{ error, existingRunId }` at a refusing concurrency limit. A debounced flow's
 * dispatch that joined the run already waiting answers that run's id with `joined: true`.
 */
export interface DispatchResponse {
  runId: string;
  status: 'pending';
  joined?: boolean;
}

/** Query parameters of GET /api/runs and GET /api/flows/:name/runs (no others are accepted). */
export interface RunListQuery {
  /** 1 to 200, default 50. */
  limit?: number;
  offset?: number;
  /** Substring of the flow name, the status or the id. */
  search?: string;
  status?: RunStatus;
  /** ISO date or date-time (without an offset: UTC), on `createdAt`. */
  from?: string;
  to?: string;
}

/** A row of a run list (GET /api/runs, GET /api/flows/:name/runs). No input, output or full error: see RunDetail. */
export interface RunRow {
  id: string;
  flowName: string;
  status: RunStatus;
  /** The budget attempt (glossary): attempts since the last manual retry, 0 before the first. */
  attempt: number;
  trigger: string;
  appHandle: string;
  /** null for a global run. */
  shop: string | null;
  /** The run that dispatched this one with `ctx.dispatchFlow`. */
  parentRunId: string | null;
  createdAt: IsoTime;
  startedAt: IsoTime | null;
  finishedAt: IsoTime | null;
  updatedAt: IsoTime;
  /** When a pending or sleeping run may next be claimed (retry backoff, sleep wake-up). */
  availableAt: IsoTime;
  /**
   * Set when the run waits to retry: an attempt failed and the run is pending again; the time its next attempt may
   * start (its `availableAt`). null otherwise. The admin shows such a run as *Retrying*.
   */
  nextAttemptAt: IsoTime | null;
  /** `<error name>: <message>` of the last failure, at most 300 characters. */
  errorSummary: string | null;
  /** Why the run is not running now and when it expects to become due; null for a running or finished run (docs/flows.md). */
  waiting: RunWaiting | null;
}

/**
 * Why a run waits (docs/flows.md, "Why a run waits"):
 * - `queued`: due, waiting for a worker slot behind its own tenant's runs (other tenants are served in turn);
 * - `claimed`: taken by a worker ahead of a free slot (claiming ahead); its flow body has not started;
 * - `debounced`: a debounced run; later dispatches with the same key push `until` back and replace its input;
 * - `rate_limited`: its flow's `rateLimit` for its key is used up until `until`;
 * - `concurrency`: every slot of its flow's `concurrency` key is held (`heldBy` names one holder);
 * - `retry_backoff`: an attempt failed; the next one may start at `until`;
 * - `sleeping`: in `ctx.sleep` until `until`.
 */
export type RunWaitReason = 'queued' | 'claimed' | 'debounced' | 'rate_limited' | 'concurrency' | 'retry_backoff' | 'sleeping';

export interface RunWaiting {
  reason: RunWaitReason;
  /** When the run expects to become due; null when it is due now and waits for a worker. */
  until: IsoTime | null;
  /** `concurrency`: a run holding a slot of the key; null otherwise. */
  heldBy: string | null;
  /** The shaping key the wait is about (`rate_limited`, `concurrency`, `debounced`), as the flow's key function gave it. */
  key: string | null;
  /** `queued`, on the run detail only: due runs of the same tenant that go before it (at most 1,000 counted); null otherwise. */
  ahead: number | null;
  /** One sentence for people, e.g. `rate-limited until 2026-11-27T12:00:03.12+00:00 (key "shop-a")`. */
  message: string;
}

/** GET /api/runs, GET /api/flows/:name/runs: newest first; `total` counts every match. */
export interface RunListResponse {
  runs: RunRow[];
  total: number;
  limit: number;
  offset: number;
}

/** The error of a failed run (its stack when the error had one). */
export interface RunError {
  name: string;
  message: string;
  stack?: string;
}

/** A checkpointed step of a run (`RunDetail.steps`). */
export interface StepRow {
  name: string;
  /**
   * `sleeping`: a `ctx.sleep` not yet over. `running`: the step was still executing half a second after it started
   * (shorter steps appear once finished); a `running` step of a run that is no longer running was interrupted.
   */
  status: 'running' | 'completed' | 'failed' | 'sleeping';
  /** The absolute attempt that wrote it (glossary). */
  attempt: number;
  /** The stored JSON result. */
  result: unknown;
  error: { name: string; message: string } | null;
  startedAt: IsoTime;
  finishedAt: IsoTime | null;
  /** finishedAt − startedAt; null while unfinished. */
  durationMs: number | null;
  /**
   * `sleep`: a `ctx.sleep` (`sleeping` until its wake time, then `completed` when the run is claimed again; its result is
   * `{ wakeAt }`); `step`: a `ctx.step`.
   */
  kind: 'step' | 'sleep';
  /** A sleep's wake time (when it may be claimed again); null for a step. */
  wakeAt: IsoTime | null;
}

/** GET /api/runs/:id, and `run` of a changed watch answer: every field of a list row but `errorSummary`, and more. */
export interface RunDetail extends Omit<RunRow, 'errorSummary'> {
  input: unknown;
  /** What the flow returned; null until it completes. */
  output: unknown;
  error: RunError | null;
  /** Executions lost because a worker stopped answering (glossary: lease). */
  lostLeases: number;
  retryPolicy: RetryPolicy;
  steps: StepRow[];
}

/** Query parameters of GET /api/runs/:id/watch. */
export interface WatchQuery {
  /** The version of the last answer; absent: answer at once. */
  since?: string;
  /** Seconds to wait for a change, 0 to 30 (default 25). */
  timeout?: number;
}

/**
 * GET /api/runs/:id/watch (long poll): at once with `changed: true` when the run's version differs from `since`, else
 * when it changes or the timeout passes (`changed: false`).
 */
export type WatchResponse = { changed: true; version: string; run: RunDetail; lastLogId: number } | { changed: false; version: string };

/**
 * GET /api/runs/watch (long poll on the tenant's runs, for Home and the runs lists; same query as the run watch): at once
 * with `changed: true` when their version differs from `since`, else when a run is dispatched, changes status or finishes
 * (`changed: true`), or when the timeout passes (`changed: false`). No runs in the answer: the page reloads what it shows.
 */
export interface RunsWatchResponse {
  changed: boolean;
  version: string;
}

/** A failed run of the Home page. */
export interface RecentFailure {
  id: string;
  flowName: string;
  createdAt: IsoTime;
  finishedAt: IsoTime | null;
  errorSummary: string | null;
}

/** GET /api/home: the tenant's runs of the last 24 hours by status, and its five latest failed runs. */
export interface HomeSummary {
  /** Start of the 24-hour window. */
  since: IsoTime;
  /** Every status, 0 when none. */
  counts: Record<RunStatus, number>;
  total: number;
  /** Of the pending runs counted, those waiting to retry after a failed attempt (`nextAttemptAt` set). */
  retrying: number;
  recentFailures: RecentFailure[];
}

/** The window of a chart: the last 24 hours in 1-hour buckets, or the last 7 days in 6-hour buckets. */
export type StatsRange = '24h' | '7d';

/** Query parameters of GET /api/stats/runs (no others are accepted; 400 `{ error, field }` otherwise). */
export interface RunStatsQuery {
  /** Default `24h`. */
  range?: StatsRange;
}

/** One bucket of GET /api/stats/runs: the runs created in `[start, start + bucketMinutes)`. */
export interface RunStatsBucket {
  start: IsoTime;
  /** Every status, 0 when none. */
  counts: Record<RunStatus, number>;
  total: number;
}

/**
 * GET /api/stats/runs?range=24h|7d: the tenant's runs per bucket and status (by `createdAt`), for the Home chart. The
 * window is whole buckets aligned on UTC (hours, or 00/06/12/18 h), the last one holding now: 24 or 28 buckets.
 */
export interface RunStatsResponse {
  range: StatsRange;
  /** 60 or 360. */
  bucketMinutes: number;
  /** Start of the first bucket. */
  since: IsoTime;
  /** End of the last bucket (after now). */
  until: IsoTime;
  /** Oldest first, every bucket of the window (empty ones too). */
  buckets: RunStatsBucket[];
  /** The window's runs by status. */
  counts: Record<RunStatus, number>;
  total: number;
  /** failed / (completed + failed) over the window, 0 to 1 (4 decimals); null when no run finished so. */
  failureRate: number | null;
}

/** A flow of GET /api/stats/flows. */
export interface FlowStatsRow {
  flowName: string;
  /** Runs created in the window, any status. */
  runs: number;
  completed: number;
  failed: number;
  /** completed / (completed + failed), 0 to 1 (4 decimals); null when none finished so. */
  successRate: number | null;
  /**
   * Median and 95th percentile (interpolated) of `finishedAt − startedAt` of the completed and failed runs, ms (0.1 ms):
   * sleeps and retries included. null when there are none.
   */
  p50Ms: number | null;
  p95Ms: number | null;
  /** Runs per hour, oldest first: 24 numbers (the sparkline). */
  hourly: number[];
}

/**
 * GET /api/stats/flows (no query parameter): per flow with runs created in the last 24 hours (whole hours, the last one
 * holding now), ordered by name. Flows without runs in the window are not listed.
 */
export interface FlowStatsResponse {
  since: IsoTime;
  until: IsoTime;
  /** 60. */
  bucketMinutes: number;
  flows: FlowStatsRow[];
}

/** POST /api/runs/:id/cancel (409 `{ error, status }` for a finished run). */
export interface CancelRunResponse {
  runId: string;
  status: 'canceled';
  /** The status it had (pending, running or sleeping). */
  previousStatus: string;
}

/** `?mode=` of POST /api/runs/:id/retry: `reset` deletes every step result; anything else is `resume`. */
export type RetryMode = 'resume' | 'reset';

/** POST /api/runs/:id/retry → 202 (409 for an active run or at the concurrency limit). */
export interface RetryRunResponse {
  runId: string;
  status: 'pending';
  mode: RetryMode;
  /** completed, failed or canceled. */
  previousStatus: string;
  deletedSteps: number;
}

/** DELETE /api/runs/:id (409 for an active run). */
export interface DeleteRunResponse {
  ok: true;
  runId: string;
}

/** Body of POST /api/runs/bulk-delete: 1 to 100 run ids. */
export interface BulkDeleteRequest {
  ids: string[];
}

/** POST /api/runs/bulk-delete: active, unknown and other tenants' ids count in `skipped`. */
export interface BulkDeleteResponse {
  deleted: number;
  skipped: number;
}

// ---------------------------------------------------------------------------------------------------------------------
// Logs (docs/logs.md)

export type LogLevel = 'info' | 'warn' | 'error';

/** Query parameters of GET /api/runs/:id/logs (no others are accepted). */
export interface LogSearchQuery {
  /** The search query (docs/logs.md); 400 `{ error, field: 'q', position, reason }` when it does not parse. */
  q?: string;
  /** Comma-separated subset of `info,warn,error`. */
  levels?: string;
  limit?: number;
  offset?: number;
  /** Keyset cursor: `nextBefore` of the previous page. */
  before?: number;
}

/** Query parameters of GET /api/runs/:id/logs/export (a file download, not JSON: `run-<id>-logs.<format>`). */
export interface LogExportQuery {
  format?: 'json' | 'csv';
  q?: string;
  levels?: string;
}

/** A log line of a run. */
export interface LogRow {
  id: number;
  level: LogLevel;
  message: string;
  data: unknown;
  /** The step that wrote it; null outside steps. */
  step: string | null;
  /** The absolute attempt that wrote it (glossary). */
  attempt: number;
  createdAt: IsoTime;
  /** true: shown only as context around a match; false: the line matches the query. */
  context: boolean;
  /** On context lines: the ids of the page's matches it surrounds (newest first). */
  contextOf?: number[];
}

/** GET /api/runs/:id/logs: matching lines newest first, with their context lines. */
export interface LogSearchResponse {
  logs: LogRow[];
  /** Exact up to 10,000; beyond, 10,000 and `totalExact: false`. */
  total: number;
  totalExact: boolean;
  limit: number;
  offset: number;
  /** Pass as `before` for the next page; null when this page is not full. */
  nextBefore: number | null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Crons (docs/crons.md)

/** Outcome of a cron tick. */
export type TickStatus = 'dispatched' | 'conflict' | 'skipped' | 'failed';

/** The tenant's most recent tick of a cron. */
export interface CronTick {
  fireAt: IsoTime;
  status: TickStatus;
  runId: string | null;
  reason: string | null;
}

/** A configured cron with the tenant's state: an entry of GET /api/crons. */
export interface Cron {
  /** `<flow>:<schedule>` */
  key: string;
  name: string;
  flow: string;
  schedule: string;
  /** The schedule in English; null for expressions the formatter does not cover. */
  description: string | null;
  timezone: string;
  /** Next fire time; null when the schedule never fires again. */
  nextRunAt: IsoTime | null;
  shops: CronShops;
  input: unknown;
  /** The tenant's override, else true. */
  enabled: boolean;
  /** Whether the cron fires for this tenant at all. */
  targeted: boolean;
  lastTick: CronTick | null;
}

/** GET /api/crons */
export interface CronListResponse {
  crons: Cron[];
}

/** Body of POST /api/crons/toggle. */
export interface CronToggleRequest {
  key: string;
  enabled: boolean;
}

/** POST /api/crons/toggle (404 for an unknown key). */
export interface CronToggleResponse {
  ok: true;
  key: string;
  enabled: boolean;
}

// ---------------------------------------------------------------------------------------------------------------------
// Providers (docs/providers.md)

export type FieldType = 'text' | 'password' | 'number' | 'select' | 'checkbox';

/** A field of a provider's form (and of a function's configuration): metadata, never a password's value. */
export interface ProviderField {
  name: string;
  type: FieldType;
  label: string;
  required: boolean;
  description?: string;
  placeholder?: string;
  options?: { label: string; value: string }[];
  /** Password fields only: whether a value is saved. */
  hasValue?: boolean;
}

/** The status the dashboard shows. */
export type ProviderStatus = 'Not configured' | 'Configured' | 'Connected' | 'Error';

/** A provider with the tenant's saved config: an entry of GET /api/providers, `provider` of PUT /api/providers/:name. */
export interface Provider {
  name: string;
  description: string | null;
  fields: ProviderField[];
  /** The saved values except passwords. */
  config: Record<string, unknown>;
  hasChecker: boolean;
  /** The connector methods flows can call. */
  methods: string[];
  lastCheckedAt: IsoTime | null;
  lastCheckOk: boolean | null;
  configured: boolean;
  status: ProviderStatus;
  /** Why the saved config is unusable (cannot be decrypted); null when it is fine or absent. */
  configError: string | null;
}

/** GET /api/providers */
export interface ProviderListResponse {
  providers: Provider[];
}

/** Body of PUT /api/providers/:name: an empty or missing password keeps the saved one. */
export interface SaveProviderRequest {
  config: Record<string, string | number | boolean | null>;
}

/** PUT /api/providers/:name; a 400 carries `errors: ProviderFieldError[]` and `field` (the first). */
export interface SaveProviderResponse {
  ok: true;
  provider: Provider;
}

/** One entry of `errors` in a 400 of PUT /api/providers/:name. */
export interface ProviderFieldError {
  field: string;
  message: string;
}

/** POST /api/providers/:name/check; a failed check is 500 `{ ok: false, error }`. */
export interface ProviderCheckResponse {
  ok: boolean;
  lastCheckedAt: IsoTime | null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Functions (docs/functions.md)

export type FunctionType =
  | 'discount'
  | 'cart_transform'
  | 'delivery_customization'
  | 'payment_customization'
  | 'checkout_validation'
  | 'fulfillment_constraint'
  | 'order_routing_location_rule'
  | 'pickup_point_delivery_option_generator'
  | 'local_pickup_delivery_option_generator';

export type DiscountMode = 'automatic' | 'code';

export type OwnerFieldType = 'text' | 'datetime' | 'number' | 'checkbox' | 'select' | 'multiselect';

/** A field of the instance itself (beside `config`), as GET /api/functions lists it. */
export interface OwnerField {
  /** Dotted name (`combinesWith.orderDiscounts`); `path` is the same as an array (the `field` of userErrors). */
  name: string;
  path: string[];
  type: OwnerFieldType;
  label: string;
  description?: string;
  /** The platform refuses a create without it. */
  required: boolean;
  /** `null` is accepted and clears the value. */
  nullable: boolean;
  /** Used by a create that omits the field (`"now"` for a date-time: the time of the request). */
  default?: unknown;
  options?: { label: string; value: string }[];
  /** Discounts: the modes the field belongs to. */
  modes?: DiscountMode[];
  /** Can be given on create only. */
  createOnly?: boolean;
}

/** A configuration field: provider field metadata plus its body path (`["config", name]`). */
export interface ConfigField extends Omit<ProviderField, 'hasValue'> {
  path: string[];
}

/** Which operations the platform has a mutation for (`recreate`: updated by deleting and creating again). */
export interface FunctionSupport {
  create: boolean;
  update: 'mutation' | 'recreate' | false;
  delete: boolean;
}

/** A function definition authorized for the tenant: an entry of GET /api/functions. */
export interface FunctionDefinitionInfo {
  /** Its key in the config's `functions`. */
  key: string;
  handle: string;
  type: FunctionType;
  title: string | null;
  description: string | null;
  /** Discounts: the modes instances may use; null for other types. */
  discountModes: DiscountMode[] | null;
  supported: FunctionSupport;
  fields: ConfigField[];
  ownerFields: OwnerField[];
  /** Where each instance keeps its configuration. */
  configMetafield: { namespace: string; key: string; type: string };
}

/** GET /api/functions */
export interface FunctionListResponse {
  functions: FunctionDefinitionInfo[];
}

/** Owner field values in the body's shape (create and update bodies; `owner` of an instance). */
export type FunctionOwnerValues = {
  mode?: DiscountMode;
  title?: string;
  code?: string;
  usageLimit?: number | null;
  appliesOncePerCustomer?: boolean;
  startsAt?: string;
  endsAt?: string | null;
  combinesWith?: { orderDiscounts?: boolean; productDiscounts?: boolean; shippingDiscounts?: boolean };
  enabled?: boolean;
  blockOnFailure?: boolean;
  deliveryMethodTypes?: string[];
};

/** A live instance on the platform. */
export interface FunctionInstanceInfo {
  /** The platform's GID; URL-encode it in paths. */
  id: string;
  handle: string;
  type: FunctionType;
  functionId: string | null;
  owner: FunctionOwnerValues;
  /** Discounts only; null for other types. */
  status: 'ACTIVE' | 'SCHEDULED' | 'EXPIRED' | null;
  config: Record<string, unknown> | null;
  /** Why the stored configuration is unusable (not JSON, not an object). */
  configError: string | null;
  metafieldId: string | null;
}

/** The deployed function of a handle. */
export interface DeployedFunction {
  id: string;
  handle: string;
  apiType: string;
}

/** GET /api/functions/:handle/instances */
export interface InstanceListResponse {
  handle: string;
  type: FunctionType;
  /** null when the handle is not deployed for the app. */
  function: DeployedFunction | null;
  instances: FunctionInstanceInfo[];
}

/** Body of POST /api/functions/:handle/instances and PUT …/instances/:id (an update sends only what changed). */
export type FunctionInstanceRequest = FunctionOwnerValues & { config?: Record<string, unknown> };

/** POST /api/functions/:handle/instances → 201: the platform's mutation and payload as it answered. */
export interface CreateInstanceResponse {
  mutation: string;
  payload: Record<string, unknown>;
  instance: FunctionInstanceInfo | null;
}

/**
 * PUT /api/functions/:handle/instances/:id. `recreated` (cart transforms, fulfillment constraints: the platform has no
 * update) means the instance was deleted and created again: `id` is the new one and `previousId` the old one.
 */
export interface UpdateInstanceResponse {
  ok: true;
  id: string;
  recreated: boolean;
  /** Present when recreated. */
  previousId?: string;
}

/** DELETE /api/functions/:handle/instances/:id[?mode=automatic|code] */
export interface DeleteInstanceResponse {
  ok: true;
  deletedId: string;
}

/** A refused field of a function instance request (`userErrors` of a 400). */
export interface UserError {
  /** Path in the request body (`["config", "percent"]`); null when no field is to blame. */
  field: string[] | null;
  message: string;
  code: string | null;
  /** Platform errors: the field path in the mutation's terms. */
  platformField?: string[] | null;
}

/** The 400 of the function instance endpoints. */
export interface FunctionInputErrorBody extends ApiErrorBody {
  source: 'mercato' | 'platform';
  userErrors: UserError[];
  /** A recreate whose new instance was refused: the id the old one was created again under (null if that failed). */
  restoredId?: string | null;
  previousId?: string;
}

// ---------------------------------------------------------------------------------------------------------------------
// MCP tokens (docs/mcp.md)

export type RiskLevel = 'low' | 'medium' | 'high' | 'critical';

/** A permission a token may hold. */
export interface McpPermission {
  key: string;
  label: string;
  group: string;
  riskLevel: RiskLevel;
  description: string | null;
  /** A core permission of the service (not declared by the app). */
  core: boolean;
  /** Known and grantable, but no capability uses it yet. */
  reserved: boolean;
}

/** A tool of the catalog. */
export interface McpTool {
  name: string;
  title: string | null;
  description: string;
  requiredPermissions: readonly string[];
  riskLevel: RiskLevel;
  builtIn: boolean;
}

/** A resource of the catalog. */
export interface McpResource {
  uri: string;
  name: string;
  description: string | null;
  mimeType: string | null;
  requiredPermissions: readonly string[];
  builtIn: boolean;
}

/** A choice of the token form's expiry. */
export interface ExpiryOption {
  label: string;
  /** null: never expires. */
  expiresInDays: number | null;
  default: boolean;
}

/** GET /api/mcp/capabilities */
export interface McpCapabilities {
  /** Whether `/mcp` is served. */
  enabled: boolean;
  crossShopAccess: boolean;
  permissions: McpPermission[];
  tools: McpTool[];
  resources: McpResource[];
  riskLevels: readonly RiskLevel[];
  expiryOptions: ExpiryOption[];
  defaultExpiresInDays: number | null;
}

export type McpTokenStatus = 'active' | 'disabled' | 'revoked';

/** A token's public metadata (never the secret nor its hash). */
export interface McpToken {
  id: string;
  name: string;
  permissions: string[];
  status: McpTokenStatus;
  expiresAt: IsoTime | null;
  /** `expiresAt` has passed (by the database clock at read time). */
  expired: boolean;
  /** A short, non-secret identification of the secret. */
  fingerprint: string;
  lastUsedAt: IsoTime | null;
  createdAt: IsoTime;
  updatedAt: IsoTime;
  revokedAt: IsoTime | null;
}

/**
 * `denied`: the token lacks a permission (JSON-RPC -32003); `refused`: the token itself was refused with HTTP 403
 * (disabled, revoked, expired, or its app is no longer configured) — `error` says which.
 */
export type McpAuditStatus = 'ok' | 'error' | 'denied' | 'timeout' | 'refused';

/** A call made with a token (the latest 10 are on the token's detail). */
export interface McpAudit {
  id: number;
  /** `request`: a request refused before any tool or resource was reached (a disabled, revoked or expired token). */
  kind: 'tool' | 'resource' | 'request';
  /** The tool's name or the resource's URI; for kind `request`, the JSON-RPC method (e.g. `initialize`). */
  capability: string;
  /** The token's grants at the time. */
  permissions: string[];
  requiredPermissions: string[];
  status: McpAuditStatus;
  error: string | null;
  durationMs: number;
  requestId: string | null;
  targetShop: string | null;
  createdAt: IsoTime;
}

/** GET /api/mcp/tokens: newest first. */
export interface McpTokenListResponse {
  tokens: McpToken[];
}

/** GET /api/mcp/tokens/:id */
export type McpTokenDetail = McpToken & { audits: McpAudit[] };

/** Body of POST /api/mcp/tokens: give at most one of expiresAt / expiresInDays (default 90 days; null: never). */
export interface CreateMcpTokenRequest {
  name: string;
  permissions?: string[];
  expiresAt?: IsoTime | null;
  expiresInDays?: number | null;
}

/** POST /api/mcp/tokens → 201, POST /api/mcp/tokens/:id/rotate: the secret is shown this once. */
export interface McpTokenSecretResponse {
  token: McpToken;
  secret: string;
}

/** Body of PATCH /api/mcp/tokens/:id (answers OkResponse; 409 for a revoked token). */
export interface PatchMcpTokenRequest {
  name?: string;
  status?: 'active' | 'disabled';
  expiresAt?: IsoTime | null;
  expiresInDays?: number | null;
}

/** Body of PUT /api/mcp/tokens/:id/permissions (replaces the grants). */
export interface SetMcpPermissionsRequest {
  permissions: string[];
}

/** PUT /api/mcp/tokens/:id/permissions */
export interface SetMcpPermissionsResponse {
  ok: true;
  permissions: string[];
}

// ---------------------------------------------------------------------------------------------------------------------
// Custom pages (docs/custom-pages.md; 404 unless experimental.customPages)

/** A custom page the tenant may open. */
export interface CustomPageEntry {
  key: string;
  title: string;
  path: string;
  loaders: string[];
  actions: string[];
}

/** GET /api/pages/custom */
export interface CustomPagesResponse {
  pages: CustomPageEntry[];
  /** The pages shown in the navigation (`nav` not false). */
  navigation: Array<{ label: string; path: string }>;
}

/** Body of POST /api/pages/custom/:page/_rpc/:kind/:name (`kind`: loader or action). */
export interface CustomPageRpcRequest {
  input?: unknown;
}

/** POST /api/pages/custom/:page/_rpc/:kind/:name: what the loader or action returned (undefined becomes null). */
export interface CustomPageRpcResponse {
  result: unknown;
}
