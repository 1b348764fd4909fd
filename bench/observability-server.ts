/**
 * Started by bench/observability.ts in a process of its own (as `mercato start` would run): a runtime on the bench
 * database (DATABASE_URL) with the real HTTP server. Prints `READY <url>` once it listens; stops on SIGTERM.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { defineApp } from '../packages/mercato/src/app/app.ts';
import { startHttpServer } from '../packages/mercato/src/http/server.ts';
import { silentLogger } from '../packages/mercato/src/logger.ts';
import { createRuntime } from '../packages/mercato/src/runtime.ts';
import { buildApp } from '../packages/mercato/src/serve.ts';

export const BENCH_FLOWS = ['syncOrders', 'pushInventory', 'refreshCatalog', 'sendDigest', 'reconcilePayments'];

async function main() {
  const app = defineApp();
  const noop = { input: z.object({}), run: async () => null };
  const instance = app.defineConfig({ flows: Object.fromEntries(BENCH_FLOWS.map((f) => [f, app.defineFlow({ name: f, ...noop })])) });
  const runtime = await createRuntime({
    instance,
    projectDir: mkdtempSync(join(tmpdir(), 'mercato-bench-')),
    mode: 'test',
    logger: silentLogger(),
    env: { ...process.env, NODE_ENV: 'test' },
  });
  const server = await startHttpServer(buildApp(runtime), { port: 0, hostname: '127.0.0.1' });
  process.once('SIGTERM', () => {
    void server
      .close()
      .then(() => runtime.close())
      .finally(() => process.exit(0));
  });
  process.stdout.write(`READY ${server.url}\n`);
}

if (process.argv[1]?.endsWith('observability-server.ts')) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
