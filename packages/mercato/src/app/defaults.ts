import type { PageKey, PageMode, ResolvedRetention, RetryPolicy, WorkerConfig } from './types.ts';

export const DEFAULT_WORKER: Readonly<WorkerConfig> = Object.freeze({
  concurrency: 5,
  pollIntervalMs: 1000,
  pollMaxIntervalMs: 5000,
  pollBackoffCoefficient: 1.5,
  leaseDurationMs: 10000,
  prefetch: 100,
});

/** Our design (the spec leaves it open); documented in docs/configuration.md. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 3,
  initialIntervalMs: 1000,
  backoffCoefficient: 2,
  maxIntervalMs: 60000,
});

export const DEFAULT_PAGES: Readonly<Record<PageKey, PageMode>> = Object.freeze({
  flows: 'visible',
  providers: 'visible',
  crons: 'visible',
  functions: 'visible',
  mcp: 'visible',
});

const DAY = 86_400_000;

/** docs/retention.md: runs a month (Temporal's common namespace setting), MCP audit a quarter, dedupe and ticks a week. */
export const DEFAULT_RETENTION: Readonly<ResolvedRetention> = Object.freeze({
  runs: 30 * DAY,
  mcpAudit: 90 * DAY,
  webhookDeliveries: 7 * DAY,
  cronTicks: 7 * DAY,
  batchSize: 1000,
  intervalMs: 3_600_000,
});
