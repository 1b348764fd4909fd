/**
 * The absurd peer of `npm run bench:flows` (absurd-sdk, one process): a task `oneStep` whose one step (`ctx.step`,
 * named `only`) returns the run's input, which absurd checkpoints in absurd.c_<queue> (set_task_checkpoint_state)
 * before the task's result is written by complete_run. The same durable work as a one-step Mercato run.
 *
 *   node --import tsx bench/peers/absurd.ts prepare   installs absurd's schema if the database has none (the file
 *                                                     named by ABSURD_SQL), creates the queue, empties its tables and
 *                                                     spawns BENCH_RUNS `oneStep` tasks, held back (their runs'
 *                                                     available_at moved one hour ahead)
 *   node --import tsx bench/peers/absurd.ts work      startWorker with concurrency BENCH_CONCURRENCY (it claims as many
 *                                                     tasks as it has free slots, in one claim_task call) and the short
 *                                                     idle poll of same-work.ts; prints "ready", stops on SIGTERM
 *
 * absurd's schema is not in the npm package: it ships as sql/absurd.sql in absurd's repository and is installed by
 * its Python CLI (`absurdctl init`, from PyPI). ABSURD_SQL must name that file, of the release matching absurd-sdk
 * (package.json): without it the benchmark leaves absurd out. Rate from absurd's own timestamps: tasks / (max
 * completed_at − min started_at) of the queue's runs.
 */
import { readFileSync } from 'node:fs';
import { Absurd } from 'absurd-sdk';
import pg from 'pg';
import { ABSURD } from './same-work.ts';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('absurd peer: DATABASE_URL is required');
const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);
const concurrency = num('BENCH_CONCURRENCY', 10);
const Q = ABSURD.queue;

const silent = { log: () => {}, info: () => {}, warn: () => {}, error: (...args: unknown[]) => console.error(...args), debug: () => {} };

function register(app: Absurd) {
  app.registerTask({ name: 'oneStep' }, async (params: { n: number }, ctx) => ctx.step('only', async () => params.n));
}

async function prepare() {
  const pool = new pg.Pool({ connectionString: url, max: 9, application_name: 'absurd-prepare' });
  try {
    const [{ installed }] = (await pool.query<{ installed: boolean }>(`select to_regnamespace('absurd') is not null as installed`)).rows;
    if (!installed) {
      const file = process.env.ABSURD_SQL;
      if (!file) throw new Error('absurd peer: ABSURD_SQL (the path of absurd.sql) is required to install its schema');
      await pool.query(readFileSync(file, 'utf8'));
    }
    const app = new Absurd({ db: pool, queueName: Q, log: silent as unknown as Console });
    register(app);
    await app.createQueue(Q);
    await pool.query(`truncate absurd.t_${Q}, absurd.r_${Q}, absurd.c_${Q}, absurd.e_${Q}, absurd.w_${Q}`);
    const runs = num('BENCH_RUNS', 3000);
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < runs) await app.spawn('oneStep', { n: next++ });
      }),
    );
    // held back until the worker is up (each run keeps its order): the benchmark's release moves them back an hour
    await pool.query(`update absurd.r_${Q} set available_at = available_at + interval '1 hour'`);
  } finally {
    await pool.end();
  }
}

async function work() {
  // one connection per slot and one for the claim loop
  const pool = new pg.Pool({ connectionString: url, max: concurrency + 1, application_name: 'absurd-worker' });
  const app = new Absurd({ db: pool, queueName: Q, log: silent as unknown as Console });
  register(app);
  const worker = await app.startWorker({ concurrency, pollInterval: ABSURD.pollIntervalSeconds });
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => {
    void worker
      .close()
      .then(() => pool.end())
      .finally(() => process.exit(0));
  });
}

const mode = process.argv[2];
if (mode === 'prepare') await prepare();
else if (mode === 'work') await work();
else throw new Error(`absurd peer: unknown mode "${mode}" (prepare | work)`);
