/**
 * The configuration contract: every type an app developer writes in `service.config.ts`.
 * Runtime behaviour lives in the capability folders; this file only describes shapes.
 */
import type { FunctionType } from '../api/types.ts';
import type { z } from 'zod';
import type { Database } from '../db/engine.ts';

// ---------------------------------------------------------------------------------------------
// Shared small types

export type PageKey = 'flows' | 'providers' | 'crons' | 'functions' | 'mcp';
export const PAGE_KEYS: readonly PageKey[] = ['flows', 'providers', 'crons', 'functions', 'mcp'];
export type PageMode = 'visible' | 'hidden' | 'disabled';
export const PAGE_MODES: readonly PageMode[] = ['visible', 'hidden', 'disabled'];
export type PagesConfig = Partial<Record<PageKey, PageMode>>;

export type RunStatus = 'pending' | 'running' | 'sleeping' | 'completed' | 'failed' | 'canceled';
export const RUN_STATUSES: readonly RunStatus[] = ['pending', 'running', 'sleeping', 'completed', 'failed', 'canceled'];
export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = ['pending', 'running', 'sleeping'];

export type RiskLevel = 'low' | 'medium' | 'high' | 'critical';
export const RISK_LEVELS: readonly RiskLevel[] = ['low', 'medium', 'high', 'critical'];

export interface RetryPolicy {
  /** Attempts in total, the first included. */
  maxAttempts: number;
  /** Delay before the second attempt. */
  initialIntervalMs: number;
  /** Multiplier applied to the delay after each failed attempt. */
  backoffCoefficient: number;
  /** Upper bound of the delay. */
  maxIntervalMs: number;
}

export interface WorkerConfig {
  concurrency: number;
  pollIntervalMs: number;
  pollMaxIntervalMs: number;
  pollBackoffCoefficient: number;
  leaseDurationMs: number;
  /**
   * Most runs a worker claims ahead of its free slots when the queue has a backlog (0 turns claiming ahead off). The
   * worker holds only about 100 ms of work ahead, from the durations of its recent runs, and hands back a run that waited
   * 1 s (docs/flows.md, "Claiming ahead").
   */
  prefetch: number;
}

/** Anything with zod's `safeParse` (a zod schema in practice). */
export type Schema<Out = unknown, In = Out> = z.ZodType<Out, In>;

// ---------------------------------------------------------------------------------------------
// Flows

export interface FlowLogger {
  info(message: string, data?: Record<string, unknown>): Promise<void>;
  warn(message: string, data?: Record<string, unknown>): Promise<void>;
  error(message: string, data?: Record<string, unknown>): Promise<void>;
}

export interface StepOptions {
  /** Time limit of one execution of the step, in ms. Must be positive. */
  timeout?: number;
}

/** A duration: milliseconds, or a string like `30s`, `5m`, `2h`, `1d`. */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

export interface DispatchOptions {
  flowName: string;
  input?: unknown;
  shop?: string | null;
  shopifyApp?: string;
  retryPolicy?: Partial<RetryPolicy>;
  /** Overrides the flow's `priority` for this run (an integer from -100 to 100; higher runs first within its tenant). */
  priority?: number;
}

export interface DispatchResult {
  runId: string;
  status: 'pending';
  /** True when a debounced flow's dispatch joined a run that was already waiting (`runId` is that run). */
  joined?: boolean;
}

