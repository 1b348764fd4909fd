/**
 * The worker: claims due runs up to its free slots (FOR UPDATE SKIP LOCKED, database clock), executes them,
 * keeps their leases alive with heartbeats, reacts to cancels at once (LISTEN/NOTIFY), and stops gracefully.
 * Expired leases of dead workers are recovered on every poll, whether or not this worker has a free slot.
 *
 * Claiming ahead: with a backlog, one claim also takes up to `prefetch` runs beyond the free slots into a local queue, so
 * a slot that frees starts the next run at once and one commit claims many runs. The queue holds about
 * PREFETCH_WINDOW_MS of work (from the recent runs' durations; nothing until the first run finished); a queued run that
 * waited PREFETCH_MAX_WAIT_MS is handed back for any worker. Queued runs get heartbeats, cancels and the graceful stop's
 * hand-back like running ones.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { WorkerConfig } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { Exec } from '../db/sql.ts';
import { databaseUnavailableReason } from '../db/unavailable.ts';
import { type EngineDeps, type RunExecution, executeRun } from '../flows/engine.ts';
import { type CompletionBatcher, completionBatcher } from '../flows/completions.ts';
import { backoffDelayMs } from '../flows/policy.ts';
import { type ClaimedRun, heartbeat, msUntilNextDue, recoverExpiredLeases, releaseRuns } from '../flows/store/leases.ts';
import {
  type Backlog,
  type ClaimCursor,
  START_CURSOR,
  claimFair,
  claimGated,
  skipKey,
  wakeConcurrencyWaiters,
} from '../flows/store/claim.ts';
import { type FlowShaping, isGated } from '../flows/registry.ts';
import { CANCEL_CHANNEL, RUNS_CHANNEL } from '../flows/store/runs.ts';
import type { Logger } from '../logger.ts';

/** A run whose worker died this many times is failed instead of being reclaimed again. */
export const DEFAULT_MAX_LOST_LEASES = 3;
/** The local queue holds about this much work (ms of flow code at full concurrency). */
export const PREFETCH_WINDOW_MS = 100;
/** A queued run not started after this long is handed back (its estimate was wrong, or runs got slower). */
export const PREFETCH_MAX_WAIT_MS = 1000;
/**
 * Claims in a row that found nothing but stopped at their limit of tenants (flows/store/claim.ts WALK_MAX_TENANTS) go on
 * at once from where they stopped, this many times; then the worker waits as after an empty poll.
 */
const MAX_WALKS_WITHOUT_RUNS = 8;
/**
 * A dispatch announced (NOTIFY) is claimed at once even when this worker's local queue is full, as long as the queue
 * holds less than this many times its usual size (concurrency + prefetch target): a light shop's new run is then
 * started at the next free slot, not after the queue of another shop's backlog ran down.
 */
const ANNOUNCED_QUEUE_FACTOR = 3;

interface Queued {
  run: ClaimedRun;
  token: string;
  claimedAt: number;
}

export interface WorkerOptions {
  db: Database;
  engine: Omit<EngineDeps, 'exec'>;
  config: WorkerConfig;
  /** Overrides config.concurrency (the CLI flag). */
  concurrency?: number;
  /** Overrides config.prefetch (the CLI flag). */
  prefetch?: number;
  logger: Logger;
  workerId?: string;
  maxLostLeases?: number;
  /** Default: min(leaseDurationMs / 3, 1000). */
  heartbeatIntervalMs?: number;
  /**
   * The claim before fairness (one FIFO over every tenant), for bench:tenancy's comparison only. Default: the
   * MERCATO_BENCH_FIFO_CLAIM environment variable set to 1.
   */
  fifoClaim?: boolean;
  /** Called before each wait of the poll loop with its delay and why (no due run, or every slot busy). */
  onPollWait?: (delayMs: number, reason: 'empty' | 'busy' | 'error') => void;
}

