/**
 * `defineApp(base)` → builder; `builder.defineConfig(config)` → the configured instance that
 * `service.config.ts` exports by default.
 */
import { DEFAULT_PAGES, DEFAULT_RETENTION, DEFAULT_RETRY_POLICY, DEFAULT_WORKER } from './defaults.ts';
import { parseDuration } from './duration.ts';
import { defineFlow } from './define.ts';
import type {
  AppBase,
  AppConfigInput,
  CustomPageDefinition,
  DispatchOptions,
  DispatchResult,
  FlowDefinition,
  FlowsMap,
  PageKey,
  PageMode,
  ProvidersMap,
  ResolvedConfig,
  ResolvedRetention,
  RetentionConfig,
  Schema,
  TypedDispatchOptions,
} from './types.ts';
import { validateConfig } from './validate.ts';
import { type RouteDefinition, defineRoute } from './routes.ts';

export type Dispatcher = (options: DispatchOptions) => Promise<DispatchResult>;

const MERCATO_INSTANCE = Symbol.for('mercato.instance');

export interface MercatoInstance<F extends FlowsMap = FlowsMap, P extends ProvidersMap = ProvidersMap> {
  readonly [MERCATO_INSTANCE]: true;
  /** The validated config with every default filled in. */
  readonly config: ResolvedConfig<F, P>;
  /** Enqueue a run: `flowName` is a registered key and `input` is typed by that flow. */
  dispatchFlow<K extends keyof F & string>(options: TypedDispatchOptions<F, K>): Promise<DispatchResult>;
  /** `defineRoute` for a file under `routes/`, with `forShop(...).providers` typed by this app's providers. */
  defineRoute<Auth extends {} = {}>(route: RouteDefinition<Auth, P>): RouteDefinition<Auth, P>;
  /** Used by the runtime: connects `dispatchFlow` to a running database. Returns a function that disconnects. */
  bindDispatcher(dispatcher: Dispatcher): () => void;
}

export interface AppBuilder<P extends ProvidersMap> {
  readonly base: AppBase<P>;
  /** `defineFlow` whose `ctx.providers` is typed by this app's providers. */
  defineFlow<const Name extends string, Input extends Schema<any, any>, Output>(
    flow: FlowDefinition<Name, Input, Output, P>,
  ): FlowDefinition<Name, Input, Output, P>;
  /** `defineRoute` for a file under `routes/`, with `forShop(...).providers` typed by this app's providers. */
  defineRoute<Auth extends {} = {}>(route: RouteDefinition<Auth, P>): RouteDefinition<Auth, P>;
  /** `defineCustomPage` whose `ctx.providers` is typed by this app's providers (docs/custom-pages.md). */
  defineCustomPage<L extends Record<string, unknown> = {}, A extends Record<string, unknown> = {}>(
    page: CustomPageDefinition<L, A, P>,
  ): CustomPageDefinition<L, A, P>;
  defineConfig<const F extends FlowsMap>(config: AppConfigInput<F>): MercatoInstance<F, P>;
}

export function isMercatoInstance(value: unknown): value is MercatoInstance {
  return typeof value === 'object' && value !== null && (value as any)[MERCATO_INSTANCE] === true;
}

export function resolvePages(...layers: Array<Partial<Record<string, unknown>> | undefined>): Record<PageKey, PageMode> {
  const pages = { ...DEFAULT_PAGES } as Record<PageKey, PageMode>;
  for (const layer of layers) if (layer) Object.assign(pages, layer);
  return pages;
}

export function resolveConfig<F extends FlowsMap, P extends ProvidersMap>(
  base: AppBase<P>,
  config: AppConfigInput<F>,
): ResolvedConfig<F, P> {
  return {
    providers: (base.providers ?? {}) as P,
    flows: config.flows ?? ({} as F),
    shopify: config.shopify ?? {},
    functions: config.functions ?? {},
    mcp: {
      enabled: config.mcp?.enabled ?? true,
      crossShopAccess: config.mcp?.crossShopAccess ?? false,
      permissions: config.mcp?.permissions ?? {},
      tools: config.mcp?.tools ?? {},
      resources: config.mcp?.resources ?? {},
    },
    webhooks: config.webhooks ?? {},
    crons: config.crons ?? [],
    experimental: { customPages: config.experimental?.customPages ?? false, pages: config.experimental?.pages ?? {} },
    pages: resolvePages(base.pages, config.pages),
    worker: { ...DEFAULT_WORKER, ...definedOnly(config.worker) },
    retryPolicy: { ...DEFAULT_RETRY_POLICY, ...definedOnly(config.retryPolicy) },
    onError: config.onError,
    rateLimits: config.rateLimits,
    metrics: config.metrics,
    retention: resolveRetention(config.retention),
  };
}

/** The retention with defaults (validated before): periods in ms, `false` → null (kept forever). */
export function resolveRetention(retention: RetentionConfig | undefined): ResolvedRetention {
  const r = retention ?? {};
  const period = (value: RetentionConfig['runs'], fallback: number | null) =>
    value === undefined ? fallback : value === false ? null : parseDuration(value);
  return {
    runs: period(r.runs, DEFAULT_RETENTION.runs),
    mcpAudit: period(r.mcpAudit, DEFAULT_RETENTION.mcpAudit),
    webhookDeliveries: period(r.webhookDeliveries, DEFAULT_RETENTION.webhookDeliveries),
    cronTicks: period(r.cronTicks, DEFAULT_RETENTION.cronTicks),
    batchSize: r.batchSize ?? DEFAULT_RETENTION.batchSize,
    intervalMs: r.interval === undefined ? DEFAULT_RETENTION.intervalMs : parseDuration(r.interval),
  };
}

function definedOnly<T extends object>(value: T | undefined): Partial<T> {
  if (!value || typeof value !== 'object') return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function defineApp<const P extends ProvidersMap = {}>(base: AppBase<P> = {}): AppBuilder<P> {
  return {
    base,
    defineFlow: (flow) => defineFlow(flow),
    defineRoute: (route) => defineRoute(route),
    defineCustomPage: (page) => page,
    defineConfig<const F extends FlowsMap>(config: AppConfigInput<F>): MercatoInstance<F, P> {
      validateConfig(base, config); // throws ConfigError listing every problem
      const resolved = resolveConfig(base, config);
      let dispatcher: Dispatcher | undefined;
      return {
        [MERCATO_INSTANCE]: true,
        config: resolved,
        defineRoute: (route) => defineRoute(route),
        dispatchFlow(options) {
          if (!dispatcher) {
            return Promise.reject(
              new Error(
                'dispatchFlow: the Mercato runtime is not running in this process (start it with `mercato dev`, `mercato start` or createRuntime())',
              ),
            );
          }
          return dispatcher(options as DispatchOptions);
        },
        bindDispatcher(next) {
          dispatcher = next;
          return () => {
            if (dispatcher === next) dispatcher = undefined;
          };
        },
      };
    },
  };
}
