/** The worker capability: the claim loop, heartbeats and leases, wake-ups and the graceful stop (worker/README.md). */
export { Worker, DEFAULT_MAX_LOST_LEASES, PREFETCH_MAX_WAIT_MS, PREFETCH_WINDOW_MS, type WorkerOptions } from './worker.ts';
