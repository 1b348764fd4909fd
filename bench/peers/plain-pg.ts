/**
 * The plain-pg peer of `npm run bench:flows`: the smallest durable worker of the same shape as a one-step Mercato run,
 * written directly against `pg` with named prepared statements.
 *
 *   node --import tsx bench/peers/plain-pg.ts prepare   creates the tables (if needed), empties them and queues
 *                                                       BENCH_RUNS jobs held back (available_at one hour ahead)
 *   node --import tsx bench/peers/plain-pg.ts work      the worker: prints "ready", runs until SIGTERM
 *   node --import tsx bench/peers/plain-pg.ts work-batched
 *                                                       the same durable shape with graphile-worker's batching: a
 *                                                       local queue of up to PLAIN_BATCH claimed jobs, and the step rows
 *                                                       and completions of the jobs that finish together in one statement
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

/** The batched worker: one statement inserts the step rows of the finished jobs and marks them completed. */
const COMPLETE_BATCH = {
  name: 'plain_complete_batch',
  text: `with fin as (update plain_jobs set status = 'completed', finished_at = now()
                 where id = any($1::bigint[]) and status = 'running' returning id),
         step as (insert into plain_steps (job_id, name, result)
                  select v.id, 'only', v.result from unnest($1::bigint[], $2::jsonb[]) as v(id, result) join fin on fin.id = v.id)
         select count(*)::int as n from fin`,
};

const url = process.env.DATABASE_URL;
if (!url) throw new Error('plain-pg: DATABASE_URL is required');
const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);

type Job = { id: string; payload: { n: number } };

/** Claims up to `limit` due jobs (the CLAIM statement); none on an error, which is printed unless the worker is stopping. */
async function claimJobs(pool: pg.Pool, limit: number, stopping: () => boolean): Promise<Job[]> {
  try {
    return (await pool.query<Job>({ ...CLAIM, values: [limit] })).rows;
  } catch (error) {
    if (!stopping()) process.stderr.write(`plain-pg: claim failed: ${(error as Error).message}\n`);
    return [];
  }
}

/** Nothing due: waits until the function handed to `setWake` is called (a NOTIFY, a free slot) or 1 s (the poll). */
function idle(setWake: (wake: () => void) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 1000);
    setWake(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** The worker's pool, and a LISTEN connection whose notifications call the function set by `waitFor` (so does `nudge`). */
async function connectWorker(poolSize: number) {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, application_name: 'plain-pg-worker' });
  const listener = new pg.Client({ connectionString: url, application_name: 'plain-pg-listen' });
  await listener.connect();
  let waiting: (() => void) | undefined;
  const nudge = () => {
    const w = waiting;
    waiting = undefined;
    w?.();
  };
  listener.on('notification', nudge);
  await listener.query(`listen ${PLAIN_CHANNEL}`);
  return { pool, listener, nudge, waitFor: (wake: () => void) => void (waiting = wake) };
}

/** Prints "ready", runs `loop`; on SIGTERM: `stop()`, waits for the loop and `drain()`, closes the connections, exits. */
function serveUntilSigterm(
  c: { pool: pg.Pool; listener: pg.Client; nudge: () => void },
  loop: () => Promise<void>,
  stop: () => void,
  drain: () => Promise<unknown>,
) {
  const done = loop();
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => {
    stop();
    c.nudge();
    void done
      .then(drain)
      .then(() => c.listener.end())
      .then(() => c.pool.end())
      .then(() => process.exit(0));
  });
}

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
  const { pool, listener, nudge, waitFor } = await connectWorker(concurrency + 1);

  let stopping = false;
  let free = concurrency;
  const inFlight = new Set<Promise<void>>();

  const runJob = async (job: Job) => {
    // the job's one step: its result row, committed on its own ...
    await pool.query({ ...STEP, values: [job.id, JSON.stringify(job.payload.n)] });
    // ... then the completion, committed on its own
    await pool.query({ ...COMPLETE, values: [job.id] });
  };

  const loop = async () => {
    while (!stopping) {
      if (free === 0) {
        await new Promise<void>((resolve) => waitFor(resolve));
        continue;
      }
      const rows = await claimJobs(pool, free, () => stopping);
      if (rows.length === 0) {
        await idle(waitFor);
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

  serveUntilSigterm(
    { pool, listener, nudge },
    loop,
    () => (stopping = true),
    () => Promise.all(inFlight),
  );
}

/**
 * Batched: jobs are claimed ahead into a local queue (up to PLAIN_BATCH, refilled when half empty), BENCH_CONCURRENCY
 * slots take jobs from it, and the jobs that finish in the same turn of the event loop are completed together (step rows
 * and job updates in one statement, at most two statements in flight). The shape a one-step Mercato run has with its
 * claiming ahead and batched completions, without anything else Mercato does per run.
 */
async function workBatched() {
  const concurrency = num('BENCH_CONCURRENCY', 10);
  const batch = num('PLAIN_BATCH', 500);
  const { pool, listener, nudge, waitFor } = await connectWorker(4);
  let stopping = false;

  const queue: Job[] = [];
  let busy = 0;
  const finished: Array<{ id: string; result: string }> = [];
  let flushScheduled = false;
  const completions = new Set<Promise<void>>();
  const flush = () => {
    flushScheduled = false;
    if (finished.length === 0 || completions.size >= 2) return;
    const items = finished.splice(0, 1000);
    const p = pool
      .query({ ...COMPLETE_BATCH, values: [items.map((i) => i.id), items.map((i) => i.result)] })
      .then(
        () => {},
        (error: unknown) => void process.stderr.write(`plain-pg: completion failed: ${(error as Error).message}\n`),
      )
      .finally(() => {
        completions.delete(p);
        if (finished.length > 0) scheduleFlush();
      });
    completions.add(p);
  };
  const scheduleFlush = () => {
    if (flushScheduled) return;
    flushScheduled = true;
    setImmediate(flush);
  };
  const startSlots = () => {
    while (busy < concurrency && queue.length > 0) {
      const job = queue.shift()!;
      busy++;
      // the job's one step (a no-op returning its input), then its completion joins the next batch
      void Promise.resolve(job.payload.n).then((value) => {
        busy--;
        finished.push({ id: job.id, result: JSON.stringify(value) });
        scheduleFlush();
        startSlots();
        if (queue.length <= batch / 2) nudge();
      });
    }
  };
  const loop = async () => {
    while (!stopping) {
      if (queue.length > batch / 2) {
        await new Promise<void>((resolve) => waitFor(resolve));
        continue;
      }
      const rows = await claimJobs(pool, batch - queue.length, () => stopping);
      if (rows.length === 0) {
        await idle(waitFor);
        continue;
      }
      queue.push(...rows);
      startSlots();
    }
  };
  serveUntilSigterm(
    { pool, listener, nudge },
    loop,
    () => (stopping = true),
    async () => {
      while (busy > 0 || finished.length > 0 || completions.size > 0) {
        flush();
        await Promise.all(completions);
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
  );
}

const mode = process.argv[2];
if (mode === 'prepare') await prepare();
else if (mode === 'work') await work();
else if (mode === 'work-batched') await workBatched();
else throw new Error(`plain-pg: unknown mode "${mode}" (prepare | work | work-batched)`);