/** The wait after the n-th empty poll in a row: pollIntervalMs × coefficient^(n − 1), capped at pollMaxIntervalMs. */
export function emptyPollDelayMs(
  config: Pick<WorkerConfig, 'pollIntervalMs' | 'pollBackoffCoefficient' | 'pollMaxIntervalMs'>,
  emptyPolls: number,
): number {
  return backoffDelayMs(config.pollIntervalMs, config.pollBackoffCoefficient, emptyPolls, config.pollMaxIntervalMs);
}

export interface WorkerStats {
  claimed: number;
  /** Runs claimed ahead and handed back unstarted (they waited PREFETCH_MAX_WAIT_MS). */
  handedBack: number;
  completedExecutions: number;
  polls: number;
  emptyPolls: number;
  wakeups: number;
}

export class Worker {
  readonly id: string;
  readonly concurrency: number;
  readonly stats: WorkerStats = { claimed: 0, handedBack: 0, completedExecutions: 0, polls: 0, emptyPolls: 0, wakeups: 0 };
  readonly prefetch: number;
  private readonly active = new Map<string, RunExecution>();
  /** Runs claimed ahead, oldest first, waiting for a slot (claiming ahead, above). */
  private readonly queue = new Map<string, Queued>();
  /** Moving average of how long a run's flow code held its slot, in ms; null until a run finished. */
  private bodyMsAverage: number | null = null;
  /**
   * The recent runs' longest body duration, decaying slowly (1 % per run): what a claim beyond the worker's needs takes
   * its measure from, so that a few short runs among long ones do not make the long ones look short.
   */
  private bodyMsHigh: number | null = null;
  /** Executions whose flow code is still running: what the slots count (an outcome being written does not hold one). */
  private running = 0;
  private readonly exec: Exec;
  private readonly batcher: CompletionBatcher | undefined;
  private readonly engine: EngineDeps;
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private pendingWake = false;
  /** The database outage this worker is in: when its first failure was, and how many failures since (databaseFailed). */
  private outage: { since: number; failures: number } | undefined;
  /** A dispatch was announced (NOTIFY) since the last pass: claim even if the local queue is above half its target. */
  private announced = false;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private lastHeartbeatOk = Date.now();
  private unlisten: Array<() => Promise<void>> = [];
  private claimSeq = 0;
  private lastRecovery = 0;
  /** Where the next claim's walk over the tenants starts (where the last one ended), ungated and gated runs apart. */
  private cursor: ClaimCursor = START_CURSOR;
  private gatedCursor: ClaimCursor = START_CURSOR;
  private readonly fifo: boolean;
  /** True when some flow has a keyed concurrency or a rate limit (the gated claim runs only then). */
  private readonly hasGated: boolean;

  constructor(private readonly options: WorkerOptions) {
    this.id = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.concurrency = options.concurrency ?? options.config.concurrency;
    this.prefetch = options.prefetch ?? options.config.prefetch ?? 0;
    this.fifo = options.fifoClaim ?? process.env.MERCATO_BENCH_FIFO_CLAIM === '1';
    this.hasGated = [...options.engine.registry.list(), ...internalFlows(options.engine.registry)].some((f) => isGated(f.shaping));
    this.exec = options.db.query;
    // the runs completing in the same turn share one statement and one commit; so do the starts of runs claimed ahead
    this.batcher = options.engine.complete ? undefined : completionBatcher(this.exec);
    this.engine = { ...options.engine, exec: this.exec, complete: options.engine.complete ?? this.batcher };
  }

  get activeCount(): number {
    return this.active.size;
  }

  /** Runs claimed ahead and waiting for a slot. */
  get queuedCount(): number {
    return this.queue.size;
  }

  /**
   * How many runs to hold ahead of the slots now: about PREFETCH_WINDOW_MS of work at the moving average of the runs'
   * durations, at most `prefetch`.
   */
  private prefetchTarget(): number {
    if (this.prefetch <= 0 || this.bodyMsAverage === null) return 0;
    const perWindow = Math.floor((this.concurrency * PREFETCH_WINDOW_MS) / Math.max(this.bodyMsAverage, 0.01));
    return Math.min(this.prefetch, perWindow);
  }

