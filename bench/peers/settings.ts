/** The settings of the peers of `npm run bench:flows`, in one place so that the benchmark can print and record them. */

/** graphile-worker "batched": the batching options of its performance documentation (local queue, batched completion). */
export const GRAPHILE_BATCHED = { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } as const;

/**
 * pg-boss 10 has no LISTEN: each `work()` loop fetches up to `batchSize` jobs, runs the handler once for the batch,
 * completes the batch in one statement and then waits for the rest of its polling interval. `loops` × `batchSize` is
 * the number of jobs in hand at once (the same 10 × … as the other workers' slots would be too slow to drain the queue
 * at the minimum interval, 0.5 s): the throughput ceiling is loops × batchSize / interval.
 */
export const PGBOSS = { loops: 10, batchSize: 10, pollingIntervalSeconds: 0.5, queue: 'bench' } as const;

/** The channel the plain-pg worker listens on for new due jobs. */
export const PLAIN_CHANNEL = 'plain_jobs';
