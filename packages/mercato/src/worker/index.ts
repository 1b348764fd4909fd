import type { Runtime } from '../runtime.ts';
import { Worker } from './worker.ts';
import { createConnectors } from '../providers/service.ts';
import { adminClientFor } from '../platform/index.ts';
import { InvalidDispatchError } from '../routes/errors.ts';

export { Worker, DEFAULT_MAX_LOST_LEASES, type WorkerOptions } from './worker.ts';

/** Starts a worker on the runtime's database; it is stopped gracefully when the runtime closes. */
export async function startWorker(runtime: Runtime, options: { concurrency?: number; heartbeatIntervalMs?: number } = {}): Promise<Worker> {
  const worker = new Worker({
    db: runtime.db,
    engine: {
      registry: runtime.registry,
      config: runtime.config,
      logger: runtime.logger,
      events: runtime.events,
      adminClient: (appHandle, shop, signal) =>
        adminClientFor({ db: runtime.db, secrets: runtime.secrets, platform: runtime.platform, platformOrigin: runtime.env.platformOrigin, logger: runtime.logger }, appHandle, shop, signal),
      connectors: (appHandle, shop) => createConnectors({ db: runtime.db, secrets: runtime.secrets, providers: runtime.config.providers }, appHandle, shop) as any,
      dispatch: async ({ appHandle, shop, flowName, input, trigger, retryPolicy, parentRunId }) => {
        // ctx.dispatchFlow({ shopifyApp }) names any handle: only an app of this config may own a run
        if (!runtime.platform.byHandle(appHandle)) throw new InvalidDispatchError(`shopifyApp: unknown app handle "${appHandle}"`, { field: 'shopifyApp' });
        return runtime.dispatch({ appHandle, shop: shop ?? null, flowName, input, trigger: trigger as any, retryPolicy, parentRunId });
      },
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