/** Connector object of one provider: its methods without their first (config) argument. */
export type ProviderConnector<P> =
  P extends ProviderDefinition<any, infer M>
    ? { [K in keyof M]: M[K] extends (config: any, ...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never }
    : never;

export type ProviderConnectors<P extends ProvidersMap> = { [K in keyof P]: ProviderConnector<P[K]> };

export interface AdminRequestOptions {
  variables?: Record<string, unknown>;
  /** Default: `shopify.apiVersion` of the config, else the latest stable version. */
  apiVersion?: string;
  signal?: AbortSignal;
  /** Which operation of a document with several to run. */
  operationName?: string;
}

/** The answer of `raw()`: the HTTP status and the parsed JSON body (or the text when it is not JSON). */
export interface AdminRawResponse {
  status: number;
  body: unknown;
}

/** Admin GraphQL client of the run's tenant (comes with the platform capability). See docs/platform.md. */
export interface AdminGraphqlClient {
  /** Returns `data`; waits out throttling, retries 429/5xx, throws typed errors. */
  request<T = any>(query: string, options?: AdminRequestOptions): Promise<T>;
  /** Sends once and returns `{ status, body }` as the platform answered (no retries, no error mapping). */
  raw(query: string, options?: AdminRequestOptions): Promise<AdminRawResponse>;
}

export interface FlowContext<P extends ProvidersMap = ProvidersMap> {
  runId: string;
  flowName: string;
  appHandle: string;
  /** The shop of the run, or null for a global run. */
  shop: string | null;
  /** 1 for the first attempt. Sleeps and resumes do not count. */
  attempt: number;
  /** Aborts on cancel, timeout, lost lease or worker stop. */
  signal: AbortSignal;
  log: FlowLogger;
  step<T>(name: string, fn: (stepCtx: { signal: AbortSignal; attempt: number }) => Promise<T> | T, options?: StepOptions): Promise<T>;
  sleep(name: string, duration: Duration): Promise<void>;
  dispatchFlow(options: DispatchOptions): Promise<DispatchResult>;
  providers: ProviderConnectors<P>;
  /** Admin GraphQL for the run's shop; throws for a global run. */
  admin: AdminGraphqlClient;
}

/** The tenant a shaping key is computed for. */
export interface ShapingTenant {
  shop: string | null;
  appHandle: string;
}

/**
 * A shaping key: the run's input (as the flow's schema outputs it) and tenant → a string. The default key is the run's
 * shop (`"(global)"` for a global run). Keys are scoped to the app and the flow.
 */
export type ShapingKey<I = any> = (input: I, tenant: ShapingTenant) => string;

export interface KeyedConcurrency<I = any> {
  /** Runs executing at once per key (a positive integer). */
  limit: number;
  key?: ShapingKey<I>;
}

export interface RateLimitRule<I = any> {
  /** Executions that may start per period per key (a positive integer). */
  limit: number;
  /** The window: milliseconds or a duration string ("1s", "1m"); from 1 ms to 24 h. */
  period: Duration;
  key?: ShapingKey<I>;
}

export interface DebounceRule<I = any> {
  /** Quiet time after the last dispatch before the run starts: milliseconds or a duration string; from 1 ms to 24 h. */
  period: Duration;
  /** Optional cap: the run starts at most this long after the first dispatch it joined, however many follow. */
  maxWait?: Duration;
  key?: ShapingKey<I>;
}

export interface FlowConcurrency {
  /** Maximum active runs per (app, shop, flow). Default 1. */
  limit: number;
}

export interface FlowDefinition<
  Name extends string = string,
  Input extends Schema<any, any> = Schema<any, any>,
  Output = unknown,
  P extends ProvidersMap = any,
> {
  name: Name;
  description?: string;
  input: Input;
  /** Time limit of one attempt, in ms. */
  timeout?: number;
  retryPolicy?: Partial<RetryPolicy>;
  /**
   * A number: maximum active runs per (app, shop, flow), a further dispatch is refused with 409 (default 1); `null`: no
   * limit. An object `{ limit, key }`: at most `limit` runs execute at once per key, the others wait (never refused).
   */
  concurrency?: number | null | KeyedConcurrency<z.output<Input>>;
  /** At most `limit` executions start per `period` per key; the others wait, none is dropped. */
  rateLimit?: RateLimitRule<z.output<Input>>;
  /** Dispatches with the same key within `period` join one run, which starts `period` after the last one with its input. */
  debounce?: DebounceRule<z.output<Input>>;
  /** Orders the runs of one tenant (higher first); an integer from -100 to 100, default 0. Never delays another tenant. */
  priority?: number;
  run(ctx: FlowContext<P>, input: z.output<Input>): Promise<Output> | Output;
}

export type FlowsMap = Record<string, FlowDefinition<string, Schema<any, any>, any, any>>;

export type FlowInput<F> = F extends FlowDefinition<any, infer I, any, any> ? z.input<I> : never;

// ---------------------------------------------------------------------------------------------
// Providers

export type FieldType = 'text' | 'password' | 'number' | 'select' | 'checkbox';
export const FIELD_TYPES: readonly FieldType[] = ['text', 'password', 'number', 'select', 'checkbox'];

export interface SelectOption {
  label: string;
  value: string;
}

export interface FieldSpec {
  type: FieldType;
  label: string;
  /** Default true. */
  required?: boolean;
  description?: string;
  /** A schema validator; its transformed (output) value becomes the saved value. */
  validate?: Schema<any, any>;
  /** Only for `text`. */
  placeholder?: string;
  /** Required for `select`: non-empty, unique values. */
  options?: readonly SelectOption[];
}

export type FieldsMap = Record<string, FieldSpec>;

type FieldValue<F extends FieldSpec> = F['type'] extends 'number' ? number : F['type'] extends 'checkbox' ? boolean : string;
export type ProviderConfigOf<Fields extends FieldsMap> = { [K in keyof Fields]: FieldValue<Fields[K]> };

export interface ProviderDefinition<
  Fields extends FieldsMap = FieldsMap,
  Methods extends Record<string, (config: any, ...args: any[]) => any> = Record<string, (config: any, ...args: any[]) => any>,
> {
  name: string;
  description?: string;
  ui: { fields: Fields };
  checker?: (args: { config: ProviderConfigOf<Fields>; signal: AbortSignal }) => boolean | Promise<boolean>;
  transformer?: (args: { data: Record<string, unknown> }) => unknown;
  methods: Methods;
}

export type ProvidersMap = Record<string, ProviderDefinition<any, any>>;

// ---------------------------------------------------------------------------------------------
// Platform functions

/**
 * The function types (docs/functions.md). The last three have no Admin API mutation on the platform (merchants
 * activate them in the platform's own settings): they can be defined and listed, and their instance endpoints answer 400.
 */
export type { FunctionType };
export const FUNCTION_TYPES: readonly FunctionType[] = [
  'discount',
  'cart_transform',
  'delivery_customization',
  'payment_customization',
  'checkout_validation',
  'fulfillment_constraint',
  'order_routing_location_rule',
  'pickup_point_delivery_option_generator',
  'local_pickup_delivery_option_generator',
];

export type DiscountMode = 'automatic' | 'code';

export interface FunctionDefinition {
  type: FunctionType;
  /** Unique across the app: the function's extension handle on the platform. */
  handle: string;
  title?: string;
  description?: string;
  /** Discounts only: which modes instances may use. Default `['automatic']`. */
  discountModes?: readonly DiscountMode[];
  /**
   * The editable configuration stored on each instance, as JSON in the app-owned metafield
   * `$app` / `function-configuration` (docs/functions.md). Same field specs as providers, except `password`: the
   * platform stores the metafield in plain text and the function reads it.
   */
  fields: FieldsMap;
  /** Optional per-request authorization: return false to answer 404. */
  authorize?: (ctx: { appHandle: string; shop: string }) => boolean | Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// Webhooks

export interface WebhookContext {
  appHandle: string;
  shop: string;
  topic: string;
  webhookId: string;
  /** `X-Shopify-Event-Id`, when the platform sent one. */
  eventId: string | null;
  /** `X-Shopify-Triggered-At`, when the platform sent one. */
  triggeredAt: string | null;
  /** `X-Shopify-API-Version` of the payload. */
  apiVersion: string | null;
  runId: string;
  /** 1 for the first attempt of the handler's run. */
  attempt: number;
  signal: AbortSignal;
  log: FlowLogger;
  /** A checkpointed step, as in flows (a retried handler does not redo completed steps). */
  step: FlowContext['step'];
  dispatchFlow(options: DispatchOptions): Promise<DispatchResult>;
  /** Admin GraphQL client of the shop (not usable once the app is uninstalled). */
  admin: AdminGraphqlClient;
}

export interface WebhookDefinition<Payload = any> {
  /** Platform topic, for example `orders/create`. Must equal its key in `webhooks`. */
  topic: string;
  description?: string;
  handler(ctx: WebhookContext, payload: Payload): Promise<void> | void;
  /** Load shaping of the handler's runs (docs/flows.md, "Fairness and load shaping"); keys receive the payload. */
  concurrency?: KeyedConcurrency<Payload>;
  rateLimit?: RateLimitRule<Payload>;
  debounce?: DebounceRule<Payload>;
  priority?: number;
}

export type WebhooksMap = Record<string, WebhookDefinition>;

// ---------------------------------------------------------------------------------------------
// Crons

export type CronShops = 'global' | 'all' | string | readonly string[];

export type CronEntry<F extends FlowsMap = FlowsMap> = {
  [K in keyof F & string]: {
    name?: string;
    schedule: string;
    flow: K;
    input?: FlowInput<F[K]>;
    shops?: CronShops;
    /** IANA time zone the schedule is read in. Default `UTC`. */
    timezone?: string;
  };
}[keyof F & string];

// ---------------------------------------------------------------------------------------------
// MCP

export interface McpPermissionDefinition {
  label: string;
  /** Default: the key's namespace. */
  group?: string;
  /** Default `medium`. */
  riskLevel?: RiskLevel;
  description?: string;
}

export interface McpToolContext {
  appHandle: string;
  shop: string;
  tokenId: string;
  permissions: readonly string[];
  signal: AbortSignal;
  /** The service's database (raw SQL with drizzle's `sql` template: `await ctx.db.query(sql\`…\`)`); filter by appHandle and shop. */
  db: Database;
}

export type McpToolResult =
  string | Record<string, unknown> | { content?: unknown[]; structuredContent?: Record<string, unknown>; isError?: boolean };

export interface McpToolDefinition {
  description: string;
  title?: string;
  requiredPermissions: readonly string[];
  riskLevel?: RiskLevel;
  inputSchema?: Record<string, unknown>;
  run(ctx: McpToolContext, input: any): Promise<McpToolResult> | McpToolResult;
}

export interface McpResourceDefinition {
  name: string;
  description?: string;
  mimeType?: string;
  requiredPermissions: readonly string[];
  read(ctx: McpToolContext): Promise<string | { text: string; mimeType?: string }> | string | { text: string; mimeType?: string };
}

export interface McpConfig {
  /** Default true. */
  enabled?: boolean;
  /** Let `service.admin.graphql` and `service.shops.list` reach every shop installed for the token's app. Default false. */
  crossShopAccess?: boolean;
  permissions?: Record<string, McpPermissionDefinition>;
  tools?: Record<string, McpToolDefinition>;
  /** Keyed by resource URI. */
  resources?: Record<string, McpResourceDefinition>;
}

// ---------------------------------------------------------------------------------------------
// Platform (the `shopify` option)

export interface PlatformAppConfig {
  /** Project-relative TOML path with `client_id` and `application_url`. Mutually exclusive with `apiKey`. */
  toml?: string;
  apiKey?: string;
  apiSecret: string;
  appUrl?: string;
}

export interface PlatformConfig {
  scopes?: string;
  apps?: Record<string, PlatformAppConfig>;
  /** Admin API version used when a call names none. Default: the latest stable. */
  apiVersion?: string;
}

// ---------------------------------------------------------------------------------------------
// Custom pages (experimental; docs/custom-pages.md)

/** Writes to the service's log (pino), with the request id, tenant, page and operation attached. */
export interface CustomPageLogger {
  info(message: string, data?: Record<string, unknown>): void;
  warn(message: string, data?: Record<string, unknown>): void;
  error(message: string, data?: Record<string, unknown>): void;
}

/** `ctx.dispatchFlow` of a custom page: always for the request's app and shop. */
export interface CustomPageDispatchOptions {
  flowName: string;
  input?: unknown;
  retryPolicy?: Partial<RetryPolicy>;
}

/** What `authorize`, loaders and actions receive. Built for each request; never shared between tenants. */
export interface CustomPageContext<P extends ProvidersMap = ProvidersMap> {
  appHandle: string;
  shop: string;
  /** The key of the page in `experimental.pages`. */
  page: string;
  /** The request's id (`X-Request-Id`), also on every log line. */
  requestId: string;
  /** Aborts when the time limit passes or the client goes away. */
  signal: AbortSignal;
  /** Connectors of the app's providers for this shop (the saved config is never exposed). */
  providers: ProviderConnectors<P>;
  /** Enqueues a run for this app and shop (trigger `page`); rejects with the typed dispatch errors of routes. */
  dispatchFlow(options: CustomPageDispatchOptions): Promise<DispatchResult>;
  log: CustomPageLogger;
}

/** The value a loader or action receives: the schema's output, or `undefined` when it declares no input. */
export type CustomPageInput<S> = S extends Schema<any, any> ? z.output<S> : undefined;

/** A loader (reads) or an action (writes), called through the page's RPC path. */
export interface CustomPageOperation<S = any, P extends ProvidersMap = any> {
  description?: string;
  /** Validates `input` of the request body (a zod schema); the parsed (output) value is given to `run`. */
  input?: S & Schema<any, any>;
  /** Time limit in ms, at most 30000 (the default). */
  timeout?: number;
  /** The result must be JSON-serialisable (`undefined` is sent as `null`). */
  run(ctx: CustomPageContext<P>, input: CustomPageInput<S>): unknown;
}

export type CustomPageOperations<M extends Record<string, unknown>, P extends ProvidersMap = any> = {
  [K in keyof M]: CustomPageOperation<M[K], P>;
};

export interface CustomPageDefinition<
  L extends Record<string, unknown> = any,
  A extends Record<string, unknown> = any,
  P extends ProvidersMap = any,
> {
  title: string;
  /** The page's route in the admin, e.g. `/reports/daily`. Default `/<key>`. */
  path?: string;
  /** Listed in `navigation`. Default true. */
  nav?: boolean;
  /** Runs on every request (listing and RPC); false, a throw or a time-out hide the page (404). Default: allowed. */
  authorize?: (ctx: CustomPageContext<P>) => boolean | Promise<boolean>;
  loaders?: CustomPageOperations<L, P>;
  actions?: CustomPageOperations<A, P>;
}

export type CustomPagesMap = Record<string, CustomPageDefinition<any, any, any>>;

// ---------------------------------------------------------------------------------------------
// Experimental

export interface ExperimentalConfig {
  /** Enables custom pages (GET /api/pages/custom and their RPC). Default false. */
  customPages?: boolean;
  /** Custom pages by key (`defineCustomPage`); needs `customPages: true`. */
  pages?: CustomPagesMap;
}

// ---------------------------------------------------------------------------------------------
// Rate limits (docs/security.md, "Rate limits")

/**
 * A token bucket: up to `burst` requests at once, refilled evenly at `requestsPerMinute`. Kept in memory by each
 * process, so with N server processes a key may make up to N times the figure.
 */
export interface RateLimit {
  /** Requests per minute on average; a positive integer. */
  requestsPerMinute: number;
  /** Requests allowed at once (the bucket's size); a positive integer. Default: `requestsPerMinute`. */
  burst?: number;
}

/** Optional request limits; each is off unless set. An exhausted bucket answers 429 with `Retry-After`. */
export interface RateLimitsConfig {
  /** `POST /mcp`, counted per MCP token (after authentication). Default: off. */
  mcp?: { perToken?: RateLimit | false };
  /** `/api/*`, counted per app and shop of the session token (after authentication). Default: off. */
  api?: { perShop?: RateLimit | false };
}

// ---------------------------------------------------------------------------------------------
// Retention (docs/retention.md)

/** How long finished data is kept: a Duration (`30d`, `12h`, ms) or `false` to keep it forever. */
export type RetentionPeriod = Duration | false;

export interface RetentionConfig {
  /** Finished runs (completed, failed, canceled) with their steps and log lines, by finish time. Default `30d`. */
  runs?: RetentionPeriod;
  /** MCP audit records, by call time. Default `90d`. */
  mcpAudit?: RetentionPeriod;
  /** Webhook dedupe records, by receipt time. At least `2d` (the platform's retries). Default `7d`. */
  webhookDeliveries?: RetentionPeriod;
  /** Cron tick records, by fire time. At least `1d` (the scheduler's exactly-once window). Default `7d`. */
  cronTicks?: RetentionPeriod;
  /** Rows deleted per statement; a positive integer of at most 100000. Default 1000. */
  batchSize?: number;
  /** Time between two automatic passes of `mercato start` (and `dev`). At least `1m`. Default `1h`. */
  interval?: Duration;
}

/** The retention after defaults: periods in ms, `null` = kept forever. */
export interface ResolvedRetention {
  runs: number | null;
  mcpAudit: number | null;
  webhookDeliveries: number | null;
  cronTicks: number | null;
  batchSize: number;
  intervalMs: number;
}

export type OnErrorHook = (
  error: unknown,
  context?: { runId: string; flowName: string; appHandle: string; shop: string | null; attempt: number; final: boolean },
) => void | Promise<void>;

// ---------------------------------------------------------------------------------------------
// The configuration objects

/** What `defineApp(...)` takes: the base definition shared by every config built from it. */
export interface AppBase<P extends ProvidersMap = ProvidersMap> {
  providers?: P;
  pages?: PagesConfig;
}

/** What `defineConfig(...)` takes. */
export interface AppConfigInput<F extends FlowsMap = FlowsMap> {
  flows: F;
  shopify?: PlatformConfig;
  functions?: Record<string, FunctionDefinition>;
  mcp?: McpConfig;
  webhooks?: WebhooksMap;
  crons?: readonly CronEntry<F>[];
  experimental?: ExperimentalConfig;
  pages?: PagesConfig;
  worker?: Partial<WorkerConfig>;
  retryPolicy?: Partial<RetryPolicy>;
  onError?: OnErrorHook;
  /** Optional rate limits on /mcp and /api; off by default (docs/security.md). */
  rateLimits?: RateLimitsConfig;
  /** How long finished runs, MCP audit records, webhook and cron records are kept (docs/retention.md). */
  retention?: RetentionConfig;
  /** Prometheus metrics (docs/observability.md): off unless a token is set here or in MERCATO_METRICS_TOKEN (which wins). */
  metrics?: MetricsConfig;
}

/** The `metrics` option. */
export interface MetricsConfig {
  /** The bearer token `GET /metrics` requires; read it from the environment rather than writing it in the file. */
  token?: string;
}

/** The config after defaults: every option of the spec present. */
export interface ResolvedConfig<F extends FlowsMap = FlowsMap, P extends ProvidersMap = ProvidersMap> {
  providers: P;
  flows: F;
  shopify: PlatformConfig;
  functions: Record<string, FunctionDefinition>;
  mcp: Required<Pick<McpConfig, 'enabled' | 'crossShopAccess'>> & Required<Pick<McpConfig, 'permissions' | 'tools' | 'resources'>>;
  webhooks: WebhooksMap;
  crons: readonly CronEntry<F>[];
  experimental: { customPages: boolean; pages: CustomPagesMap };
  pages: Record<PageKey, PageMode>;
  worker: WorkerConfig;
  retryPolicy: RetryPolicy;
  onError: OnErrorHook | undefined;
  /** As given (absent = every limit off); read by http/rate-limit.ts. */
  rateLimits?: RateLimitsConfig;
  /** As given (absent = no token in the config). */
  metrics?: MetricsConfig;
  retention: ResolvedRetention;
}

export interface TypedDispatchOptions<F extends FlowsMap, K extends keyof F & string> {
  flowName: K;
  input: FlowInput<F[K]>;
  /** The shop to run for; omit (or null) for a global run. */
  shop?: string | null;
  /** The app handle in multi-app mode; defaults to the only app. */
  shopifyApp?: string;
  retryPolicy?: Partial<RetryPolicy>;
}