  /** True from start() until stop() is called: the claim loop is running (readiness, docs/observability.md). */
  get loopRunning(): boolean {
    return this.loopDone !== undefined && !this.stopping;
  }

  async start(): Promise<void> {
    if (this.loopDone) return;
    const { db } = this.options;
    this.unlisten.push(
      await db.listen(
        RUNS_CHANNEL,
        () => {
          this.stats.wakeups++;
          this.announced = true;
          this.signal();
        },
        // dispatches notified while the LISTEN connection was away were not heard: poll once now
        { onRestored: () => this.signal() },
      ),
    );
    this.unlisten.push(
      await db.listen(CANCEL_CHANNEL, (runId) => {
        this.queue.delete(runId); // canceled while queued: the database already says so
        this.active.get(runId)?.interrupt('canceled');
      }),
    );
    const hb = this.options.heartbeatIntervalMs ?? Math.min(this.options.config.leaseDurationMs / 3, 1000);
    this.heartbeatTimer = setInterval(() => void this.beat(), hb);
    this.heartbeatTimer.unref?.();
    this.loopDone = this.loop();
  }

  /**
   * Stop claiming; let active runs finish within `graceMs` (default leaseDurationMs); hand the rest back for another worker.
   * Later calls return the first call's outcome (the operations server waits on it before it closes).
   */
  stop(options: { graceMs?: number } = {}): Promise<{ finished: number; released: number }> {
    if (!this.loopDone) return Promise.resolve({ finished: 0, released: 0 });
    return (this.stopped ??= this.stopOnce(options));
  }

  private stopped: Promise<{ finished: number; released: number }> | undefined;

  private async stopOnce(options: { graceMs?: number }): Promise<{ finished: number; released: number }> {
    this.stopping = true;
    this.signal();
    await this.loopDone;
    // runs claimed ahead are not started any more: handed back at once
    const queued = new Map([...this.queue.values()].map((q) => [q.run.id, q.token]));
    this.queue.clear();
    const before = this.active.size;
    const deadline = options.graceMs ?? this.options.config.leaseDurationMs;
    await Promise.race([Promise.all([...this.active.values()].map((r) => r.done)), sleep(deadline)]);
    const leftovers = new Map([...this.active.values()].map((r) => [r.runId, r.leaseToken]));
    for (const r of this.active.values()) r.interrupt('worker-stopping');
    let released = 0;
    if (leftovers.size > 0) {
      released = (await releaseRuns(this.exec, leftovers).catch(() => [])).length;
      this.options.logger.warn({ workerId: this.id, released }, 'worker stopped before some runs finished; they were handed back');
    }
    if (queued.size > 0) released += (await releaseRuns(this.exec, queued).catch(() => [])).length;
    clearInterval(this.heartbeatTimer);
    for (const fn of this.unlisten) await fn().catch(() => {});
    this.unlisten = [];
    return { finished: before - leftovers.size, released };
  }

  private signal() {
    this.pendingWake = true;
    this.wake?.();
  }

