/**
 * The runtime: one validated app instance bound to its environment, database, logger and secrets.
 * `mercato dev`, `mercato start`, `mercato worker` and the tests all build one with createRuntime().
 */
import type { MercatoInstance } from './app/app.ts';
import type { RunMode, RuntimeEnv } from './app/env.ts';
import type { ResolvedPlatform } from './app/platform.ts';
import { resolveStartup } from './app/startup.ts';
import type { AdminGraphqlClient, ProviderConnectors, ProvidersMap, ResolvedConfig } from './app/types.ts';
import { type Database, openDatabase } from './db/engine.ts';
import { migrate, migrationStatus } from './db/migrate.ts';
import { ConfigError } from './app/validate.ts';
import { type Logger, createLogger } from './logger.ts';
import { createSecrets } from './secrets/index.ts';
import type { Secrets } from './secrets/types.ts';
import { MERCATO_VERSION } from './version.ts';
import { type DispatchFn, createDispatcher, dispatchFlowFor } from './flows/dispatch.ts';
import { BodyBudget } from './http/inflight.ts';
import { type FlowRegistry, createFlowRegistry } from './flows/registry.ts';
import { webhookFlows } from './platform/webhook-flows.ts';
import { type Installations, installationsOf } from './platform/directory.ts';
import { type AdminClientRun, adminClientFor } from './platform/index.ts';
import { createConnectors } from './providers/service.ts';
import { type RuntimeEvents, createRuntimeEvents } from './events.ts';
import { type Tracing, createTracing } from './telemetry/tracing.ts';

export interface Runtime {
  readonly instance: MercatoInstance<any, any>;
  readonly config: ResolvedConfig<any, any>;
  readonly platform: ResolvedPlatform;
  readonly env: RuntimeEnv;
  readonly mode: RunMode;
  readonly projectDir: string;
  /** Imports a file of the app (route files): from the CLI's bundle of the app, else as it is. */
  readonly loadModule?: (file: string) => Promise<Record<string, any>>;
  readonly db: Database;
  readonly logger: Logger;
  readonly secrets: Secrets;
  readonly version: string;
  readonly registry: FlowRegistry;
  /** The one dispatch function (API, dispatchFlow, crons, MCP, webhooks, ctx.dispatchFlow). */
  readonly dispatch: DispatchFn;
  /** The event feed of this process: dispatches, run outcomes, webhooks, cron ticks, MCP calls (src/events.ts). */
  readonly events: RuntimeEvents;
  /** Which shops have an active installation of which app (the one installations port: crons, routes, MCP). */
  readonly installations: Installations;
  /** OpenTelemetry traces (docs/tracing.md): undefined when no OTLP endpoint is set, and then no span is built anywhere. */
  readonly tracing?: Tracing;
  /** This process's bound of request bodies in flight (webhooks and public routes; http/inflight.ts). */
  readonly bodies: BodyBudget;
  /** The provider connectors of a tenant (ctx.providers of flows, routes and pages). */
  connectorsFor(appHandle: string, shop: string | null): ProviderConnectors<ProvidersMap>;
  /**
   * The Admin GraphQL client of a tenant (ctx.admin, /api/functions, the MCP admin tool). Its throttle waits are
   * `admin.throttled` events; for ctx.admin, `run` also gets a line in the run's logs per wait.
   */
  adminClientFor(appHandle: string, shop: string, signal?: AbortSignal, run?: AdminClientRun): AdminGraphqlClient;
  /** Register cleanup run by close(), in reverse order of registration. */
  onClose(fn: () => Promise<void> | void): void;
  close(): Promise<void>;
}

export interface CreateRuntimeOptions {
  instance: MercatoInstance<any, any>;
  projectDir: string;
  mode: RunMode;
  /** How route files are imported (the CLI passes the loader of its bundle; default: import them as they are). */
  loadModule?: (file: string) => Promise<Record<string, any>>;
  /** Defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Use this database instead of opening one (tests); the runtime does not close it. */
  db?: Database;
  logger?: Logger;
  /** Log the warning that secrets are stored as plaintext when ENCRYPTION_KEY is not set (default true; `mercato dev` says it in its banner). */
  plaintextWarning?: boolean;
  /** Apply migrations at start-up (default true). */
  migrate?: boolean;
}

