/**
 * The settings of the "same work" peers of `npm run bench:flows` (DBOS Transact, absurd), in one place so that the
 * benchmark can print and record them. Both run the same one-step workflow as Mercato's `oneStep` flow: one step whose
 * result the engine checkpoints, then the run's completion.
 */

/**
 * DBOS Transact: one database-backed queue, worker concurrency BENCH_CONCURRENCY. Its dispatch loop polls each queue
 * every `minPollingIntervalMs` (default 1000 ms, which caps a worker concurrency of 10 at ~10 workflows/s): the
 * benchmark sets it to 1 ms, the shortest it accepts (it must be positive), which measured fastest here
 * (docs/benchmarks.md). BENCH_DBOS_POLL_MS overrides it.
 */
export const DBOS_QUEUE = { name: 'bench', minPollingIntervalMs: Number(process.env.BENCH_DBOS_POLL_MS) || 1 } as const;

/**
 * absurd: one queue (unpartitioned, its default). The worker claims as many tasks as it has free slots of
 * BENCH_CONCURRENCY and polls again after `pollIntervalSeconds` when nothing was due. Its schema is not in the npm
 * package: ABSURD_SQL names the absurd.sql of the release matching absurd-sdk (see absurd.ts).
 */
export const ABSURD = { queue: 'bench', pollIntervalSeconds: Number(process.env.BENCH_ABSURD_POLL_S) || 0.01 } as const;
