/**
 * The plain-pg peer of `npm run bench:flows`: the smallest durable worker of the same shape as a one-step Mercato run,
 * written directly against `pg` with named prepared statements.
 *
 *   node --import tsx bench/peers/plain-pg.ts prepare   creates the tables (if needed), empties them and queues
 *                                                       BENCH_RUNS jobs held back (available_at one hour ahead)
 *   node --import tsx bench/peers/plain-pg.ts work      the worker: prints "ready", runs until SIGTERM
 *
 * Worker: BENCH_CONCURRENCY slots (default 10). One claim loop takes as many due jobs as there are free slots in one
 * statement (`FOR UPDATE SKIP LOCKED`, status → running, started_at = now(), RETURNING), and hands each to a slot, which
 * inserts the job's one step row (its own commit) and then marks the job completed (its own commit, finished_at = now()).
 * When nothing is due the loop waits for NOTIFY plain_jobs or 1 s. Same rate definition as Mercato's:
 * jobs / (max finished_at − min started_at), from these database timestamps.
 */
import pg from 'pg';
import { PLAIN_CHANNEL } from './settings.ts';

const SCHEMA = `
create table if not exists plain_jobs (
  id bigserial primary key,
  status text not null default 'queued',
  payload jsonb not null,
  attempts int not null default 0,
  available_at timestamptz not null default now(),
  created_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz
);
create index if not exists plain_jobs_due_idx on plain_jobs (available_at, id) where status = 'queued';
create table if not exists plain_steps (
  job_id bigint not null references plain_jobs (id) on delete cascade,
  name text not null,
  result jsonb,
  created_at timestamptz not null default now(),
  primary key (job_id, name)
);`;

const CLAIM = {
  name: 'plain_claim',
  text: `with due as (
           select id from plain_jobs where status = 'queued' and available_at <= now()
           order by available_at, id limit $1 for update skip locked)
         update plain_jobs j set status = 'running', started_at = now(), attempts = j.attempts + 1
         from due where j.id = due.id
         returning j.id, j.payload`,
};
const STEP = { name: 'plain_step', text: `insert into plain_steps (job_id, name, result) values ($1, 'only', $2)` };
const COMPLETE = {
  name: 'plain_complete',
  text: `update plain_jobs set status = 'completed', finished_at = now() where id = $1 and status = 'running'`,
};

const url = process.env.DATABASE_URL;
if (!url) throw new Error('plain-pg: DATABASE_URL is required');
const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);

async function prepare() {
  const client = new pg.Client({ connectionString: url, application_name: 'plain-pg-prepare' });
  await client.connect();
  try {
    await client.query(SCHEMA);
    await client.query('truncate plain_steps, plain_jobs restart identity');
    await client.query(
      `insert into plain_jobs (payload, available_at)
       select jsonb_build_object('n', i), now() + interval '1 hour' from generate_series(1, $1::int) i`,
      [num('BENCH_RUNS', 3000)],
    );
  } finally {
    await client.end();
  }
}

async function work() {
  const concurrency = num('BENCH_CONCURRENCY', 10);
  const pool = new pg.Pool({ connectionString: url, max: concurrency + 1, application_name: 'plain-pg-worker' });
  const listener = new pg.Client({ connectionString: url, application_name: 'plain-pg-listen' });
  await listener.connect();

  let wake: (() => void) | undefined;
  const nudge = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  listener.on('notification', nudge);
  await listener.query(`listen ${PLAIN_CHANNEL}`);

  let stopping = false;
  let free = concurrency;
  const inFlight = new Set<Promise<void>>();

  const runJob = async (job: { id: string; payload: { n: number } }) => {
    // the job's one step: its result row, committed on its own ...
    await pool.query({ ...STEP, values: [job.id, JSON.stringify(job.payload.n)] });
    // ... then the completion, committed on its own
    await pool.query({ ...COMPLETE, values: [job.id] });
  };

  const loop = async () => {
    while (!stopping) {
      if (free === 0) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      let rows: Array<{ id: string; payload: { n: number } }> = [];
      try {
        rows = (await pool.query({ ...CLAIM, values: [free] })).rows;
      } catch (error) {
        if (!stopping) process.stderr.write(`plain-pg: claim failed: ${(error as Error).message}\n`);
      }
      if (rows.length === 0) {
        // nothing due: sleep until a NOTIFY or a slot frees up, or 1 s (the poll)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 1000);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        continue;
      }
      for (const job of rows) {
        free--;
        const p = runJob(job)
          .catch((error: unknown) => {
            process.stderr.write(`plain-pg: job ${job.id} failed: ${(error as Error).message}\n`);
          })
          .finally(() => {
            free++;
            inFlight.delete(p);
            nudge();
          });
        inFlight.add(p);
      }
    }
  };

  const done = loop();
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => {
    stopping = true;
    nudge();
    void done
      .then(() => Promise.all(inFlight))
      .then(() => listener.end())
      .then(() => pool.end())
      .then(() => process.exit(0));
  });
}

const mode = process.argv[2];
if (mode === 'prepare') await prepare();
else if (mode === 'work') await work();
else throw new Error(`plain-pg: unknown mode "${mode}" (prepare | work)`);
