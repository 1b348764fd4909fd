/**
 * CPU time of processes from /proc (Linux): utime + stime of /proc/<pid>/stat, in clock ticks (`getconf CLK_TCK`).
 * Only live processes are seen: a process that exited between two readings loses what it spent since the first one.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second of utime/stime (`getconf CLK_TCK`, 100 on Linux in practice). */
export const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime, in ticks */
  ticks: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) is in parentheses and may contain spaces: the fields after the last ')' are fixed
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15
    return { pid, ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) };
  } catch {
    return undefined; // gone meanwhile
  }
}

/** CPU ms (utime + stime) of one live process; throws when it is gone. */
export function processCpuMs(pid: number): number {
  const stat = readStat(pid);
  if (!stat) throw new Error(`process ${pid} is gone`);
  return ticksToMs(stat.ticks);
}

function allStats(): ProcStat[] {
  const stats: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = readStat(Number(name));
    if (s) stats.push(s);
  }
  return stats;
}

const ticksToMs = (ticks: number) => (ticks * 1000) / CLK_TCK;

/** CPU ms of each of the given processes and all their live descendants (a worker and, say, an esbuild service it runs). */
export function treeCpuMs(rootPids: readonly number[]): number {
  const stats = allStats();
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) {
    const list = children.get(s.ppid);
    if (list) list.push(s);
    else children.set(s.ppid, [s]);
  }
  let ticks = 0;
  const seen = new Set<number>();
  const visit = (pid: number) => {
    if (seen.has(pid)) return;
    seen.add(pid);
    const own = stats.find((s) => s.pid === pid);
    if (own) ticks += own.ticks;
    for (const child of children.get(pid) ?? []) visit(child.pid);
  };
  for (const pid of rootPids) visit(pid);
  return ticksToMs(ticks);
}

export interface PostgresCpu {
  /** pid → CPU ms of the client backends connected to the database (as a user other than the excluded one) */
  backends: Map<number, number>;
  /** CPU ms of every other process of the cluster: postmaster, checkpointer, WAL writer, autovacuum, other databases */
  otherMs: number;
}

/** The postmaster's pid, from the first line of `postmaster.pid` in the data directory. */
export function postmasterPid(dataDir: string): number {
  return Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
}

/**
 * CPU of the cluster's processes, split into the client backends of `database` (process title
 * `postgres: <user> <database> <host>(<port>) <state>`, user ≠ `excludeUser`) and everything else.
 */
export function postgresCpu(postmaster: number, database: string, excludeUser: string): PostgresCpu {
  const backends = new Map<number, number>();
  let otherTicks = 0;
  for (const s of allStats()) {
    if (s.pid !== postmaster && s.ppid !== postmaster) continue;
    let title = '';
    try {
      title = readFileSync(`/proc/${s.pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    } catch {
      continue;
    }
    const m = /^postgres: (\S+) (\S+) (\S+\(\d+\)|\[local\])/.exec(title);
    if (m && m[2] === database && m[1] !== excludeUser) backends.set(s.pid, ticksToMs(s.ticks));
    else otherTicks += s.ticks;
  }
  return { backends, otherMs: ticksToMs(otherTicks) };
}

/** CPU ms spent between two readings by the backends seen in the second (a backend new since the first counts from 0). */
export function backendDeltaMs(before: PostgresCpu, after: PostgresCpu): { backendsMs: number; otherMs: number; gone: number } {
  let backendsMs = 0;
  for (const [pid, ms] of after.backends) backendsMs += ms - (before.backends.get(pid) ?? 0);
  let gone = 0;
  for (const pid of before.backends.keys()) if (!after.backends.has(pid)) gone++;
  return { backendsMs, otherMs: after.otherMs - before.otherMs, gone };
}
