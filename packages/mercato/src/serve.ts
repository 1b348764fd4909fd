/**
 * The composition root: every capability is built here from its factory with the runtime's parts (with
 * runtime.ts and cli/, the only code that knows the Runtime). The HTTP surface (the API groups of every capability,
 * webhooks, MCP, public routes, the admin UI, dev-only extras), the worker and the cron scheduler.
 */
import { Hono } from 'hono';
import { mountAdminUi } from './admin/index.ts';
import { DEV_SHOPS, PREVIEW_PREFIX, createPreviewRouter } from './dev/preview.ts';
import { createHttpApp, startHttpServer } from './http/server.ts';
import type { ApiRouteGroup } from './http/types.ts';
import type { Runtime } from './runtime.ts';
import { prepareRoutes } from './routes/index.ts';
import { type CronScheduler, type SchedulerOptions, type ShopDirectory, createScheduler } from './crons/index.ts';
import { Worker } from './worker/index.ts';
import { type Mcp, createMcp } from './mcp/index.ts';
import { mcpDeps } from './mcp/wiring.ts';
import { flowsApi } from './flows/router.ts';
import { createRunService } from './flows/service.ts';
import { createRunWatch } from './flows/watch.ts';
import { watchApi } from './flows/watch-router.ts';
import { createHome } from './flows/home.ts';
import { homeApi } from './flows/home-router.ts';
import { createStats } from './flows/stats.ts';
import { statsApi } from './flows/stats-router.ts';
import { createRunLogger, writeLog } from './logs/writer.ts';
import { logsApi } from './logs/router.ts';
import { providersApi } from './providers/router.ts';
import { cronsApi } from './crons/router.ts';
import { functionsApi } from './functions/router.ts';
import { customPagesApi } from './custom-pages/router.ts';
import { WEBHOOK_PATH, createInstaller, installationMiddleware, webhookRouter } from './platform/index.ts';
import { webhookDeliveries } from './platform/store.ts';
import { type Metrics, METRICS_PATH, createMetrics, metricsEndpoint, requestMetrics } from './metrics/index.ts';
import { queuedRunsByFlow } from './flows/store/queue.ts';
import { type ReadinessChecks, databaseCheck, healthRouter } from './http/health.ts';
import { notFoundHandler } from './http/errors.ts';
import { migrationStatus } from './db/migrate.ts';
import { type Pruner, createPruner } from './retention/index.ts';

/** The /api groups of every capability. Capabilities add theirs here as they arrive. */
export function apiGroups(runtime: Runtime): ApiRouteGroup[] {
  return [
    // first: its GET /api/runs/watch must not be read as flowsApi's GET /api/runs/:id
    ...watchApi({ watch: createRunWatch({ db: runtime.db, onClose: (fn) => runtime.onClose(fn) }) }),
    ...flowsApi({
      runs: createRunService({ db: runtime.db, registry: runtime.registry, events: runtime.events }),
      registry: runtime.registry,
      dispatch: runtime.dispatch,
      config: runtime.config,
    }),
    ...homeApi({ home: createHome({ db: runtime.db }) }),
    ...statsApi({ stats: createStats({ db: runtime.db }) }),
    ...providersApi({ db: runtime.db, secrets: runtime.secrets, providers: runtime.config.providers, logger: runtime.logger }),
    ...cronsApi({ db: runtime.db, crons: runtime.config.crons }),
    ...functionsApi({ functions: runtime.config.functions, adminClient: runtime.adminClientFor }),
    ...logsApi({ db: runtime.db, logger: runtime.logger }),
    ...mcpOf(runtime).api,
    ...customPagesApi({
      config: runtime.config,
      db: runtime.db,
      secrets: runtime.secrets,
      logger: runtime.logger,
      dispatch: runtime.dispatch,
    }),
  ];
}

export interface ServeOptions {
  port: number;
  hostname: string;
  /** Mount the admin preview (mercato dev only). */
  preview?: boolean;
  /** The shops the admin preview offers (default: the two demo shops); `mercato dev` gives the simulator's. */
  previewShops?: () => string[] | Promise<string[]>;
  /** Mounts the app's public routes (loaded by serve() from `<project>/routes`). */
  mountRoutes?: (app: Hono<any>) => void;
}

