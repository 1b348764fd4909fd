/**
 * The request bodies and query strings of the flows API (router.ts, watch-router.ts), as zod schemas parsed with
 * parseInput (src/input.ts): a refusal is `{ error: "<field>: <rule>", field, issues }`. The user's flow input is checked
 * by the dispatcher against the flow's own schema, and the retry policy by `validateDispatchPolicy` (every caller's door).
 */
import { z } from 'zod';
import { RUN_STATUSES, type RunStatus } from '../app/types.ts';
import { isUuid } from '../db/sql.ts';
import { describeBadText, hasBadText } from '../db/text.ts';
import type { RetryMode } from './lifecycle.ts';

export const RUN_LIST_DEFAULT_LIMIT = 50;
export const RUN_LIST_MAX_LIMIT = 200;
export const MAX_BULK_DELETE = 100;
export const WATCH_DEFAULT_TIMEOUT_S = 25;
export const WATCH_MAX_TIMEOUT_S = 30;

/** POST /api/flows/:name/run: `{ input?, retryPolicy?, priority? }`. */
export const runFlowBody = z.strictObject({
  input: z.unknown().optional(),
  /** Checked by the dispatcher (validateDispatchPolicy), like every caller's. */
  retryPolicy: z.unknown().optional(),
  /** Checked by the dispatcher (an integer from -100 to 100). */
  priority: z.unknown().optional(),
});
export const RUN_FLOW_NOT_AN_OBJECT = 'Body must be a JSON object: { "input": { … } }';

/** An optional query parameter: absent or empty → `fallback`. */
const param = <T>(fallback: T, parse: (raw: string, ctx: z.RefinementCtx) => T) =>
  z
    .string()
    .optional()
    .transform((raw, ctx) => (raw === undefined || raw === '' ? fallback : parse(raw, ctx)));

const intParam = (min: number, max: number, fallback: number) =>
  param(fallback, (raw, ctx) => {
    if (!/^-?\d+$/.test(raw.trim())) {
      ctx.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max}` });
      return z.NEVER;
    }
    const n = Number(raw);
    if (n < min || n > max) {
      ctx.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max} (got ${n})` });
      return z.NEVER;
    }
    return n;
  });

/** The calendar day exists (JavaScript would roll 2026-02-30 over to March). */
function validDay(raw: string): boolean {
  const [y, m, d] = raw.slice(0, 10).split('-').map(Number);
  const day = new Date(Date.UTC(y, m - 1, d));
  return day.getUTCFullYear() === y && day.getUTCMonth() === m - 1 && day.getUTCDate() === d;
}

const dateParam = param<Date | undefined>(undefined, (raw, ctx) => {
  const iso = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.exec(raw);
  // A date-time without an offset is UTC (not the server's local time).
  const d = new Date(iso && iso[1] && !iso[4] ? `${raw}Z` : raw);
  if (!iso || Number.isNaN(d.getTime()) || !validDay(raw)) {
    ctx.addIssue({ code: 'custom', message: 'not a date (use ISO 8601, e.g. 2026-11-22 or 2026-11-22T10:00:00Z)' });
    return z.NEVER;
  }
  return d;
});

/** GET /api/runs, GET /api/flows/:name/runs (docs/runs.md). */
export const runListQuery = z
  .strictObject({
    status: param<RunStatus | undefined>(undefined, (raw, ctx) => {
      if (RUN_STATUSES.includes(raw as RunStatus)) return raw as RunStatus;
      ctx.addIssue({ code: 'custom', message: `must be one of ${RUN_STATUSES.join(', ')}` });
      return z.NEVER;
    }),
    from: dateParam,
    to: dateParam,
    search: param<string | undefined>(undefined, (raw, ctx) => {
      const search = raw.trim();
      if (search.length > 200) ctx.addIssue({ code: 'custom', message: 'at most 200 characters' });
      else if (search && hasBadText(search)) ctx.addIssue({ code: 'custom', message: `must not contain ${describeBadText(search)}` });
      return search || undefined;
    }),
    limit: intParam(1, RUN_LIST_MAX_LIMIT, RUN_LIST_DEFAULT_LIMIT),
    offset: intParam(0, Number.MAX_SAFE_INTEGER, 0),
  })
  .superRefine((q, ctx) => {
    if (q.from && q.to && q.from > q.to) ctx.addIssue({ code: 'custom', path: ['from'], message: 'must not be after to' });
  });
export type RunListQuery = z.output<typeof runListQuery>;

/** POST /api/runs/:id/retry?mode=reset|resume: `reset` starts afresh, anything else resumes. */
export const retryQuery = z.object({
  mode: z
    .string()
    .optional()
    .transform((mode): RetryMode => (mode === 'reset' ? 'reset' : 'resume')),
});

/**
 * POST /api/runs/bulk-delete: `{ ids: [<run id>, …] }`, 1 to 100 ids (duplicates count once). A body that is not an
 * object is read as one without `ids`.
 */
export const bulkDeleteBody = z.preprocess(
  (body) => (typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}),
  z
    .object({
      ids: z
        .array(z.unknown(), { error: 'must be an array of run ids' })
        .min(1, { error: 'must not be empty' })
        .max(MAX_BULK_DELETE, {
          error: (issue) => `at most ${MAX_BULK_DELETE} ids per request (got ${(issue.input as unknown[]).length})`,
        }),
    })
    .superRefine((body, ctx) => {
      const bad = body.ids.findIndex((v) => !isUuid(v));
      if (bad !== -1) ctx.addIssue({ code: 'custom', path: [`ids[${bad}]`], message: 'not a run id (UUID)' });
    })
    .transform((body) => ({ ids: [...new Set(body.ids as string[])] })),
);

/** GET /api/runs/:id/watch?since=<version>&timeout=<seconds>. */
export const watchQuery = z.strictObject({
  since: z.string().max(300, { error: 'at most 300 characters' }).optional(),
  timeout: param(WATCH_DEFAULT_TIMEOUT_S, (raw, ctx) => {
    if (!/^\d{1,3}$/.test(raw) || Number(raw) > WATCH_MAX_TIMEOUT_S) {
      ctx.addIssue({ code: 'custom', message: `must be a whole number of seconds from 0 to ${WATCH_MAX_TIMEOUT_S}` });
      return z.NEVER;
    }
    return Number(raw);
  }),
});

/** The windows of the charts' aggregates (GET /api/stats/runs): 24 hours in hours, 7 days in 6-hour buckets. */
export const STATS_RANGES = ['24h', '7d'] as const;
export type StatsRange = (typeof STATS_RANGES)[number];

/** GET /api/stats/runs?range=24h|7d (default 24h). */
export const runStatsQuery = z.strictObject({
  range: param<StatsRange>('24h', (raw, ctx) => {
    if ((STATS_RANGES as readonly string[]).includes(raw)) return raw as StatsRange;
    ctx.addIssue({ code: 'custom', message: `must be one of ${STATS_RANGES.join(', ')}` });
    return z.NEVER;
  }),
});

/** GET /api/stats/flows: no parameter (always the last 24 hours). */
export const flowStatsQuery = z.strictObject({});
