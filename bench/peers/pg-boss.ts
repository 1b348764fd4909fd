/**
 * The pg-boss peer of `npm run bench:flows` (pg-boss 10, one process, a no-op handler).
 *
 *   node --import tsx bench/peers/pg-boss.ts prepare   installs the pgboss schema, creates the queue, deletes its jobs,
 *                                                      queues BENCH_RUNS jobs held back (startAfter + 1 hour)
 *   node --import tsx bench/peers/pg-boss.ts work      PGBOSS.loops `work()` loops of PGBOSS.batchSize jobs each
 *                                                      (settings.ts); prints "ready", stops gracefully on SIGTERM
 *
 * Everything else is pg-boss's default (maintenance and scheduling on). Rate from its own timestamps:
 * jobs / (max completed_on − min started_on).
 */
import PgBoss from 'pg-boss';
import { PGBOSS } from './settings.ts';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('pg-boss peer: DATABASE_URL is required');
const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);

async function prepare() {
  const boss = new PgBoss({ connectionString: url, supervise: false, schedule: false, application_name: 'pg-boss-prepare' });
  boss.on('error', (error) => process.stderr.write(`pg-boss: ${error.message}\n`));
  await boss.start();
  try {
    if (!(await boss.getQueue(PGBOSS.queue))) await boss.createQueue(PGBOSS.queue);
    await boss.getDb().executeSql(`delete from pgboss.job where name = $1`, [PGBOSS.queue]);
    const startAfter = new Date(Date.now() + 3_600_000);
    const jobs = Array.from({ length: num('BENCH_RUNS', 3000) }, (_, i) => ({ name: PGBOSS.queue, data: { n: i }, startAfter }));
    await boss.insert(jobs);
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

async function work() {
  const boss = new PgBoss({ connectionString: url, application_name: 'pg-boss-worker' });
  boss.on('error', (error) => process.stderr.write(`pg-boss: ${error.message}\n`));
  await boss.start();
  for (let i = 0; i < PGBOSS.loops; i++) {
    await boss.work(PGBOSS.queue, { batchSize: PGBOSS.batchSize, pollingIntervalSeconds: PGBOSS.pollingIntervalSeconds }, async () => {});
  }
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => {
    void boss.stop({ graceful: true, wait: true }).finally(() => process.exit(0));
  });
}

const mode = process.argv[2];
if (mode === 'prepare') await prepare();
else if (mode === 'work') await work();
else throw new Error(`pg-boss peer: unknown mode "${mode}" (prepare | work)`);
