/**
 * The worker: claims due runs up to its free slots (FOR UPDATE SKIP LOCKED, database clock), executes them,
 * keeps their leases alive with heartbeats, reacts to cancels at once (LISTEN/NOTIFY), and stops gracefully.
 * Expired leases of dead workers are recovered on every poll, whether or not this worker has a free slot.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { WorkerConfig } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { Exec } from '../db/sql.ts';
import { type EngineDeps, type RunExecution, executeRun } from '../flows/engine.ts';
import { completionBatcher } from '../flows/completions.ts';
import { backoffDelayMs } from '../flows/policy.ts';
import { claimRuns, heartbeat, msUntilNextDue, recoverExpiredLeases, releaseRuns } from '../flows/store/leases.ts';
import { CANCEL_CHANNEL, RUNS_CHANNEL } from '../flows/store/runs.ts';
import type { Logger } from '../logger.ts';

/** A run whose worker died this many times is failed instead of being reclaimed again. */
export const DEFAULT_MAX_LOST_LEASES = 3;

export interface WorkerOptions {
  db: Database;
  engine: Omit<EngineDeps, 'exec'>;
  config: WorkerConfig;
  /** Overrides config.concurrency (the CLI flag). */
  concurrency?: number;
  logger: Logger;
  workerId?: string;
  maxLostLeases?: number;
  /** Default: min(leaseDurationMs / 3, 1000). */
  heartbeatIntervalMs?: number;
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
  completedExecutions: number;
  polls: number;
  emptyPolls: number;
  wakeups: number;
}

export class Worker {
  readonly id: string;
  readonly concurrency: number;
  readonly stats: WorkerStats = { claimed: 0, completedExecutions: 0, polls: 0, emptyPolls: 0, wakeups: 0 };
  private readonly active = new Map<string, RunExecution>();
  /** Executions whose flow code is still running: what the slots count (an outcome being written does not hold one). */
  private running = 0;
  private readonly exec: Exec;
  private readonly engine: EngineDeps;
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private pendingWake = false;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private lastHeartbeatOk = Date.now();
  private unlisten: Array<() => Promise<void>> = [];
  private claimSeq = 0;
  private lastRecovery = 0;

  constructor(private readonly options: WorkerOptions) {
    this.id = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.concurrency = options.concurrency ?? options.config.concurrency;
    this.exec = options.db.query;
    // the runs completing in the same turn share one statement and one commit
    this.engine = { ...options.engine, exec: this.exec, complete: options.engine.complete ?? completionBatcher(this.exec) };
  }

  get activeCount(): number {
    return this.active.size;
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
          this.signal();
        },
        // dispatches notified while the LISTEN connection was away were not heard: poll once now
        { onRestored: () => this.signal() },
      ),
    );
    this.unlisten.push(await db.listen(CANCEL_CHANNEL, (runId) => this.active.get(runId)?.interrupt('canceled')));
    const hb = this.options.heartbeatIntervalMs ?? Math.min(this.options.config.leaseDurationMs / 3, 1000);
    this.heartbeatTimer = setInterval(() => void this.beat(), hb);
    this.heartbeatTimer.unref?.();
    this.loopDone = this.loop();
  }

  /** Stop claiming; let active runs finish within `graceMs` (default leaseDurationMs); hand the rest back for another worker. */
  async stop(options: { graceMs?: number } = {}): Promise<{ finished: number; released: number }> {
    if (!this.loopDone) return { finished: 0, released: 0 };
    this.stopping = true;
    this.signal();
    await this.loopDone;
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
    while (!this.stopping) {
      let delay: number;
      let reason: 'empty' | 'busy' | 'error' = 'busy';
      try {
        this.pendingWake = false;
        const free = this.concurrency - this.running;
        if (free <= 0) {
          await this.recover();
          delay = config.pollIntervalMs;
        } else {
          const token = `${this.id}/${++this.claimSeq}`;
          const claimed = await claimRuns(this.exec, token, free, config.leaseDurationMs);
          this.stats.polls++;
          for (const run of claimed) this.launch(run, token);
          // after the claim, so that a woken worker starts its run first
          await this.recover();
          if (claimed.length > 0) {
            emptyPolls = 0;
            this.stats.claimed += claimed.length;
            continue; // there may be more due runs for the remaining slots
          }
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
        logger.error({ err: error, workerId: this.id }, 'worker poll failed; retrying');
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

  private launch(run: Parameters<typeof executeRun>[1], token: string) {
    const execution = executeRun(this.engine, run, token);
    this.active.set(run.id, execution);
    this.running++;
    void execution.bodyDone.then(() => {
      this.running--;
      this.signal(); // a slot is free
    });
    void execution.done.finally(() => {
      if (this.active.get(run.id) === execution) this.active.delete(run.id);
      this.stats.completedExecutions++;
    });
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

  private async beat() {
    if (this.active.size === 0) {
      this.lastHeartbeatOk = Date.now();
      return;
    }
    const leases = new Map([...this.active.values()].map((r) => [r.runId, { leaseToken: r.leaseToken, elapsedMs: r.elapsedMs() }]));
    try {
      const owned = await heartbeat(this.exec, leases, this.options.config.leaseDurationMs);
      this.lastHeartbeatOk = Date.now();
      for (const [id] of leases) if (!owned.has(id)) this.active.get(id)?.interrupt('canceled');
    } catch (error) {
      this.options.logger.warn({ err: error, workerId: this.id }, 'heartbeat failed');
      if (Date.now() - this.lastHeartbeatOk > this.options.config.leaseDurationMs) {
        for (const r of this.active.values()) r.interrupt('lease-lost');
      }
    }
  }
}

function sleep(ms: number) {
  return new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.());
}
