/**
 * One process at a time on an embedded database folder. PGlite is PostgreSQL in one process with no server: a second
 * process opening the same folder (a second `mercato dev`, `mercato prune` while `dev` runs) does not wait or fail
 * cleanly, it crashes in WebAssembly (`RuntimeError: Aborted()`) or, worse, writes over the first one's pages. So the
 * folder gets a lock file next to it, `<folder>.lock`, holding the owner's pid and command; a second process is refused
 * with a message naming the owner. A lock left by a process that died (its pid no longer runs) is taken over.
 * Opening the same folder twice in one process is allowed (counted): that is one process's business.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';

/** Another live process holds the embedded database folder. */
export class EmbeddedDatabaseInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly holder: LockHolder,
  ) {
    super(
      `the embedded database in ${dataDir} is in use by another process (pid ${holder.pid}${holder.command ? `: ${holder.command}` : ''}${holder.since ? `, since ${holder.since}` : ''}). ` +
        'PGlite serves one process at a time: stop that process first, or run this command on PostgreSQL with DATABASE_URL',
    );
    this.name = 'EmbeddedDatabaseInUseError';
  }
}

export interface LockHolder {
  pid: number;
  command?: string;
  since?: string;
}

const held = new Map<string, number>();

/** Takes the folder's lock (or one more reference to this process's); returns what releases it. */
export function lockDataDir(dataDir: string): () => void {
  const dir = resolve(dataDir);
  const path = `${dir}.lock`;
  const count = held.get(dir) ?? 0;
  if (count === 0) acquire(dir, path);
  held.set(dir, count + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (held.get(dir) ?? 1) - 1;
    if (left > 0) return void held.set(dir, left);
    held.delete(dir);
    try {
      if (readHolder(path)?.pid === process.pid) unlinkSync(path);
    } catch {
      /* already gone */
    }
  };
}

function acquire(dir: string, path: string): void {
  // two tries: the second after removing a lock whose process is gone
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        const holder: LockHolder = {
          pid: process.pid,
          command: commandLine(),
          since: new Date().toISOString(),
        };
        writeSync(fd, `${JSON.stringify(holder)}\n`);
      } finally {
        closeSync(fd);
      }
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readHolder(path);
      if (holder && holder.pid !== process.pid && isRunning(holder.pid)) throw new EmbeddedDatabaseInUseError(dir, holder);
      // stale (its process is gone, or the file is unreadable): take it over
      try {
        unlinkSync(path);
      } catch (unlinkError) {
        if ((unlinkError as NodeJS.ErrnoException).code !== 'ENOENT') throw unlinkError;
      }
    }
  }
  throw new Error(`could not take the lock ${path} of the embedded database (another process keeps taking it)`);
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockHolder>;
    return typeof parsed.pid === 'number' && Number.isInteger(parsed.pid) && parsed.pid > 0 ? (parsed as LockHolder) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process with this pid runs (as any user). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // it runs, as another user
  }
}

/** `mercato dev` rather than the full paths of node and the script. */
function commandLine(): string {
  const [script, ...args] = process.argv.slice(1);
  const name = script && /mercato(\.js)?$/.test(script) ? 'mercato' : (script ?? 'node');
  return [name, ...args].join(' ').slice(0, 200);
}