export async function createRuntime(options: CreateRuntimeOptions): Promise<Runtime> {
  const rawEnv = options.env ?? process.env;
  // environment and platform configuration problems are reported together, in one ConfigError
  const { env, platform } = resolveStartup(options.instance.config.shopify, rawEnv, { projectDir: options.projectDir, mode: options.mode });
  const logger = options.logger ?? createLogger({ level: env.logLevel, pretty: options.mode === 'dev' });
  const secrets = createSecrets({
    key: env.encryptionKey,
    previousKeys: env.previousEncryptionKeys,
    production: env.production,
    logger,
    warnPlaintext: options.plaintextWarning,
  });
  const ownsDb = !options.db;
  const db =
    options.db ??
    (await openDatabase(
      env.databaseUrl
        ? { url: env.databaseUrl, applicationName: `mercato-${options.mode}`, log: logger, poolSize: env.dbPoolSize }
        : { dataDir: env.dataDir },
    ));
  const closers: Array<() => Promise<void> | void> = [];
  if (ownsDb) closers.push(() => db.close());
  try {
    if (options.migrate !== false && env.migrateOnStart) await migrate(db);
    else if (options.migrate !== false) await refuseDatabaseBehind(db);
  } catch (error) {
    if (ownsDb) await db.close();
    throw error;
  }
  // traces: a provider of this runtime only when an OTLP endpoint is set; its spans are flushed on close (after the worker stopped)
  const tracing = await createTracing(rawEnv, { role: options.mode, version: MERCATO_VERSION });
  if (tracing) closers.push(() => tracing.shutdown());
  // Webhook handlers run as internal flows `webhook:<topic>` (docs/webhooks.md).
  const registry = createFlowRegistry(options.instance.config, webhookFlows(options.instance.config, db));
  const events = createRuntimeEvents({
    onListenerError: (error, event) => logger.warn({ err: error, event: event.type }, 'a runtime event listener failed'),
  });
  const dispatch = createDispatcher({
    db,
    registry,
    config: options.instance.config,
    appHandles: platform.apps.map((a) => a.handle),
    events,
    tracing,
  });
  closers.push(
    // the instance's dispatchFlow rejects with the typed errors a route can catch (docs/routes.md)
    options.instance.bindDispatcher(dispatchFlowFor(dispatch, 'dispatch')),
  );
  let closed = false;
  return {
    instance: options.instance,
    config: options.instance.config,
    platform,
    env,
    mode: options.mode,
    projectDir: options.projectDir,
    loadModule: options.loadModule,
    db,
    logger,
    secrets,
    version: MERCATO_VERSION,
    registry,
    dispatch,
    events,
    installations: installationsOf(db),
    tracing,
    bodies: new BodyBudget(env.http.maxBodyBytesInFlight),
    connectorsFor: (appHandle, shop) => createConnectors({ db, secrets, providers: options.instance.config.providers }, appHandle, shop),
    adminClientFor: (appHandle, shop, signal, run) =>
      adminClientFor({ db, secrets, platform, platformOrigin: env.platformOrigin, logger, tracing, events }, appHandle, shop, signal, run),
    onClose(fn) {
      closers.push(fn);
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const fn of closers.reverse()) {
        try {
          await fn();
        } catch (error) {
          logger.error({ err: error }, 'error while closing the runtime');
        }
      }
    },
  };
}

/**
 * MERCATO_MIGRATE_ON_START=false: migrations are `mercato migrate`'s job (a release step), so a process started on a
 * database that lacks some refuses to start, naming them, instead of failing later on a missing table or column.
 */
async function refuseDatabaseBehind(db: Database): Promise<void> {
  const status = await migrationStatus(db);
  if (status.pending.length === 0) return;
  throw new ConfigError([
    `MERCATO_MIGRATE_ON_START is false and the database lacks ${status.pending.length} migration(s) of this version (${status.pending.join(', ')}): run \`mercato migrate\` first`,
  ]);
}
