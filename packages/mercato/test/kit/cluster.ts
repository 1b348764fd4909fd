/**
 * A private PostgreSQL 15 cluster for one test file: `initdb` into a fresh temporary folder, `pg_ctl` on a free loopback
 * port (never the shared server at 5432), trust authentication, durability settings off for speed. The test can stop,
 * start and restart it (`pg_ctl restart -m fast`) without touching anybody else's server.
 *
 * As root (this machine's test user) every PostgreSQL binary runs as the `postgres` OS user (`runuser -u postgres`),
 * because initdb and postgres refuse to run as root; as any other user they run as that user.
 *
 * Cleanup: `destroy()` stops the cluster and removes its folder. Should a test fail before it gets there, the process's
 * `exit` handler (and SIGINT/SIGTERM) stops every cluster still running with `pg_ctl stop -m immediate`; a cluster left
 * by a process that was killed outright is found by the next `startCluster()` (its folder names the dead owner) and
 * removed.
 *
 *   const reason = clusterUnavailable();
 *   describe.skipIf(reason)(`... ${reason ? `(skipped: ${reason})` : ''}`, () => { ... startCluster() ... });
 *
 * or simply `describeWithCluster(name, fn)`, which does that.
 */
import { type SpawnSyncReturns, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe } from 'vitest';

/** Where the PostgreSQL 15 binaries are (MERCATO_PG_BIN overrides it). */
export const PG_BIN = process.env.MERCATO_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const PREFIX = 'mercato-pg-';
const OS_USER = 'postgres';

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Why no private cluster can be started here (the skip reason), or undefined when it can. */
export function clusterUnavailable(): string | undefined {
  for (const bin of ['initdb', 'pg_ctl', 'postgres']) {
    if (!existsSync(join(PG_BIN, bin))) return `PostgreSQL binaries not found: ${join(PG_BIN, bin)} is missing (set MERCATO_PG_BIN)`;
  }
  if (isRoot()) {
    if (spawnSync('runuser', ['--help']).error) return 'running as root without `runuser` (initdb refuses to run as root)';
    if (spawnSync('id', ['-u', OS_USER]).status !== 0) return `running as root and there is no "${OS_USER}" OS user to run PostgreSQL as`;
  }
  return undefined;
}

/** `describe` when a cluster can be started, else `describe.skip` with the reason in the name (and printed once). */
export function describeWithCluster(name: string, fn: () => void): void {
  const reason = clusterUnavailable();
  if (reason) {
    console.warn(`skipping "${name}": ${reason}`);
    describe.skip(`${name} (skipped: ${reason})`, fn);
  } else {
    describe(name, fn);
  }
}

export interface Cluster {
  /** The loopback port it listens on. */
  readonly port: number;
  /** The temporary folder (data directory `data/`, server log `server.log`, socket). */
  readonly dir: string;
  /** Connection string of a database of this cluster (default `postgres`), user `postgres`, no password. */
  url(database?: string): string;
  /** Creates a database (random name by default) and returns its connection string. */
  createDatabase(name?: string): Promise<string>;
  /** `pg_ctl restart -m fast` (every connection is cut); resolves with how long it took, in ms. */
  restart(): Promise<number>;
  /** `pg_ctl stop -m fast`. */
  stop(): Promise<void>;
  /** `pg_ctl start` after a stop; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Whether the postmaster is running (`pg_ctl status`). */
  running(): boolean;
  /** The server log so far (for failure messages). */
  log(): string;
  /** Stops it (immediate) and removes its folder. Idempotent. */
  destroy(): Promise<void>;
}

export interface ClusterOptions {
  /** Extra `postgresql.conf` settings (name → value, written as given). */
  settings?: Record<string, string | number>;
}

/** Clusters of this process not destroyed yet: data dir → dir. */
const live = new Map<string, string>();
let handlersInstalled = false;

function pgCommand(bin: string, args: string[]): [string, string[]] {
  const path = join(PG_BIN, bin);
  return isRoot() ? ['runuser', ['-u', OS_USER, '--', path, ...args]] : [path, args];
}

function runSync(bin: string, args: string[], timeoutMs = 120_000): SpawnSyncReturns<string> {
  const [cmd, argv] = pgCommand(bin, args);
  return spawnSync(cmd, argv, { encoding: 'utf8', timeout: timeoutMs, cwd: tmpdir() });
}

