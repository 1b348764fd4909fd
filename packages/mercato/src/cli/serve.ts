import { createRuntime } from '../runtime.ts';
import { PREVIEW_PREFIX } from '../dev/preview.ts';
import { serve } from '../serve.ts';
import { startWorker } from '../worker/index.ts';
import { startCronScheduler } from '../crons/index.ts';
import { startDevPlatform } from '../dev/simulator.ts';
import { installationDirectory } from '../platform/directory.ts';
import { redactUrl } from './migrate.ts';
import { applyDevDefaults } from './dev-defaults.ts';
import { loadConfig } from './load-config.ts';
import { type CliIo, type CliValues, parsePort, parsePositiveInt } from './main.ts';

/** `mercato dev`, `mercato start` and `mercato worker`: run until SIGINT/SIGTERM. */
export async function runServe(command: 'dev' | 'start' | 'worker', values: CliValues, io: CliIo): Promise<number> {
  const env = io.env;
  if (command === 'dev') env.NODE_ENV ??= 'development';
  const port = parsePort(values.port);
  if (port !== undefined) env.PORT = String(port);
  const concurrency = parsePositiveInt('concurrency', values.concurrency);
  const { instance, projectDir } = await loadConfig(io.cwd, values.config);
  if (command === 'dev') {
    const filled = applyDevDefaults(env, instance.config.shopify);
    if (filled.length > 0) io.out(`mercato dev: using development values for ${filled.join(', ')} (see docs/environment.md)`);
  }
  // mercato dev: the platform simulator, unless PLATFORM_ORIGIN is set (it sets PLATFORM_ORIGIN before the runtime reads it)
  const devPlatform = command === 'dev' ? await startDevPlatform(env) : undefined;
  const runtime = await createRuntime({ instance, projectDir, mode: command, env }).catch(async (error) => {
    await devPlatform?.close();
    throw error;
  });
  if (devPlatform) runtime.onClose(() => devPlatform.close());
  const stop = waitForStopSignal();
  try {
    const db = runtime.env.databaseUrl ? `PostgreSQL ${redactUrl(runtime.env.databaseUrl)}` : `embedded PGlite at ${runtime.env.dataDir}`;
    if (command === 'worker') {
      const effective = concurrency ?? runtime.config.worker.concurrency;
      const worker = await startWorker(runtime, { concurrency: effective });
      io.out(`mercato worker ${runtime.version} (${worker.id}): database ${db}; concurrency ${effective}`);
    } else {
      const preview = command === 'dev' && !runtime.env.production;
      const server = await serve(runtime, { port: runtime.env.port, hostname: runtime.env.bindAddress, preview, previewShops: devPlatform?.shops });
      devPlatform?.attach(runtime.platform, server.url, runtime.config.functions);
      const base = `http://localhost:${server.port}`;
      if (command === 'dev') await startWorker(runtime, { concurrency });
      // The cron scheduler runs in dev and start (any number of replicas: each tick fires once), never in worker.
      startCronScheduler(runtime, { shops: installationDirectory(runtime.db) });
      const lines = [
        `mercato ${command} ${runtime.version} — listening on ${base}`,
        `  database:      ${db}`,
        `  apps:          ${runtime.platform.apps.map((a) => a.handle).join(', ')}`,
        `  admin API:     ${base}/api (session token required)`,
        `  admin UI:      ${base}/`,
        `  health:        ${base}/healthz`,
      ];
      lines.push(`  crons:         ${runtime.config.crons.length} (scheduler in this process)`);
      lines.push(
        devPlatform
          ? `  platform:      simulator at ${devPlatform.url} (shops ${devPlatform.shops().join(', ')}; webhooks → ${server.url}/webhooks)`
          : `  platform:      ${runtime.env.platformOrigin ?? 'https://<shop> (each shop on its own domain)'}`,
      );
      if (command === 'dev') lines.push('  worker:        in-process', preview ? `  admin preview: ${base}${PREVIEW_PREFIX}/  (development only)` : '  admin preview: disabled (NODE_ENV=production)');
      io.out(lines.join('\n'));
    }
    const signal = await stop;
    io.out(`mercato ${command}: ${signal} received, shutting down…`);
  } finally {
    await runtime.close();
  }
  return 0;
}

function waitForStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}
