/** The write of a run's final state (completed, failed, or back to pending for a retry), fenced and retried. */
import { databaseUnavailableReason } from '../db/unavailable.ts';
import type { Logger } from '../logger.ts';

export const FINAL_WRITE_RETRY_DELAYS_MS: readonly number[] = [50, 200, 800];

/**
 * Stores a run's final state (fenced on the lease by `write`, which answers false when the run is no longer this
 * execution's). A database error is retried after each of `delaysMs` before giving up; then the run stays `running`
 * until its lease expires and another worker reclaims it. True when stored.
 */
export async function writeFinalState(
  deps: { logger: Logger; finalWriteRetryDelaysMs?: readonly number[] },
  /** The run's fields on the log lines: `runId`, and `flow`, `app`, `shop` when known. */
  about: { runId: string } & Record<string, unknown>,
  what: string,
  write: () => Promise<boolean>,
): Promise<boolean> {
  const delays = deps.finalWriteRetryDelaysMs ?? FINAL_WRITE_RETRY_DELAYS_MS;
  for (let i = 0; ; i++) {
    try {
      return await write();
    } catch (error) {
      // the database being away is an outage (the worker logs it once), not a bug: warn with its reason, no stack
      const unavailable = databaseUnavailableReason(error);
      const cause = unavailable === undefined ? { err: error } : { reason: unavailable };
      if (i >= delays.length) {
        deps.logger[unavailable === undefined ? 'error' : 'warn'](
          { ...cause, ...about, state: what },
          "could not store the run's final state; it will be reclaimed when its lease expires",
        );
        return false;
      }
      deps.logger.warn({ ...cause, ...about, state: what, retryInMs: delays[i] }, "storing the run's final state failed; retrying");
      await new Promise((resolve) => setTimeout(resolve, delays[i]));
    }
  }
}
