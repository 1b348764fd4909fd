/**
 * The composition root: every capability is built here from its factory with the runtime's parts (with
 * runtime.ts and cli/, the only code that knows the Runtime). The HTTP surface (the API groups of every capability,
 * webhooks, MCP, public routes, the admin UI, dev-only extras), the worker and the cron scheduler.
 */
import type { Hono } from 'hono';
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
import { createRunLogger, writeLog } from './logs/writer.ts';
import { logsApi } from './logs/router.ts';
import { providersApi } from './providers/router.ts';
import { cronsApi } from './crons/router.ts';
import { functionsApi } from './functions/router.ts';
import { customPagesApi } from './custom-pages/router.ts';
import { WEBHOOK_PATH, createInstaller, installationMiddleware, webhookRouter } from './platform/index.ts';
import { webhookDeliveries } from './platform/store.ts';
import { type Pruner, createPruner } from './retention/index.ts';

/** The /api groups of every capability. Capabilities add theirs here as they arrive. */
export function apiGroups(runtime: Runtime): ApiRouteGroup[] {
  return [
    ...flowsApi({
      runs: createRunService({ db: runtime.db, registry: runtime.registry }),
      registry: runtime.registry,
      dispatch: runtime.dispatch,
      config: runtime.config,
    }),
    ...watchApi({ watch: createRunWatch({ db: runtime.db, onClose: (fn) => runtime.onClose(fn) }) }),
    ...homeApi({ home: createHome({ db: runtime.db }) }),
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
  return createHttpApp(runtime, {
    groups: apiGroups(runtime),
    afterAuth: [installationMiddleware(installer)],
    rateLimits: runtime.config.rateLimits,
    extra: (app) => {
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
  const server = await startHttpServer(app, { port: options.port, hostname: options.hostname });
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
export async function startWorker(runtime: Runtime, options: { concurrency?: number; heartbeatIntervalMs?: number } = {}): Promise<Worker> {
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
    },
    config: runtime.config.worker,
    concurrency: options.concurrency,
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    logger: runtime.logger,
  });
  await worker.start();
  runtime.onClose(async () => {
    await worker.stop();
  });
  return worker;
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
