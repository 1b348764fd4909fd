/** Builds a real runtime (and optionally a worker and an HTTP server) on a test database. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { MercatoInstance } from '../../src/app/app.ts';
import type { Database } from '../../src/db/engine.ts';
import { startHttpServer } from '../../src/http/server.ts';
import { signSessionToken } from '../../src/http/session-token.ts';
import { silentLogger, type Logger } from '../../src/logger.ts';
import { type Runtime, createRuntime } from '../../src/runtime.ts';
import { buildApp } from '../../src/serve.ts';
import type { WorkerConfig } from '../../src/app/types.ts';
import { createRunLogger, writeLog } from '../../src/logs/writer.ts';
import { Worker, type WorkerOptions } from '../../src/worker/index.ts';
import { startWorker } from '../../src/serve.ts';
import { SHOP } from '../kit/index.ts';

export const TEST_API_KEY = 'test-api-key';
export const TEST_API_SECRET = 'test-api-secret';
export { OTHER_SHOP, SHOP } from '../kit/index.ts';

export interface TestRuntimeOptions {
  worker?: boolean | { concurrency?: number; heartbeatIntervalMs?: number };
  http?: boolean;
  env?: Record<string, string>;
  logger?: Logger;
}

export interface TestRuntime {
  runtime: Runtime;
  worker?: Worker;
  url?: string;
  /** A fresh session token for a shop (default SHOP). */
  token(shop?: string): string;
  /** fetch against the server with a session token for `shop`. */
  api(path: string, init?: RequestInit & { shop?: string; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

export async function startTestRuntime(
  instance: MercatoInstance<any, any>,
  db: Database,
  options: TestRuntimeOptions = {},
): Promise<TestRuntime> {
  const projectDir = mkdtempSync(join(tmpdir(), 'mercato-test-'));
  const runtime = await createRuntime({
    instance,
    projectDir,
    mode: 'test',
    db,
    logger: options.logger ?? silentLogger(),
    env: { NODE_ENV: 'test', PLATFORM_API_KEY: TEST_API_KEY, PLATFORM_API_SECRET: TEST_API_SECRET, ...options.env },
  });
  let worker: Worker | undefined;
  if (options.worker) worker = await startWorker(runtime, typeof options.worker === 'object' ? options.worker : {});
  let url: string | undefined;
  if (options.http) {
    const server = await startHttpServer(buildApp(runtime), { port: 0, hostname: '127.0.0.1', limits: runtime.env.http });
    runtime.onClose(() => server.close());
    url = server.url;
  }
  const token = (shop = SHOP) => signSessionToken({ apiKey: TEST_API_KEY, apiSecret: TEST_API_SECRET, shop });
  return {
    runtime,
    worker,
    url,
    token,
    api(path, init = {}) {
      if (!url) throw new Error('startTestRuntime: http not enabled');
      const { shop, json, ...rest } = init;
      const headers = new Headers(rest.headers);
      headers.set('authorization', `Bearer ${token(shop)}`);
      if (json !== undefined) headers.set('content-type', 'application/json');
      return fetch(`${url}${path}`, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body });
    },
    close: () => runtime.close(),
  };
}

/** Polls the run until `predicate` holds (default: a final state). */
export async function waitForRun(
  db: Database,
  runId: string,
  predicate: (r: { status: string; attempt: number }) => boolean = (r) => ['completed', 'failed', 'canceled'].includes(r.status),
  timeoutMs = 10_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await db.query<{ status: string; attempt: number; error: any; output: any; lost_leases: number }>(
      sql`select status, attempt - attempt_base as attempt, error, output, lost_leases from runs where id = ${runId}::uuid`,
    );
    if (row && predicate(row)) return row;
    if (Date.now() > deadline)
      throw new Error(`run ${runId} did not reach the expected state in ${timeoutMs} ms (last: ${JSON.stringify(row)})`);
    await new Promise((r) => setTimeout(r, 15));
  }
}

export const FAST_WORKER = { pollIntervalMs: 25, pollMaxIntervalMs: 200, pollBackoffCoefficient: 2, leaseDurationMs: 3000, concurrency: 5 };

/**
 * A worker of the runtime's flows that the test starts and stops itself, on `db` (the test's database, or a wrapper of
 * it), silent, with the runtime's worker settings plus `config`; ctx.dispatchFlow fails unless `dispatch` is given.
 */
export function testWorker(
  runtime: Runtime,
  db: Database,
  options: Partial<Omit<WorkerOptions, 'config'>> & { config?: Partial<WorkerConfig>; dispatch?: Runtime['dispatch'] } = {},
): Worker {
  const { config, dispatch, ...rest } = options;
  return new Worker({
    db,
    engine: {
      registry: runtime.registry,
      config: runtime.config,
      logger: silentLogger(),
      dispatch: dispatch ?? (() => Promise.reject(new Error('unused'))),
      runLogs: { create: createRunLogger, write: writeLog },
    },
    config: { ...runtime.config.worker, ...config },
    logger: silentLogger(),
    ...rest,
  });
}
