/**
 * The DBOS Transact peer of `npm run bench:flows` (@dbos-inc/dbos-sdk, one process): a workflow `oneStep` whose one step
 * (`DBOS.runStep`, named `only`) returns the run's input, which DBOS checkpoints in dbos.operation_outputs before the
 * workflow's own result is written to dbos.workflow_status. The same durable work as a one-step Mercato run.
 *
 *   node --import tsx bench/peers/dbos.ts prepare   launches DBOS on DATABASE_URL (its own database: DBOS migrates
 *                                                   its `dbos` schema there), registers the queue, deletes every
 *                                                   workflow left and enqueues BENCH_RUNS `oneStep` workflows on the
 *                                                   queue held back (delaySeconds one hour: status DELAYED)
 *   node --import tsx bench/peers/dbos.ts work      launches DBOS with the queue (settings.ts DBOS_QUEUE: worker
 *                                                   concurrency BENCH_CONCURRENCY, the shortest polling interval);
 *                                                   prints "ready", shuts down gracefully on SIGTERM
 *
 * The benchmark releases the workflows by setting them ENQUEUED (what DBOS's own transition of delayed workflows does,
 * without waiting for its once-a-second sweep). Rate from DBOS's own timestamps: workflows / (max updated_at of the
 * finished ones − min started_at_epoch_ms).
 */
import { DBOS } from '@dbos-inc/dbos-sdk';
import { DBOS_QUEUE } from './same-work.ts';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('dbos peer: DATABASE_URL is required');
const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);
const concurrency = num('BENCH_CONCURRENCY', 10);

/** The workflow: one checkpointed step, whose result is the workflow's result. */
const oneStep = DBOS.registerWorkflow(async (n: number) => DBOS.runStep(async () => n, { name: 'only' }), { name: 'oneStep' });

async function launch() {
  DBOS.setConfig({
    name: 'bench',
    systemDatabaseUrl: url,
    // a fixed version: the enqueued workflows are dequeued by any later process of the benchmark
    applicationVersion: 'bench',
    logLevel: 'error',
    systemDatabasePoolSize: concurrency + 5,
  });
  await DBOS.launch();
  return DBOS.registerQueue(DBOS_QUEUE.name, {
    workerConcurrency: concurrency,
    minPollingIntervalMs: DBOS_QUEUE.minPollingIntervalMs,
    onConflict: 'always_update',
  });
}

async function prepare() {
  await launch();
  try {
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: url, application_name: 'dbos-prepare' });
    await client.connect();
    try {
      await client.query('truncate dbos.workflow_status cascade');
    } finally {
      await client.end();
    }
    const runs = num('BENCH_RUNS', 3000);
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < runs) {
          const n = next++;
          await DBOS.startWorkflow(oneStep, { queueName: DBOS_QUEUE.name, enqueueOptions: { delaySeconds: 3600 } })(n);
        }
      }),
    );
  } finally {
    await DBOS.shutdown();
  }
}

async function work() {
  await launch();
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => {
    void DBOS.shutdown().finally(() => process.exit(0));
  });
}

const mode = process.argv[2];
if (mode === 'prepare') await prepare();
else if (mode === 'work') await work();
else throw new Error(`dbos peer: unknown mode "${mode}" (prepare | work)`);
