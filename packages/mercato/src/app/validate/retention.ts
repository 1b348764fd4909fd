/** The `retention` option (docs/retention.md): a period per kind of record (a Duration or `false`), the batch size, the interval. */
import { parseDuration } from '../duration.ts';
import { at, checkKnownKeys, got, isPlainObject, isPositiveInteger, type Problems } from './util.ts';

const DAY = 86_400_000;
/**
 * The shortest period of each kind. Webhook dedupe records must outlive the platform's retries of a delivery (8 over
 * 4 hours today; 48 hours before September 2024), so a retry is never handled twice. Cron tick rows are the
 * exactly-once guard of a fire time: a scheduler looks back at most its catch-up window (1 hour by default).
 */
export const RETENTION_MINIMUM_MS = { runs: 60_000, mcpAudit: 60_000, webhookDeliveries: 2 * DAY, cronTicks: DAY } as const;
const MINIMUM_TEXT = { runs: '1m', mcpAudit: '1m', webhookDeliveries: '2d', cronTicks: '1d' } as const;
export const RETENTION_PERIODS = ['runs', 'mcpAudit', 'webhookDeliveries', 'cronTicks'] as const;
const RETENTION_KEYS = [...RETENTION_PERIODS, 'batchSize', 'interval'] as const;
export const MAX_RETENTION_BATCH = 100_000;
/** At most 100 years: a longer period is a typo, and `false` says "forever". */
const MAX_PERIOD_MS = 100 * 365 * DAY;

export function checkRetention(problems: Problems, retention: unknown): void {
  if (retention === undefined) return;
  if (!isPlainObject(retention)) {
    problems.add('retention', `must be an object like { runs: '30d', mcpAudit: '90d' } ${got(retention)}`);
    return;
  }
  checkKnownKeys(problems, 'retention', retention, RETENTION_KEYS, 'retention option');
  for (const key of RETENTION_PERIODS) {
    const value = retention[key];
    if (value === undefined || value === false) continue;
    const ms = durationOf(value);
    if (ms === undefined || ms > MAX_PERIOD_MS) {
      problems.add(at('retention', key), `must be a duration (ms or a string like 30d, 12h) or false to keep forever ${got(value)}`);
    } else if (ms < RETENTION_MINIMUM_MS[key]) {
      problems.add(at('retention', key), `must be at least ${MINIMUM_TEXT[key]}${minimumReason(key)} ${got(value)}`);
    }
  }
  const batch = retention.batchSize;
  if (batch !== undefined && (!isPositiveInteger(batch) || batch > MAX_RETENTION_BATCH)) {
    problems.add(at('retention', 'batchSize'), `must be a positive integer of at most ${MAX_RETENTION_BATCH} ${got(batch)}`);
  }
  const interval = retention.interval;
  if (interval !== undefined) {
    const ms = durationOf(interval);
    if (ms === undefined || ms < 60_000 || ms > 7 * DAY) {
      problems.add(at('retention', 'interval'), `must be a duration from 1m to 7d (a string like 1h) ${got(interval)}`);
    }
  }
}

function minimumReason(key: (typeof RETENTION_PERIODS)[number]): string {
  if (key === 'webhookDeliveries') return ': a platform retry of a delivery must still find its record, or it is handled twice';
  if (key === 'cronTicks') return ': a scheduler needs recent tick rows to fire each tick exactly once';
  return '';
}

function durationOf(value: unknown): number | undefined {
  if (typeof value !== 'number' && typeof value !== 'string') return undefined;
  try {
    const ms = parseDuration(value as number);
    return Number.isFinite(ms) ? ms : undefined;
  } catch {
    return undefined;
  }
}
