/**
 * The graphile-worker peer of `npm run bench:flows` (one process, a no-op task `noop`).
 *
 *   node --import tsx bench/peers/graphile.ts prepare        installs/migrates the graphile_worker schema, deletes any
 *                                                            job left, queues BENCH_RUNS jobs held back (run_at + 1 hour)
 *   node --import tsx bench/peers/graphile.ts work           defaults, concurrency BENCH_CONCURRENCY (default 10)
 *   node --import tsx bench/peers/graphile.ts work-batched   the same plus its batching options (settings.ts)
 *
 * The worker prints "ready" once started and stops gracefully on SIGTERM. graphile-worker deletes a job when it
 * completes, so the benchmark measures it by wall clock (release → last job gone).
 */
import { Logger, makeWorkerUtils, run } from 'graphile-worker';
import { GRAPHILE_BATCHED } from './settings.ts';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('graphile peer: DATABASE_URL is required');
const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);

// errors only: the benchmark reads stdout for "ready"
const logger = new Logger(() => (level, message) => {
  if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
});

async function prepare() {
  const utils = await makeWorkerUtils({ connectionString: url, logger });
  try {
    await utils.migrate();
    await utils.withPgClient((client) => client.query('delete from graphile_worker._private_jobs'));
    const runAt = new Date(Date.now() + 3_600_000);
    const specs = Array.from({ length: num('BENCH_RUNS', 3000) }, (_, i) => ({ identifier: 'noop', payload: { n: i }, runAt }));
    await utils.addJobs(specs);
  } finally {
    await utils.release();
  }
}

async function work(batched: boolean) {
  const runner = await run({
    connectionString: url,
    concurrency: num('BENCH_CONCURRENCY', 10),
    noHandleSignals: true,
    logger,
    taskList: { noop: async () => {} },
    ...(batched ? { preset: { worker: GRAPHILE_BATCHED } } : {}),
  });
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => {
    void runner.stop().finally(() => process.exit(0));
  });
  await runner.promise;
}

const mode = process.argv[2];
if (mode === 'prepare') await prepare();
else if (mode === 'work' || mode === 'work-batched') await work(mode === 'work-batched');
else throw new Error(`graphile peer: unknown mode "${mode}" (prepare | work | work-batched)`);
