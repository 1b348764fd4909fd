/**
 * Health for orchestrators (docs/observability.md): `GET /healthz` says the process is alive (no dependency is
 * checked, so a database outage never gets a healthy process restarted); `GET /readyz` runs the readiness checks the
 * composition gives (database reachable, migrations current, worker loop running where there is one) and answers 200
 * when every one passes, else 503. Bodies are JSON; both need no authentication.
 */
import { Hono } from 'hono';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import type { Logger } from '../logger.ts';

/** One readiness check's outcome; `ok` decides, the other fields say why (never a secret or a stack). */
export type CheckResult = { ok: boolean } & Record<string, unknown>;
/** A check answering undefined does not apply to this process (the worker check where no worker runs) and is left out. */
export type ReadinessChecks = Record<string, () => Promise<CheckResult | undefined>>;

/** A check that has not answered after this long fails (a probe's timeout is typically 1 to 5 s). */
export const READINESS_CHECK_TIMEOUT_MS = 2_000;

/** What /readyz says of a database that does not answer (the details go to the logs only). */
export const DATABASE_UNREACHABLE = 'database unreachable';

export interface HealthOptions {
  version: string;
  /** Where a failing check's error goes (a warn line, once per failing probe); /readyz itself shows none of it. */
  logger?: Pick<Logger, 'warn'>;
  /** The checks of /readyz by name, run at once. */
  checks: ReadinessChecks;
  timeoutMs?: number;
}

/**
 * `{ ok, status, checks, version }` of every check, each bounded by the timeout. A check that throws fails with a short
 * reason that names no host, port or driver detail (`/readyz` needs no login): `database unreachable` when the error
 * is one of the database being away, else `check failed`; the error itself goes to `onError` (the logs).
 */
export async function runChecks(
  checks: ReadinessChecks,
  timeoutMs = READINESS_CHECK_TIMEOUT_MS,
  onError: (check: string, error: unknown) => void = () => {},
) {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]): Promise<[string, CheckResult | undefined]> => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<CheckResult>((resolve) => {
        timer = setTimeout(() => resolve({ ok: false, error: `no answer within ${timeoutMs} ms` }), timeoutMs);
      });
      try {
        const failed = (error: unknown): CheckResult => {
          onError(name, error);
          return { ok: false, error: isDatabaseUnavailable(error) ? DATABASE_UNREACHABLE : 'check failed (the reason is in the logs)' };
        };
        return [name, await Promise.race([check().catch(failed), timeout])];
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  const applicable = entries.filter((e): e is [string, CheckResult] => e[1] !== undefined);
  const results = Object.fromEntries(applicable);
  const ok = applicable.every(([, r]) => r.ok);
  return { ok, status: ok ? 'ready' : 'not ready', checks: results };
}

const startedAt = Date.now();

/** The router of `/healthz` and `/readyz`. */
export function healthRouter(options: HealthOptions): Hono<any> {
  const app = new Hono();
  app.get('/healthz', (c) =>
    c.json({ ok: true, status: 'alive', version: options.version, uptimeSeconds: Math.round((Date.now() - startedAt) / 1000) }),
  );
  app.get('/readyz', async (c) => {
    const report = await runChecks(options.checks, options.timeoutMs, (check, error) =>
      options.logger?.warn({ check, reason: messageOf(error) }, 'readiness check failed'),
    );
    c.header('Cache-Control', 'no-store');
    return c.json({ ...report, version: options.version }, report.ok ? 200 : 503);
  });
  return app;
}

/** The readiness check of a database: it answers `select 1`. */
export function databaseCheck(db: { ping(): Promise<boolean> }): () => Promise<CheckResult> {
  return async () => ((await db.ping()) ? { ok: true } : { ok: false, error: DATABASE_UNREACHABLE });
}

/** The first line of an error's message, at most 200 characters (a driver's message; never a stack). */
function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0]!.slice(0, 200);
}
