/**
 * `mercato dev`, `mercato start` and `mercato worker`: run until SIGINT/SIGTERM.
 *
 * `dev` keeps one database, one platform simulator and one HTTP server for the whole session, and reloads the app on
 * every change of its files (src/cli/dev-watch.ts): each version of the app is a "generation" (a runtime, its HTTP
 * app, worker and cron scheduler on the shared database) and the server answers with the newest good one.
 */
import { statSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { Hono } from 'hono';
import { createRuntime, type Runtime } from '../runtime.ts';
import { PREVIEW_PREFIX } from '../dev/preview.ts';
import { buildApp, metricsTokenOf, routesWiring, serve, serveOperations, startCronScheduler, startPruner, startWorker } from '../serve.ts';
import type { Worker } from '../worker/index.ts';
import { RUNS_CHANNEL } from '../flows/store/index.ts';
import type { CronScheduler } from '../crons/index.ts';
import { DEFAULT_SIM_PORT, type DevPlatform, SimulatorPortError, startDevPlatform } from '../dev/simulator.ts';
import { prepareRoutes } from '../routes/index.ts';
import { scanRouteFiles } from '../routes/loader.ts';
import { startHttpServer, type StartedHttpServer } from '../http/server.ts';
import { type Database, openDatabase } from '../db/engine.ts';
import { migrate } from '../db/migrate.ts';
import { createLogger, type Logger } from '../logger.ts';
import { loadRuntimeEnv, missingKeyProblem } from '../app/env.ts';
import { collectProblems, resolveStartup } from '../app/startup.ts';
import { ConfigError } from '../app/validate.ts';
import { secretFieldsOf } from '../providers/fields.ts';
import { devEncryptionKey, encryptStoredPlaintext } from './secrets-at-rest.ts';
import { redactUrl } from './migrate.ts';
import { applyDevDefaults, platformCliVariables } from './dev-defaults.ts';
import { CliError, type LoadedConfig, findConfigFile, loadConfig } from './load-config.ts';
import { dirname } from 'node:path';
import { type CliIo, type CliValues, reportError } from './io.ts';
import { attachTerminal } from './terminal.ts';
import { watchProject } from './dev-watch.ts';
import { installDevShops } from '../dev/install.ts';

/** How long a reload lets the old version's runs finish before handing them back to the new version. */
export const RELOAD_GRACE_MS = 5_000;

export async function runServe(command: 'dev' | 'start' | 'worker', values: CliValues, io: CliIo): Promise<number> {
  const env = io.env;
  if (command === 'dev') env.NODE_ENV ??= 'development';
  if (values.port !== undefined) {
    // the option beats both names of the port (the platform CLI's BACKEND_PORT too)
    env.PORT = String(values.port);
    delete env.BACKEND_PORT;
  }
  if (values.logLevel !== undefined) env.LOG_LEVEL = values.logLevel;
  if (values.metricsPort !== undefined) env.MERCATO_METRICS_PORT = String(values.metricsPort);
  if (command === 'dev') return runDev(values, io);

  const loaded = await loadConfig(io.cwd, values.config);
  try {
    requireKeyForSecrets(command, loaded, env);
  } catch (error) {
    loaded.dispose();
    throw error;
  }
  const runtime = await createRuntime({
    instance: loaded.instance,
    projectDir: loaded.projectDir,
    mode: command,
    env,
    loadModule: loaded.loadModule,
  }).catch((error) => {
    loaded.dispose();
    throw error;
  });
  runtime.onClose(() => loaded.dispose());
  const detach = attachTerminal(runtime, { format: 'json' });
  runtime.onClose(detach);
  const stop = waitForStopSignal();
  try {
    const encrypted = await encryptPlaintextAtStart(runtime.db, runtime.secrets, runtime.logger);
    if (encrypted > 0)
      runtime.logger.info({ encrypted }, `encrypted ${encrypted} stored secret(s) that were written without a key (docs/secrets.md)`);
    const db = describeDb(runtime);
    if (command === 'worker') {
      const effective = values.concurrency ?? runtime.config.worker.concurrency;
      const worker = await startWorker(runtime, { concurrency: effective, prefetch: values.prefetch });
      io.out(`mercato worker ${runtime.version} (${worker.id}): database ${db}; concurrency ${effective}; prefetch ${worker.prefetch}`);
      if (runtime.env.metricsPort !== undefined) {
        const ops = await serveOperations(runtime, { port: runtime.env.metricsPort, hostname: runtime.env.bindAddress });
        const base = `http://localhost:${ops.port}`;
        io.out(
          `  health:        ${base}/healthz, ${base}/readyz; metrics: ${metricsTokenOf(runtime) === undefined ? 'off (no MERCATO_METRICS_TOKEN)' : `${base}/metrics`}`,
        );
      }
    } else {
      const server = await serve(runtime, { port: runtime.env.port, hostname: runtime.env.bindAddress, preview: false });
      startCronScheduler(runtime);
      startPruner(runtime);
      const base = `http://localhost:${server.port}`;
      io.out(
        [
          `mercato start ${runtime.version} — listening on ${base}`,
          `  admin UI:      ${base}/`,
          `  admin API:     ${base}/api (session token required)`,
          `  health:        ${base}/healthz, ${base}/readyz`,
          `  metrics:       ${metricsTokenOf(runtime) === undefined ? 'off (set MERCATO_METRICS_TOKEN)' : `${base}/metrics (bearer token)`}`,
          `  database:      ${db}`,
          `  apps:          ${runtime.platform.apps.map((a) => a.handle).join(', ')}`,
          `  crons:         ${runtime.config.crons.length} (scheduler in this process)`,
          `  platform:      ${runtime.env.platformOrigin ?? 'https://<shop> (each shop on its own domain)'}`,
        ].join('\n'),
      );
    }
    const signal = await stop.promise;
    io.out(`mercato ${command}: ${signal} received, shutting down…`);
  } finally {
    stop.dispose();
    await runtime.close();
  }
  return 0;
}

/**
 * `start` and `worker` refuse to run without ENCRYPTION_KEY when a provider of the app has a secret field (the rule is
 * missingKeyProblem in app/env.ts); the other problems of the environment are reported with it.
 */
function requireKeyForSecrets(command: 'start' | 'worker', loaded: LoadedConfig, env: NodeJS.ProcessEnv) {
  const problem = missingKeyProblem(env, { mode: command, secretFields: secretFieldsOf(loaded.instance.config.providers) });
  if (!problem) return;
  const others = collectProblems([
    () => resolveStartup(loaded.instance.config.shopify, env, { projectDir: loaded.projectDir, mode: command }),
  ]);
  throw new ConfigError([problem, ...others]);
}

/** Encrypts what an earlier version stored as plaintext; a failure is logged and does not stop the start. Returns how many. */
async function encryptPlaintextAtStart(db: Database, secrets: Runtime['secrets'], logger: Logger): Promise<number> {
  try {
    const outcome = await encryptStoredPlaintext(db, secrets);
    if (outcome.skipped > 0)
      logger.warn({ skipped: outcome.skipped }, 'some stored secrets written without a key could not be encrypted; they stay as they are');
    return outcome.encrypted;
  } catch (error) {
    logger.warn({ err: error }, 'could not encrypt the secrets stored without a key; they stay readable and are encrypted when next saved');
    return 0;
  }
}

const describeDb = (runtime: Pick<Runtime, 'env'>) =>
  runtime.env.databaseUrl ? `PostgreSQL ${redactUrl(runtime.env.databaseUrl)}` : `embedded PGlite at ${runtime.env.dataDir}`;

/** One version of the app in `mercato dev`. */
interface Generation {
  loaded: LoadedConfig;
  runtime: Runtime;
  app: Hono<any>;
  worker?: Worker;
  scheduler?: CronScheduler;
  detachTerminal: () => void;
}

async function runDev(values: CliValues, io: CliIo): Promise<number> {
  const env = io.env;
  const started = Date.now();
  // the environment is read once for the session (the database, the ports); the config may change, the env does not
  const projectDir = dirname(findConfigFile(io.cwd, values.config));
  const sessionEnv = loadRuntimeEnv(env, { projectDir, mode: 'dev' });
  const simPort = values.simPort ?? (env.MERCATO_SIM_PORT ? Number(env.MERCATO_SIM_PORT) : values.port === 0 ? 0 : DEFAULT_SIM_PORT);
  if (!Number.isInteger(simPort) || simPort < 0 || simPort > 65535)
    throw new CliError(`MERCATO_SIM_PORT must be a port number from 0 to 65535 (got "${env.MERCATO_SIM_PORT}")`, 2);
  const logger: Logger = createLogger({ level: sessionEnv.logLevel, pretty: true });
  const underPlatformCli = platformCliVariables(env);
  // the slow steps of a start at once: bundle and import the app, open the database, start the simulator
  const [loadedResult, dbResult, simResult] = await Promise.allSettled([
    loadConfig(io.cwd, values.config),
    openDatabase(
      sessionEnv.databaseUrl
        ? { url: sessionEnv.databaseUrl, applicationName: 'mercato-dev', log: logger, poolSize: sessionEnv.dbPoolSize }
        : { dataDir: sessionEnv.dataDir },
    ),
    // under the platform CLI (`shopify app dev`), the real platform: no simulator
    underPlatformCli ? Promise.resolve(undefined) : startDevPlatform(env, { port: simPort }),
  ]);
  if (loadedResult.status === 'rejected' || dbResult.status === 'rejected' || simResult.status === 'rejected') {
    if (loadedResult.status === 'fulfilled') loadedResult.value.dispose();
    if (dbResult.status === 'fulfilled') await dbResult.value.close().catch(() => {});
    if (simResult.status === 'fulfilled') await simResult.value?.close().catch(() => {});
    const failed = [loadedResult, simResult, dbResult].find((r) => r.status === 'rejected') as PromiseRejectedResult;
    if (failed.reason instanceof SimulatorPortError) throw new CliError(failed.reason.message);
    throw failed.reason;
  }
  let loaded = loadedResult.value;
  const db: Database = dbResult.value;
  const devPlatform: DevPlatform | undefined = simResult.value;
  const filled = applyDevDefaults(env, loaded.instance.config.shopify);
  // without ENCRYPTION_KEY, dev keeps a key of its own in its data folder (made after the database, so PGlite finds its folder as it left it)
  let devKey: ReturnType<typeof devEncryptionKey> | undefined;
  try {
    if (!sessionEnv.encryptionKey) devKey = devEncryptionKey(sessionEnv.dataDir);
  } catch (error) {
    loaded.dispose();
    await db.close().catch(() => {});
    await devPlatform?.close().catch(() => {});
    throw error;
  }
  if (devKey) env.ENCRYPTION_KEY = devKey.key;
  /** Said once, when the key is made: after the URLs, or before the error when this start fails. */
  let keyNote: string | undefined;
  if (devKey?.created) {
    const shown = relative(loaded.projectDir, devKey.file);
    const where = shown && !shown.startsWith('..') && !isAbsolute(shown) ? shown : devKey.file;
    const keep = sessionEnv.databaseUrl ? 'keep it as long as the database of DATABASE_URL' : 'keep it with the data folder';
    keyNote = `note: generated an encryption key for stored secrets in ${where}; ${keep} (see docs/secrets.md)`;
  }
  const sayKeyNote = () => {
    if (keyNote) io.out(keyNote);
    keyNote = undefined;
  };
  const cleanups: Array<() => Promise<void> | void> = [async () => devPlatform?.close(), () => db.close()];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch((error) => logger.error({ err: error }, 'error while stopping'));
  };
  const stop = waitForStopSignal();
  let server: StartedHttpServer | undefined;
  let current: Generation | undefined;
  const preview = !sessionEnv.production;
  try {
    await migrate(db);
    const shell = {
      fetch: (request: Request, bindings: unknown) =>
        current ? current.app.fetch(request, bindings) : new Response('starting', { status: 503 }),
    };
    server = await startHttpServer(shell, { port: sessionEnv.port, hostname: sessionEnv.bindAddress, limits: sessionEnv.http });
    cleanups.push(() => server!.close());
    const base = `http://localhost:${server.port}`;
    const quiet = Boolean(values.quiet);

    const retiring = new Set<Promise<void>>();
    /** Starts a version's background work: its worker, its cron scheduler and its pruner. */
    const startBackground = async (generation: Generation) => {
      generation.worker = await startWorker(generation.runtime);
      generation.scheduler = startCronScheduler(generation.runtime);
      startPruner(generation.runtime);
    };
    /**
     * Builds a version of the app; throws (and leaves nothing running) when it is not good. With `serveFirst`, its
     * background work is left for the caller to start (startBackground) once the server is ready: the first start's
     * last queries (the simulator's shops) then do not wait behind the worker's and the scheduler's first ones on the
     * embedded database, which runs one statement at a time.
     */
    const startGeneration = async (next: LoadedConfig, options: { serveFirst?: boolean } = {}): Promise<Generation> => {
      const runtime = await createRuntime({
        instance: next.instance,
        projectDir: next.projectDir,
        mode: 'dev',
        env,
        db,
        logger,
        migrate: false,
        loadModule: next.loadModule,
        plaintextWarning: false,
      });
      try {
        const routes = await prepareRoutes(routesWiring(runtime));
        const app = buildApp(runtime, { preview, previewShops: devPlatform?.shops, mountRoutes: routes.mount });
        const detachTerminal = attachTerminal(runtime, {
          format: 'pretty',
          quiet,
          out: io.out,
          adminUrl: base,
          previewLinks: preview,
          color: io.isTTY,
          level: sessionEnv.logLevel,
        });
        devPlatform?.attach(runtime.platform, server!.url, runtime.config.functions);
        const generation: Generation = { loaded: next, runtime, app, detachTerminal };
        if (!options.serveFirst) await startBackground(generation);
        return generation;
      } catch (error) {
        await runtime.close();
        throw error;
      }
    };
    /**
     * The old version stops after the new one took over: its cron scheduler at once (the new one fires the new
     * schedule), its runs in flight get RELOAD_GRACE_MS to finish on the code they started with; the rest are handed
     * back and resume on the new code from their last completed step.
     */
    const retire = (old: Generation) => {
      const done = (async () => {
        await old.scheduler?.stop();
        const stopped = await old.worker?.stop({ graceMs: RELOAD_GRACE_MS });
        // wake the current worker: the runs handed back resume now, not at its next poll
        if (stopped && stopped.released > 0) await db.notify(RUNS_CHANNEL).catch(() => {});
        old.detachTerminal();
        await old.runtime.close();
        old.loaded.dispose();
      })().catch((error) => logger.error({ err: error }, 'error while stopping the previous version'));
      retiring.add(done);
      void done.finally(() => retiring.delete(done));
      return done;
    };

    try {
      current = await startGeneration(loaded, { serveFirst: true });
    } catch (error) {
      loaded.dispose();
      throw error;
    }
    const encrypted = await encryptPlaintextAtStart(db, current.runtime.secrets, logger);
    // the simulator's shops have the app installed from the start, as a development store does
    if (devPlatform) await installDevShops(current.runtime, devPlatform.shops());
    cleanups.push(async () => {
      if (current) await retire(current);
      await Promise.all(retiring);
    });
    const runtime = current.runtime;
    const lines = [
      `mercato dev ${runtime.version} — listening on ${base} (ready in ${Date.now() - started} ms)`,
      `  admin UI:      ${base}/`,
      preview
        ? `  admin preview: ${base}${PREVIEW_PREFIX}/  (pick a shop; development only)`
        : '  admin preview: disabled (NODE_ENV=production)',
      `  admin API:     ${base}/api (session token required)`,
      `  routes:        ${base}/routes/…`,
      `  MCP:           ${base}/mcp`,
      `  health:        ${base}/healthz, ${base}/readyz`,
      devPlatform
        ? `  platform:      simulator at ${devPlatform.url} (shops ${devPlatform.shops().join(', ')}; webhooks → ${server.url}/webhooks)`
        : underPlatformCli
          ? `  platform:      the real platform (https://<shop>), run by the platform CLI (${underPlatformCli.join(', ')} set); no simulator`
          : `  platform:      ${sessionEnv.platformOrigin ?? 'https://<shop>'}`,
      `  database:      ${describeDb({ env: sessionEnv } as Pick<Runtime, 'env'>)}`,
      `  apps:          ${runtime.platform.apps.map((a) => a.handle).join(', ')}`,
      `  worker:        in-process; crons: ${runtime.config.crons.length}`,
    ];
    io.out(lines.join('\n'));
    if (filled.length > 0) io.out(`note: using development values for ${filled.join(', ')} (see docs/environment.md)`);
    sayKeyNote();
    if (encrypted > 0) io.out(`note: encrypted ${encrypted} stored secret(s) that an earlier version had written without a key`);
    // the server answers already; the worker, the crons and the pruner start now (startGeneration, serveFirst)
    await startBackground(current);
    if (values.watch !== false) {
      const watcher = watchProject(loaded.projectDir, async (changed) => {
        const t = Date.now();
        let next: LoadedConfig;
        try {
          next = await loadConfig(io.cwd, values.config);
        } catch (error) {
          reportError('dev', error, io);
          io.err('mercato dev: the last good version keeps serving; fix the file and save it again');
          return;
        }
        try {
          const previous = current;
          current = await startGeneration(next);
          loaded = next;
          if (previous) void retire(previous);
        } catch (error) {
          next.dispose();
          reportError('dev', error, io);
          io.err('mercato dev: the last good version keeps serving; fix the file and save it again');
          return;
        }
        io.out(
          `↻ reloaded in ${Date.now() - t} ms (${changed.slice(0, 3).join(', ')}${changed.length > 3 ? `, +${changed.length - 3} more` : ''})`,
        );
      });
      cleanups.push(() => watcher.close());
      await watcher.ready;
      // a file saved while the app was starting (before the watcher saw anything) reloads it now
      const late = [...loaded.inputs, ...scanRouteFiles(join(loaded.projectDir, 'routes')).routes.map((r) => r.file)].filter((file) =>
        modifiedSince(file, started),
      );
      if (late.length > 0) watcher.notify(late);
      io.out(`watching ${loaded.projectDir} for changes (Ctrl-C to stop)`);
    }
    const signal = await stop.promise;
    io.out(`mercato dev: ${signal} received, shutting down…`);
  } finally {
    sayKeyNote();
    stop.dispose();
    await cleanup();
  }
  return 0;
}

function modifiedSince(file: string, since: number): boolean {
  try {
    return statSync(file).mtimeMs >= since;
  } catch {
    return true; // removed since
  }
}

function waitForStopSignal(): { promise: Promise<NodeJS.Signals>; dispose(): void } {
  let onSignal!: (signal: NodeJS.Signals) => void;
  const promise = new Promise<NodeJS.Signals>((resolve) => {
    onSignal = (signal: NodeJS.Signals) => resolve(signal);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  return {
    promise,
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