export function buildApp(runtime: Runtime, options: Pick<ServeOptions, 'preview' | 'previewShops' | 'mountRoutes'> = {}): Hono<any> {
  const installer = createInstaller({
    db: runtime.db,
    secrets: runtime.secrets,
    logger: runtime.logger,
    platformOrigin: runtime.env.platformOrigin,
  });
  const metrics = metricsOf(runtime);
  return createHttpApp(runtime, {
    groups: apiGroups(runtime),
    afterAuth: [installationMiddleware(installer)],
    rateLimits: runtime.config.rateLimits,
    readiness: readinessOf(runtime),
    observe: metrics ? requestMetrics(metrics) : undefined,
    extra: (app) => {
      app.get(METRICS_PATH, metricsEndpoint(metrics, metricsTokenOf(runtime)));
      mcpOf(runtime).mount(app);
      app.route(
        WEBHOOK_PATH,
        webhookRouter({
          deliveries: webhookDeliveries(runtime.db),
          platform: runtime.platform,
          registry: runtime.registry,
          dispatch: runtime.dispatch,
          logger: runtime.logger,
          events: runtime.events,
          tracing: runtime.tracing,
          bodies: runtime.bodies,
        }),
      );
      if (options.preview) {
        app.route(
          PREVIEW_PREFIX,
          createPreviewRouter({
            platform: runtime.platform,
            shops: options.previewShops ?? (() => DEV_SHOPS),
            isProduction: () => process.env.NODE_ENV === 'production',
          }),
        );
      }
      options.mountRoutes?.(app);
      // Last: the admin UI answers the GETs nothing above claimed (client-side routes get index.html).
      mountAdminUi(app, { platform: runtime.platform, previewPath: options.preview ? PREVIEW_PREFIX : null, version: runtime.version });
    },
  });
}

export async function serve(runtime: Runtime, options: ServeOptions) {
  const routes = await prepareRoutes(routesWiring(runtime));
  const app = buildApp(runtime, { preview: options.preview, previewShops: options.previewShops, mountRoutes: routes.mount });
  const server = await startHttpServer(app, { port: options.port, hostname: options.hostname, limits: runtime.env.http });
  runtime.onClose(() => server.close());
  return server;
}

/** What public routes are built from. */
export function routesWiring(runtime: Runtime) {
  return {
    logger: runtime.logger,
    platform: runtime.platform,
    installations: runtime.installations,
    connectorsFor: runtime.connectorsFor,
    dispatch: runtime.dispatch,
    projectDir: runtime.projectDir,
    loadModule: runtime.loadModule,
    bodies: runtime.bodies,
  };
}

const mcpInstances = new WeakMap<Runtime, Mcp>();

/** The MCP capability of a runtime: one instance, shared by `/api/mcp` and `/mcp`. */
export function mcpOf(runtime: Runtime): Mcp {
  let mcp = mcpInstances.get(runtime);
  if (!mcp) {
    mcp = createMcp(mcpDeps(runtime));
    mcpInstances.set(runtime, mcp);
  }
  return mcp;
}

/** Starts a worker on the runtime's database; it is stopped gracefully when the runtime closes. */
export async function startWorker(
  runtime: Runtime,
  options: { concurrency?: number; prefetch?: number; heartbeatIntervalMs?: number } = {},
): Promise<Worker> {
  const worker = new Worker({
    db: runtime.db,
    engine: {
      registry: runtime.registry,
      config: runtime.config,
      logger: runtime.logger,
      events: runtime.events,
      adminClient: runtime.adminClientFor,
      connectors: runtime.connectorsFor,
      dispatch: runtime.dispatch,
      runLogs: { create: createRunLogger, write: writeLog },
      tracing: runtime.tracing,
    },
    config: runtime.config.worker,
    concurrency: options.concurrency,
    prefetch: options.prefetch,
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    logger: runtime.logger,
  });
  await worker.start();
  workers.set(runtime, worker);
  runtime.onClose(async () => {
    await worker.stop();
  });
  return worker;
}

// ---------------------------------------------------------------------------------------------------------------------
// Operations: readiness, metrics, the worker's metrics port (docs/observability.md)

const workers = new WeakMap<Runtime, Worker>();
const metricsInstances = new WeakMap<Runtime, Metrics>();