function run(bin: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const [cmd, argv] = pgCommand(bin, args);
  return new Promise((resolve, reject) => {
    // cwd: a folder the postgres user can enter (pg_ctl complains about an unreadable current directory otherwise)
    const child = spawn(cmd, argv, { cwd: tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

async function must(bin: string, args: string[], what: string, logFile?: string): Promise<string> {
  const { code, output } = await run(bin, args);
  if (code !== 0) {
    const log = logFile && existsSync(logFile) ? `\n--- server log ---\n${readFileSync(logFile, 'utf8').slice(-4000)}` : '';
    throw new Error(`${what} failed (exit ${code}):\n${output}${log}`);
  }
  return output;
}

function stopImmediately(dataDir: string) {
  if (existsSync(join(dataDir, 'postmaster.pid'))) runSync('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', '-t', '20', 'stop'], 30_000);
}

function installExitHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  const stopAll = () => {
    for (const [dataDir, dir] of live) {
      stopImmediately(dataDir);
      rmSync(dir, { recursive: true, force: true });
    }
    live.clear();
  };
  process.once('exit', stopAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      stopAll();
      process.kill(process.pid, signal); // the default action, now that this handler is gone
    });
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the clusters of processes that died without cleaning up (their folder's `owner` file names the process). */
function sweepAbandoned() {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir()).filter((name) => name.startsWith(PREFIX));
  } catch {
    return;
  }
  for (const name of entries) {
    const dir = join(tmpdir(), name);
    try {
      const owner = Number(readFileSync(join(dir, 'owner'), 'utf8'));
      if (!Number.isInteger(owner) || pidAlive(owner)) continue;
      if (Date.now() - statSync(dir).mtimeMs < 5_000) continue; // being created right now by a process that reused the pid
      stopImmediately(join(dir, 'data'));
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // not ours, or already gone
    }
  }
}

/** A free TCP port on 127.0.0.1, other than 5432. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        const p = typeof address === 'object' && address ? address.port : 0;
        server.close(() => resolve(p));
      });
    });
    if (port !== 5432 && port > 0) return port;
  }
}

/** Creates and starts a private cluster. Call `destroy()` when done (an `afterAll`). */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const reason = clusterUnavailable();
  if (reason) throw new Error(`cannot start a private PostgreSQL cluster: ${reason}`);
  sweepAbandoned();
  installExitHandlers();

  const dir = mkdtempSync(join(tmpdir(), PREFIX));
  writeFileSync(join(dir, 'owner'), String(process.pid));
  const dataDir = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  if (isRoot()) {
    const uid = Number(spawnSync('id', ['-u', OS_USER], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', OS_USER], { encoding: 'utf8' }).stdout.trim());
    chownSync(dir, uid, gid);
  }
  live.set(dataDir, dir);

  let destroyed = false;
  try {
    await must('initdb', ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync'], 'initdb');
  } catch (error) {
    live.delete(dataDir);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  const settings: Record<string, string | number> = {
    listen_addresses: "'127.0.0.1'",
    unix_socket_directories: `'${dir}'`,
    max_connections: 200,
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    logging_collector: 'off',
    log_min_messages: 'warning',
    ...options.settings,
  };

  let port = 0;
  const pgCtl = (args: string[]) => ['-D', dataDir, '-l', logFile, '-w', '-t', '60', ...args];
  // a port found free may be taken before postgres binds it: try a few
  for (let tries = 1; ; tries++) {
    port = await freePort();
    const conf = Object.entries({ ...settings, port })
      .map(([k, v]) => `${k} = ${v}`)
      .join('\n');
    writeFileSync(join(dataDir, 'postgresql.auto.conf'), `${conf}\n`);
    const { code, output } = await run('pg_ctl', pgCtl(['start']));
    if (code === 0) break;
    const log = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
    if (tries < 5 && /could not bind|address already in use/i.test(log + output)) continue;
    stopImmediately(dataDir);
    live.delete(dataDir);
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`pg_ctl start failed (exit ${code}):\n${output}\n--- server log ---\n${log.slice(-4000)}`);
  }

  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const statusRunning = () => runSync('pg_ctl', ['-D', dataDir, 'status'], 10_000).status === 0;

  return {
    port,
    dir,
    url,
    async createDatabase(name = `mercato_chaos_${Date.now().toString(36)}_${Math.random().toString(16).slice(2, 8)}`) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`createDatabase: "${name}" is not a plain lower-case identifier`);
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`create database ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    async restart() {
      const started = performance.now();
      await must('pg_ctl', pgCtl(['-m', 'fast', 'restart']), 'pg_ctl restart', logFile);
      return performance.now() - started;
    },
    async stop() {
      await must('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '60', 'stop'], 'pg_ctl stop', logFile);
    },
    async start() {
      await must('pg_ctl', pgCtl(['start']), 'pg_ctl start', logFile);
    },
    running: statusRunning,
    log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      if (existsSync(join(dataDir, 'postmaster.pid'))) {
        const { code } = await run('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', '-t', '20', 'stop']);
        if (code !== 0) stopImmediately(dataDir);
      }
      live.delete(dataDir);
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}
