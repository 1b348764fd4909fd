/**
 * Batched completions: the runs of one worker that complete in the same turn of the event loop (typically the runs of
 * one claim, whose last steps resolve together) are stored by one statement and one commit (`completeRuns`), each
 * fenced on its own lease. A completion waits for nothing but the end of the turn (setImmediate), so latency is kept.
 * Under load, at most MAX_COMPLETIONS_IN_FLIGHT statements are in flight: the completions that come meanwhile wait for
 * one to commit and go together, so a busy worker commits many runs per WAL flush instead of one statement per turn.
 */
import type { Exec } from '../db/sql.ts';
import { type Completion, type StartMark, completeRuns } from './store/leases.ts';

/** Completion statements of one worker in flight at once; more completions queue for the next one. */
export const MAX_COMPLETIONS_IN_FLIGHT = 2;
/** At most this many completions share one statement. */
export const MAX_COMPLETION_BATCH = 200;
/**
 * A batch stops growing past this many characters of outputs and step results (one statement carries them all as one
 * parameter); a larger completion goes alone.
 */
export const MAX_COMPLETION_BATCH_CHARS = 1_000_000;

const sizeOf = (c: Completion) => c.outputJson.length + (c.lastStep?.resultJson.length ?? 0);

/** How many of the queued completions the next statement takes: at least one, within both limits. */
export function nextBatchSize(queue: ReadonlyArray<Completion>): number {
  let chars = 0;
  let n = 0;
  while (n < queue.length && n < MAX_COMPLETION_BATCH) {
    chars += sizeOf(queue[n]);
    if (n > 0 && chars > MAX_COMPLETION_BATCH_CHARS) break;
    n++;
  }
  return n;
}

/**
 * A start is written on its own only for a run still executing this long after it started: a shorter run's start is
 * written by its completion (one row version per run, not two); a longer one reads as started within this time.
 */
export const START_MARK_DELAY_MS = 200;

/**
 * `complete(c)` resolves true when the completion was stored, false when the run was no longer this lease's.
 * `complete.mark(runId, leaseToken)` records that the worker started a run it had claimed ahead: its completion stores
 * the real start, or, when it still runs START_MARK_DELAY_MS later, the next statement does (a statement of its own if
 * no completion is due), so the run's `started_at` is its real start and it no longer reads as `claimed`.
 */
export interface CompletionBatcher {
  (completion: Completion): Promise<boolean>;
  mark(runId: string, leaseToken: string): void;
}

export function completionBatcher(exec: Exec): CompletionBatcher {
  type Waiting = { completion: Completion; resolve: (stored: boolean) => void; reject: (error: unknown) => void };
  const queue: Waiting[] = [];
  /** Starts not stored yet: run id → lease and when it started (performance clock). */
  const marks = new Map<string, { leaseToken: string; at: number }>();
  let scheduled = false;
  let inFlight = 0;

  async function flush() {
    scheduled = false;
    const due = performance.now() - START_MARK_DELAY_MS;
    const marksDue = () => [...marks.values()].some((m) => m.at <= due);
    if (queue.length === 0 && !marksDue()) return;
    if (inFlight >= MAX_COMPLETIONS_IN_FLIGHT) return; // the end of a statement in flight schedules the next
    const batch = queue.splice(0, nextBatchSize(queue.map((w) => w.completion)));
    if (queue.length > 0) schedule();
    const now = performance.now();
    const completions = batch.map((w) => {
      const m = marks.get(w.completion.runId);
      if (!m) return w.completion;
      marks.delete(w.completion.runId);
      return { ...w.completion, startedAgoMs: now - m.at };
    });
    const started: StartMark[] = [];
    for (const [runId, m] of marks) {
      if (m.at > due) continue;
      started.push({ runId, leaseToken: m.leaseToken, agoMs: now - m.at });
      marks.delete(runId);
    }
    inFlight++;
    try {
      const stored = await completeRuns(exec, completions, started);
      for (const w of batch) w.resolve(stored.has(w.completion.runId));
    } catch (error) {
      // the starts go with the next statement (a completion of this batch retried by its final write gets the
      // fallback: started_at at its completion, if its start was not recorded)
      for (const m of started) if (!marks.has(m.runId)) marks.set(m.runId, { leaseToken: m.leaseToken, at: now - m.agoMs });
      for (const w of batch) w.reject(error);
    } finally {
      inFlight--;
      if (queue.length > 0) schedule();
    }
  }
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => void flush());
  }

  const complete = ((completion: Completion) =>
    new Promise<boolean>((resolve, reject) => {
      queue.push({ completion, resolve, reject });
      schedule();
    })) as CompletionBatcher;
  let markTimer: NodeJS.Timeout | undefined;
  const checkMarks = () => {
    markTimer = undefined;
    if (marks.size === 0) return;
    schedule();
    markTimer = setTimeout(checkMarks, START_MARK_DELAY_MS);
    markTimer.unref?.();
  };
  complete.mark = (runId, leaseToken) => {
    marks.set(runId, { leaseToken, at: performance.now() });
    if (!markTimer) {
      markTimer = setTimeout(checkMarks, START_MARK_DELAY_MS);
      markTimer.unref?.();
    }
  };
  return complete;
}