/** The metrics token: MERCATO_METRICS_TOKEN, else `metrics.token` of the config, else none (metrics off). */
export function metricsTokenOf(runtime: Pick<Runtime, 'env' | 'config'>): string | undefined {
  return runtime.env.metricsToken ?? runtime.config.metrics?.token;
}

/**
 * The metrics of a runtime: one instance, made on first use, listening to the runtime's events until it closes; undefined
 * when no token is configured (nothing listens then, and /metrics is a 404).
 */
export function metricsOf(runtime: Runtime): Metrics | undefined {
  if (metricsTokenOf(runtime) === undefined) return undefined;
  let metrics = metricsInstances.get(runtime);
  if (!metrics) {
    const created = createMetrics({
      version: runtime.version,
      queue: () => queuedRunsByFlow(runtime.db.query),
      pool: runtime.db.poolStats,
      worker: () => {
        const worker = workers.get(runtime);
        return worker?.loopRunning
          ? { active: worker.activeCount, queued: worker.queuedCount, concurrency: worker.concurrency }
          : undefined;
      },
      logger: runtime.logger,
    });
    metrics = created;
    metricsInstances.set(runtime, created);
    runtime.onClose(created.observe(runtime.events));
  }
  return metrics;
}

/**
 * The checks of /readyz: the database answers, every migration of this version is applied, and, in a process that runs
 * a worker, its claim loop is running.
 */
export function readinessOf(runtime: Runtime): ReadinessChecks {
  return {
    database: databaseCheck(runtime.db),
    migrations: async () => {
      const status = await migrationStatus(runtime.db);
      return status.pending.length === 0 ? { ok: true, applied: status.known } : { ok: false, pending: status.pending };
    },
    worker: async () => {
      const worker = workers.get(runtime);
      if (!worker) return undefined; // this process runs no worker
      return { ok: worker.loopRunning, running: worker.loopRunning, active: worker.activeCount, concurrency: worker.concurrency };
    },
  };
}

/**
 * The operations server of a process without the HTTP app (`mercato worker` with MERCATO_METRICS_PORT or --metrics-port):
 * `/healthz`, `/readyz` and `/metrics` only, every other path a JSON 404. Closed with the runtime, after its worker has
 * stopped.
 */
export async function serveOperations(runtime: Runtime, options: { port: number; hostname: string }) {
  const app = new Hono();
  const metrics = metricsOf(runtime);
  if (metrics) app.use('*', requestMetrics(metrics));
  app.route('/', healthRouter({ version: runtime.version, checks: readinessOf(runtime), logger: runtime.logger }));
  app.get(METRICS_PATH, metricsEndpoint(metrics, metricsTokenOf(runtime)));
  app.notFound(notFoundHandler);
  const server = await startHttpServer(app, {
    ...options,
    portSetting: '--metrics-port <n> or MERCATO_METRICS_PORT',
    limits: runtime.env.http,
  });
  // it answers until the worker has stopped: /readyz says `running: false` (503) while runs in flight finish
  runtime.onClose(async () => {
    await workers.get(runtime)?.stop();
    await server.close();
  });
  return server;
}

/** Starts the cron scheduler of a runtime (stopped by runtime.close()); ticks dispatch through the one door. */
export function startCronScheduler(runtime: Runtime, options: SchedulerOptions & { shops?: ShopDirectory } = {}): CronScheduler {
  const { shops, ...schedulerOptions } = options;
  const scheduler = createScheduler(
    {
      db: runtime.db,
      crons: runtime.config.crons,
      appHandles: runtime.platform.apps.map((app) => app.handle),
      shops: shops ?? runtime.installations,
      dispatch: runtime.dispatch,
      logger: runtime.logger.child({ component: 'crons' }),
      events: runtime.events,
      tracing: runtime.tracing,
    },
    schedulerOptions,
  );
  scheduler.start();
  runtime.onClose(() => scheduler.stop());
  return scheduler;
}

/** Starts the retention pruner of a runtime (docs/retention.md): a pass every `retention.interval`; stopped by runtime.close(). */
export function startPruner(runtime: Runtime, options: { firstDelayMs?: number } = {}): Pruner {
  const pruner = createPruner({
    db: runtime.db,
    retention: runtime.config.retention,
    events: runtime.events,
    logger: runtime.logger.child({ component: 'retention' }),
  });
  pruner.start(options.firstDelayMs);
  runtime.onClose(() => pruner.stop());
  return pruner;
}