  private async loop(): Promise<void> {
    const { config, logger } = this.options;
    let emptyPolls = 0;
    let walksWithoutRuns = 0;
    while (!this.stopping) {
      let delay: number;
      let reason: 'empty' | 'busy' | 'error' = 'busy';
      try {
        this.pendingWake = false;
        const target = this.prefetchTarget();
        // claim when a slot is free with nothing queued for it, when the queue ran down to half its target, or when a
        // dispatch was announced: then up to `concurrency` runs beyond the target, so that a light shop's new run is
        // claimed now (and started at the next free slot: the queue starts the least served shop first), not after the
        // queue ran down, and so that the claim spans many shops, not the one or two a nearly full queue wants
        const announced = this.announced;
        this.announced = false;
        // what this worker needs for its own slots and queue; an announced dispatch adds up to `concurrency` more (each
        // tenant's share only: the claim's second pass never fills them from a backlog), even with a full queue, up to
        // ANNOUNCED_QUEUE_FACTOR times the usual queue
        const need = this.concurrency + target - this.running - this.queue.size;
        const room = ANNOUNCED_QUEUE_FACTOR * (this.concurrency + target) - this.running - this.queue.size;
        const want = announced && target > 0 ? Math.max(need, 0) + Math.min(this.concurrency, room) : need;
        const claimNow = want > 0 && (this.running + this.queue.size < this.concurrency || this.queue.size <= target / 2 || announced);
        if (!claimNow) {
          // an announced dispatch not claimed yet (the queue is at its bound) is claimed when a slot frees room
          if (announced) this.announced = true;
          await this.recover();
          this.databaseBack();
          delay = config.pollIntervalMs;
        } else {
          const token = `${this.id}/${++this.claimSeq}`;
          const { runs: claimed, more } = await this.claim(token, want, Math.max(need, 0));
          this.databaseBack();
          this.stats.polls++;
          const claimedAt = performance.now();
          // the runs whose start the claim recorded start now; those claimed ahead wait in the local queue
          for (const run of claimed) {
            if (run.claimedAhead) this.enqueue(run, token, claimedAt);
            else this.launch(run, token);
          }
          this.startQueued();
          // after the claim, so that a woken worker starts its run first
          await this.recover();
          if (claimed.length > 0) {
            emptyPolls = 0;
            walksWithoutRuns = 0;
            this.stats.claimed += claimed.length;
            continue; // there may be more due runs for the remaining slots
          }
          // the walk stopped at its limit of tenants before it went round them all: the next one goes on from there
          if (more && ++walksWithoutRuns <= MAX_WALKS_WITHOUT_RUNS) continue;
          walksWithoutRuns = 0;
          this.stats.emptyPolls++;
          emptyPolls++;
          reason = 'empty';
          delay = emptyPollDelayMs(config, emptyPolls);
          const next = await msUntilNextDue(this.exec);
          if (next.due !== null) delay = Math.min(delay, Math.max(next.due, 5));
          // a lease about to expire (its worker may be dead): look again just after it, when recover() may run
          if (next.leaseExpiry !== null) {
            const recoveryAllowedIn = this.lastRecovery + config.pollIntervalMs - Date.now();
            delay = Math.min(delay, Math.max(next.leaseExpiry + 5, recoveryAllowedIn, 5));
          }
        }
      } catch (error) {
        if (!this.databaseFailed(error, 'poll')) logger.error({ err: error, workerId: this.id }, 'worker poll failed; retrying');
        delay = config.pollIntervalMs;
        reason = 'error';
      }
      if (this.pendingWake) {
        emptyPolls = 0;
        continue;
      }
      this.options.onPollWait?.(delay, reason);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, delay);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.wake = done;
      });
      this.wake = undefined;
      if (this.pendingWake) emptyPolls = 0;
    }
  }

  /**
   * One claim of up to `want` runs: the gated runs first (keyed concurrency, rate limits; for the free slots, or one at
   * the head of the local queue when every slot is busy), then the others, fair to every tenant (flows/store/claim.ts).
   */
  private async claim(token: string, want: number, need = want): Promise<{ runs: ClaimedRun[]; more: boolean }> {
    const { config } = this.options;
    let gated: ClaimedRun[] = [];
    let more = false;
    const free = Math.max(0, this.concurrency - this.running - this.queue.size);
    if (this.hasGated && !this.fifo) {
      const registry = this.options.engine.registry;
      // with every slot busy, one gated run is still claimed, at the head of the local queue: a limited flow's run is
      // never held up behind this worker's runs claimed ahead
      const result = await claimGated(
        this.options.db,
        token,
        Math.max(free, 1),
        config.leaseDurationMs,
        this.gatedCursor,
        (flow) => shapingOf(registry, flow),
        free,
      );
      this.gatedCursor = result.cursor;
      more = result.more;
      gated = result.runs;
      for (const run of gated) if (run.claimedAhead) run.headOfQueue = true;
      for (const a of result.setAside) {
        if (!a.changed) continue;
        this.options.engine.events?.emit('run.waiting', {
          runId: a.runId,
          flow: a.flow,
          shop: a.shop,
          app: a.appHandle,
          reason: a.reason,
          until: a.until,
          heldBy: a.heldBy,
          key: a.key,
        });
      }
    }
    const rest = want - gated.length;
    if (rest <= 0) return { runs: gated, more };
    const startsNow = Math.max(0, free - gated.length);
    // a claim beyond its needs (for an announced dispatch) fills up to what the worker needs, or up to all it wants when
    // even then its slots and queue hold less than PREFETCH_WINDOW_MS of work at the recent longest run (short runs: the
    // claim is as full as one made for the queue, and the next one comes later)
    const quick =
      this.bodyMsHigh !== null && ((this.running + this.queue.size + want) * this.bodyMsHigh) / this.concurrency <= PREFETCH_WINDOW_MS;
    const fill = Math.max(0, (quick ? want : need) - gated.length);
    // claiming beyond its needs (for an announced dispatch), the worker takes no share from the tenants it has runs of
    // in its queue already: the new dispatch's tenant is served, and a backlog does not grow the queue
    const skip = want > need && this.queue.size > 0 ? [...new Set(Array.from(this.queue.values(), (q) => tenantOf(q.run)))] : [];
    const fair = await claimFair(this.exec, token, rest, config.leaseDurationMs, this.cursor, {
      startsNow,
      fifo: this.fifo,
      fill,
      skip,
      hint: this.beyondShare,
    });
    this.cursor = fair.cursor;
    // the tenants that gave more than their share (a backlog) read their range once in the next claim; a claim that
    // skipped tenants says nothing about them, so it keeps the hint
    if (skip.length === 0) this.beyondShare = fair.beyond;
    return { runs: gated.length === 0 ? fair.runs : [...gated, ...fair.runs], more: more || fair.more };
  }

  /**
   * Starts queued runs while a slot is free: of the queued runs, the oldest of the tenant that has the fewest runs
   * executing in this worker, so a tenant whose run was claimed behind another's backlog starts at the next free slot.
   */
  private startQueued() {
    while (this.queue.size > 0 && this.running < this.concurrency && !this.stopping) {
      const pick = this.nextQueued();
      if (!pick) return;
      this.queue.delete(pick.run.id);
      this.batcher?.mark(pick.run.id, pick.token);
      this.launch(pick.run, pick.token);
    }
  }

  /** Runs executing in this worker per tenant (what startQueued balances). */
  private readonly executing = new Map<string, number>();
  /** The tenants that gave more than their share in the last claim (claimFair's `beyond`), hinted to the next one. */
  private beyondShare: Backlog[] = [];
  /**
   * The local queue's run ids per tenant, oldest first (an id whose run left the queue, canceled or handed back, is
   * dropped when met), and how many gated runs wait at its head: what nextQueued picks from without walking the queue.
   */
  private readonly tenantQueues = new Map<string, string[]>();
  private headOfQueue = 0;

  private enqueue(run: ClaimedRun, token: string, claimedAt: number) {
    this.queue.set(run.id, { run, token, claimedAt });
    if (run.headOfQueue) this.headOfQueue++;
    const tenant = tenantOf(run);
    const ids = this.tenantQueues.get(tenant);
    if (ids) ids.push(run.id);
    else this.tenantQueues.set(tenant, [run.id]);
  }

  /** The queued run to start next: a gated one first, else the oldest of the tenant with the fewest runs executing. */
  private nextQueued(): Queued | undefined {
    if (this.headOfQueue > 0) {
      for (const q of this.queue.values()) {
        if (!q.run.headOfQueue) continue;
        this.headOfQueue--;
        q.run.headOfQueue = false;
        return q;
      }
      this.headOfQueue = 0;
    }
    let best: string[] | undefined;
    let bestLoad = Number.POSITIVE_INFINITY;
    for (const [tenant, ids] of this.tenantQueues) {
      while (ids.length > 0 && !this.queue.has(ids[0])) ids.shift();
      if (ids.length === 0) {
        this.tenantQueues.delete(tenant);
        continue;
      }
      const load = this.executing.get(tenant) ?? 0;
      if (load < bestLoad) {
        best = ids;
        bestLoad = load;
        if (load === 0) break;
      }
    }
    const id = best?.shift();
    return id === undefined ? undefined : this.queue.get(id);
  }

  private launch(run: ClaimedRun, token: string) {
    const execution = executeRun(this.engine, run, token);
    this.active.set(run.id, execution);
    this.running++;
    const tenant = tenantOf(run);
    this.executing.set(tenant, (this.executing.get(tenant) ?? 0) + 1);
    const startedAt = performance.now();
    void execution.bodyDone.then(() => {
      this.running--;
      this.untrack(this.executing, tenant);
      const ms = performance.now() - startedAt;
      this.bodyMsAverage = this.bodyMsAverage === null ? ms : this.bodyMsAverage * 0.9 + ms * 0.1;
      this.bodyMsHigh = this.bodyMsHigh === null || ms > this.bodyMsHigh ? ms : this.bodyMsHigh * 0.99 + ms * 0.01;
      this.startQueued();
      this.signal(); // a slot is free, or the queue ran down
    });
    void execution.done.finally(() => {
      if (this.active.get(run.id) === execution) this.active.delete(run.id);
      this.stats.completedExecutions++;
      // its slot of a keyed concurrency is free (the outcome is stored): a run waiting for one may go now
      if (run.concurrencyKey) void this.wakeWaiters(run);
    });
  }

  private untrack(map: Map<string, number>, tenant: string) {
    const n = (map.get(tenant) ?? 1) - 1;
    if (n <= 0) map.delete(tenant);
    else map.set(tenant, n);
  }

  private async wakeWaiters(run: ClaimedRun) {
    const limit = shapingOf(this.options.engine.registry, run.flowName)?.concurrency?.limit ?? 1;
    try {
      const woken = await wakeConcurrencyWaiters(this.exec, run.concurrencyKey!, limit);
      if (woken.length > 0) {
        this.signal();
        await this.options.db.notify(RUNS_CHANNEL, '').catch(() => {});
      }
    } catch (error) {
      // the waiters look again by themselves (CONCURRENCY_RECHECK_MS)
      if (!this.databaseFailed(error, 'wake'))
        this.options.logger.warn({ err: error, workerId: this.id }, 'could not wake the runs waiting for a concurrency slot');
    }
  }

  /** Queued runs that waited PREFETCH_MAX_WAIT_MS go back to pending (same attempt) for any worker. */
  private async handBackStale() {
    const now = performance.now();
    const stale = new Map<string, string>();
    for (const q of this.queue.values()) if (now - q.claimedAt >= PREFETCH_MAX_WAIT_MS) stale.set(q.run.id, q.token);
    if (stale.size === 0) return;
    for (const id of stale.keys()) this.queue.delete(id);
    // the runs are slower than the average said (or a slot is stuck): claim nothing ahead until fast runs bring it down
    this.bodyMsAverage = Math.max(this.bodyMsAverage ?? 0, this.concurrency * PREFETCH_MAX_WAIT_MS);
    this.bodyMsHigh = Math.max(this.bodyMsHigh ?? 0, this.bodyMsAverage);
    try {
      const released = await releaseRuns(this.exec, stale);
      this.stats.handedBack += released.length;
    } catch (error) {
      // their leases run out and recovery hands them back instead
      if (!this.databaseFailed(error, 'hand back'))
        this.options.logger.warn({ err: error, workerId: this.id }, 'could not hand back runs claimed ahead');
    }
  }

  /** Expired leases are recovered at most once per poll interval by each worker. */
  private async recover() {
    const now = Date.now();
    if (now - this.lastRecovery < this.options.config.pollIntervalMs) return;
    this.lastRecovery = now;
    const recovered = await recoverExpiredLeases(this.exec, this.options.maxLostLeases ?? DEFAULT_MAX_LOST_LEASES);
    for (const r of recovered) {
      this.options.logger.warn(
        { runId: r.id, flow: r.flow_name, status: r.status, workerId: this.id },
        r.status === 'failed' ? 'run failed: its workers kept dying' : 'reclaimed a run whose lease expired',
      );
      this.options.engine.events?.emit('lease.recovered', {
        runId: r.id,
        flow: r.flow_name,
        status: r.status === 'failed' ? 'failed' : 'pending',
      });
    }
  }

  /**
   * A database call of the worker failed. When the database is away (db/unavailable.ts), an outage is logged once, at
   * its start (`warn`, the reason, no stack), and its failures are counted; `databaseBack` logs its end. Returns false
   * for any other error, which the caller logs as it comes.
   */
  private databaseFailed(error: unknown, during: string): boolean {
    const reason = databaseUnavailableReason(error);
    if (reason === undefined) return false;
    if (this.outage) {
      this.outage.failures++;
      return true;
    }
    this.outage = { since: Date.now(), failures: 1 };
    this.options.logger.warn({ workerId: this.id, reason, during }, 'database unavailable: the worker keeps its runs and retries');
    return true;
  }

  /** A database call succeeded: an outage in progress ends (one `info` line with how long and how many failures). */
  private databaseBack(): void {
    if (!this.outage) return;
    const { since, failures } = this.outage;
    this.outage = undefined;
    this.options.logger.info({ workerId: this.id, failures, downMs: Date.now() - since }, 'database available again: the worker goes on');
  }

  private async beat() {
    await this.handBackStale();
    if (this.active.size === 0 && this.queue.size === 0) {
      this.lastHeartbeatOk = Date.now();
      return;
    }
    const leases = new Map([...this.active.values()].map((r) => [r.runId, { leaseToken: r.leaseToken, elapsedMs: r.elapsedMs() }]));
    for (const q of this.queue.values()) leases.set(q.run.id, { leaseToken: q.token, elapsedMs: q.run.attemptElapsedMs ?? 0 });
    try {
      const owned = await heartbeat(this.exec, leases, this.options.config.leaseDurationMs);
      this.lastHeartbeatOk = Date.now();
      this.databaseBack();
      for (const [id] of leases) {
        if (owned.has(id)) continue;
        this.queue.delete(id);
        this.active.get(id)?.interrupt('canceled');
      }
    } catch (error) {
      if (!this.databaseFailed(error, 'heartbeat')) this.options.logger.warn({ err: error, workerId: this.id }, 'heartbeat failed');
      if (Date.now() - this.lastHeartbeatOk > this.options.config.leaseDurationMs) {
        this.queue.clear(); // their leases ran out: another worker may have them
        for (const r of this.active.values()) r.interrupt('lease-lost');
      }
    }
  }
}

/** A run's tenant as a map key. */
function tenantOf(run: Pick<ClaimedRun, 'appHandle' | 'shop'>): string {
  return skipKey(run.appHandle, run.shop);
}

/** The shaping of a flow or an internal flow (webhook handlers); null when this worker does not know the flow. */
function shapingOf(registry: EngineDeps['registry'], flow: string): FlowShaping | null {
  return registry.get(flow)?.shaping ?? null;
}

function internalFlows(registry: EngineDeps['registry']) {
  return registry.internal();
}

function sleep(ms: number) {
  return new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.());
}
