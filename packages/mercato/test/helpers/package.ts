/**
 * The installable package, as its users get it (test/package/): `npm pack` of packages/mercato (its `prepack` runs the
 * full build), and `npm install <tarball>` into a directory outside the workspace.
 *
 * Both happen once per test run, whichever test file asks first: the run's folder comes from the global setup
 * (`inject('mercatoPackageDir')`, under the OS temp folder, removed after the run) and a lock folder in it makes the
 * other test files (other processes) wait for the result instead of packing or installing again. Commands run with a
 * clean environment (no NODE_ENV=test, no DATABASE_URL, no npm_config_* of an outer `npm test`), quietly (their output
 * is captured and shown only when they fail), in their own process group, so a timeout or the end of a test file
 * stops every process they started.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { isRunning } from '../../src/db/data-dir-lock.ts';

export const WORKSPACE = resolve(fileURLToPath(new URL('../../../../', import.meta.url)));
export const PACKAGE_ROOT = join(WORKSPACE, 'packages', 'mercato');
/** The workspace's TypeScript compiler (the installations outside the workspace have none). */
export const TSC = join(WORKSPACE, 'node_modules', 'typescript', 'bin', 'tsc');
export const MERCATO_PKG = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
  files: string[];
};

/** npm flags of every install: the npm cache first, no progress bar, audit, funding or update notices; errors only. */
export const NPM_QUIET = ['--prefer-offline', '--no-audit', '--no-fund', '--no-progress', '--no-update-notifier', '--loglevel=error'];

/** A clean environment for a child process: what a user's shell has (PATH, HOME, the temp folder), plus `extra`. */
export function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const key of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'SystemRoot']) if (process.env[key]) env[key] = process.env[key];
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------------------
// Child processes

const liveGroups = new Set<number>();

/** Kills a process group (the child and everything it started); quiet when it is gone already. */
function killGroup(pid: number | undefined, signal: NodeJS.Signals) {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

// a test process that ends without its afterAll (a crash, a timeout of the pool) leaves no server behind
process.once('exit', () => {
  for (const pid of liveGroups) killGroup(pid, 'SIGKILL');
});

function spawnGroup(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): ChildProcess {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? childEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const pid = child.pid;
  if (pid) {
    liveGroups.add(pid);
    child.once('close', () => {
      // every process holding the output pipes is done; anything left in the group (a daemon) goes with it
      killGroup(pid, 'SIGKILL');
      liveGroups.delete(pid);
    });
  }
  return child;
}

export interface CommandResult {
  command: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** The command and its output, for an assertion message. */
export function describeResult(r: CommandResult): string {
  return `$ ${r.command}\nexit ${r.code ?? r.signal} after ${r.ms} ms\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

/** Runs a command to its end (its process group is killed after `timeoutMs`). */
export function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<CommandResult> {
  const started = Date.now();
  const shown = [command, ...args].join(' ');
  return new Promise((resolveResult, reject) => {
    const child = spawnGroup(command, args, options);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      stderr += `\n[killed: still running after ${options.timeoutMs} ms]`;
      killGroup(child.pid, 'SIGKILL');
    }, options.timeoutMs ?? 120_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolveResult({ command: shown, code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** Runs a command and throws (with its output) unless it exits 0. */
export async function runOk(
  command: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<CommandResult> {
  const r = await run(command, args, options);
  if (r.code !== 0) throw new Error(`command failed (in ${options.cwd}):\n${describeResult(r)}`);
  return r;
}

/** A long-running command (a server): its output so far, waiting for a line, stopping it. */
export interface Background {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the match once stdout matches `pattern`; rejects when the process exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number, from?: number): Promise<RegExpExecArray>;
  /** Sends `signal` to the process group (SIGINT: what Ctrl-C does in a terminal), then SIGKILL after `timeoutMs`. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const backgrounds = new Set<Background>();

export function startBackground(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Background {
  const child = spawnGroup(command, args, options);
  let stdout = '';
  let stderr = '';
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const listeners = new Set<() => void>();
  const notify = () => listeners.forEach((l) => l());
  child.stdout!.on('data', (d: Buffer) => {
    stdout += d.toString();
    notify();
  });
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    notify();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('close', (code, signal) => {
      exit = { code, signal };
      notify();
      r(exit);
    }),
  );
  const shown = [command, ...args].join(' ');
  const bg: Background = {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    waitFor(pattern, timeoutMs = 60_000, from = 0) {
      return new Promise((resolveMatch, reject) => {
        const check = () => {
          const m = new RegExp(pattern.source, pattern.flags.replace('g', '')).exec(stdout.slice(from));
          if (m) return done(() => resolveMatch(m));
          if (exit)
            return done(() =>
              reject(
                new Error(
                  `\`${shown}\` exited (${exit!.code ?? exit!.signal}) before printing ${pattern}:\n${stdout}\n--- stderr\n${stderr}`,
                ),
              ),
            );
        };
        const timer = setTimeout(
          () =>
            done(() =>
              reject(new Error(`\`${shown}\` did not print ${pattern} within ${timeoutMs} ms:\n${stdout}\n--- stderr\n${stderr}`)),
            ),
          timeoutMs,
        );
        const done = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      });
    },
    async stop(signal = 'SIGTERM', timeoutMs = 15_000) {
      backgrounds.delete(bg);
      if (exit) return exit;
      killGroup(child.pid, signal);
      const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), timeoutMs);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
  backgrounds.add(bg);
  return bg;
}

/** Stops every background process still running (for afterAll). */
export async function stopBackgrounds(): Promise<void> {
  await Promise.all([...backgrounds].map((bg) => bg.stop('SIGTERM', 5_000)));
}

// ---------------------------------------------------------------------------------------------------------------------
// Folders outside the workspace

const scratchDirs: string[] = [];

/**
 * Throws unless `dir` is outside the workspace and no folder above it is a Node project (a package.json or a
 * node_modules there would let the app resolve packages it did not install).
 */
export function assertOutsideWorkspace(dir: string): void {
  const full = resolve(dir);
  const rel = relative(WORKSPACE, full);
  if (rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep))) throw new Error(`${full} is inside the workspace ${WORKSPACE}`);
  for (let up = dirname(full); ; up = dirname(up)) {
    for (const name of ['package.json', 'node_modules']) {
      if (existsSync(join(up, name))) throw new Error(`${join(up, name)} is above ${full}: packages could resolve from there`);
    }
    if (dirname(up) === up) break;
  }
}

/** A fresh empty folder under the OS temp folder, removed by removeScratchDirs(). */
export function scratchDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `mercato-${label}-`));
  scratchDirs.push(dir);
  assertOutsideWorkspace(dir);
  return dir;
}

export function removeScratchDirs(): void {
  for (const dir of scratchDirs.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/** For afterAll: stops the servers, then removes the folders. */
export async function cleanUp(): Promise<void> {
  await stopBackgrounds();
  removeScratchDirs();
}

// ---------------------------------------------------------------------------------------------------------------------
// Once per test run, across test files

const memo = new Map<string, Promise<unknown>>();

function runDir(): string {
  const dir = inject('mercatoPackageDir');
  if (!dir || !existsSync(dir))
    throw new Error('mercatoPackageDir is not provided: run the tests with the workspace vitest.config.ts (its global setup provides it)');
  return dir;
}

/**
 * `make` runs once per test run: the first caller (any test file) takes the lock and makes it, the others wait for its
 * JSON result (or its failure) in the run's folder.
 */
function oncePerRun<T>(name: string, make: (dir: string) => Promise<T>, timeoutMs: number): Promise<T> {
  const known = memo.get(name);
  if (known) return known as Promise<T>;
  const promise = (async () => {
    const dir = runDir();
    const result = join(dir, `${name}.json`);
    const failure = join(dir, `${name}.failed`);
    const lock = join(dir, `${name}.lock`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (existsSync(result)) return JSON.parse(readFileSync(result, 'utf8')) as T;
      if (existsSync(failure)) throw new Error(`${name} failed (in another test file of this run):\n${readFileSync(failure, 'utf8')}`);
      try {
        mkdirSync(lock);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        let owner = 0;
        try {
          owner = Number(readFileSync(join(lock, 'pid'), 'utf8'));
        } catch {
          // the owner has not written its pid yet
        }
        if (owner && !isRunning(owner) && !existsSync(result))
          throw new Error(`${name}: the test process that was making it (pid ${owner}) ended without a result`);
        if (Date.now() > deadline) throw new Error(`${name}: still not ready after ${timeoutMs} ms (made by pid ${owner || '?'})`);
        await sleep(250);
        continue;
      }
      writeFileSync(join(lock, 'pid'), String(process.pid));
      try {
        const value = await make(dir);
        writeFileSync(`${result}.tmp`, JSON.stringify(value));
        renameSync(`${result}.tmp`, result);
        return value;
      } catch (error) {
        writeFileSync(failure, String((error as Error).stack ?? error));
        throw error;
      }
    }
  })();
  memo.set(name, promise);
  return promise;
}

export interface PackedPackage {
  /** Absolute path of the .tgz. */
  tarball: string;
  version: string;
  /** Every file in the tarball, relative to the package folder (`dist/cli.js`, …), sorted. */
  files: string[];
  /** How long `npm pack` took (its `prepack` build included). */
  ms: number;
}

/** `npm pack` of packages/mercato (its prepack builds dist/ in full), once per test run. */
export function packedPackage(): Promise<PackedPackage> {
  return oncePerRun(
    'pack',
    async (dir) => {
      const dest = join(dir, 'pack');
      mkdirSync(dest, { recursive: true });
      const packed = await runOk('npm', ['pack', '--pack-destination', dest, '--loglevel=error'], {
        cwd: PACKAGE_ROOT,
        env: childEnv(),
        timeoutMs: 300_000,
      });
      const tarballs = readdirSync(dest).filter((f) => f.endsWith('.tgz'));
      if (tarballs.length !== 1)
        throw new Error(`npm pack wrote ${tarballs.length} tarballs in ${dest}: ${tarballs.join(', ')}\n${describeResult(packed)}`);
      const tarball = join(dest, tarballs[0]!);
      const listing = await runOk('tar', ['-tzf', tarball], { cwd: dest, timeoutMs: 60_000 });
      const files = listing.stdout
        .split('\n')
        .filter((line) => line && !line.endsWith('/'))
        .map((line) => line.replace(/^package\//, ''))
        .sort();
      return { tarball, version: MERCATO_PKG.version, files, ms: packed.ms };
    },
    360_000,
  );
}

export interface InstalledPackage {
  /** The folder `npm install <tarball>` ran in (its package.json has `"type": "module"` and nothing else). */
  dir: string;
  tarball: string;
  /** How long the install took. */
  ms: number;
}

/**
 * The tarball installed into an empty folder outside the workspace with `npm install <tarball> zod` (zod: the schema
 * library apps write their flow inputs with, at mercato's own range), once per test run. Tests use it as users do:
 * apps in folders below it, and `npx --prefix <dir> mercato …` from anywhere (what `npx mercato` does with a package
 * from the registry).
 */
export function installedPackage(): Promise<InstalledPackage> {
  return oncePerRun(
    'install',
    async (dir) => {
      const { tarball } = await packedPackage();
      const target = join(dir, 'installed');
      mkdirSync(target);
      assertOutsideWorkspace(target);
      writeFileSync(
        join(target, 'package.json'),
        `${JSON.stringify({ name: 'installed-mercato', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
      );
      const zod = MERCATO_PKG.dependencies.zod;
      const r = await runOk('npm', ['install', tarball, `zod@${zod}`, ...NPM_QUIET], { cwd: target, env: childEnv(), timeoutMs: 300_000 });
      return { dir: target, tarball, ms: r.ms };
    },
    600_000,
  );
}

/** The options of an `npm install` in a scaffold: quiet and from the npm cache first. */
export function npmInstall(cwd: string, env: NodeJS.ProcessEnv = childEnv()): Promise<CommandResult> {
  return runOk('npm', ['install', ...NPM_QUIET], { cwd, env, timeoutMs: 300_000 });
}

// ---------------------------------------------------------------------------------------------------------------------
// HTTP against a running `mercato dev`

/** Mints a session token for `shop` at the admin preview, as the preview page does. */
export async function previewToken(base: string, shop: string): Promise<string> {
  const res = await fetch(`${base}/__mercato/preview/session-token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ shop }),
  });
  if (res.status !== 200) throw new Error(`session-token for ${shop}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

export interface RunRecord {
  id: string;
  status: string;
  output: unknown;
  error: unknown;
  flowName: string;
  shop: string;
}

/** Polls GET /api/runs/:id until the run is no longer pending or running. */
export async function waitForRunEnd(base: string, token: string, runId: string, timeoutMs = 30_000): Promise<RunRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${base}/api/runs/${runId}`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`GET /api/runs/${runId}: ${res.status} ${await res.text()}`);
    const record = (await res.json()) as RunRecord;
    if (!['pending', 'running', 'sleeping'].includes(record.status)) return record;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${record.status} after ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** Dispatches a flow through the admin API (as the admin UI's Run button does) and waits for the run to end. */
export async function runFlowViaApi(base: string, token: string, flow: string, input: unknown): Promise<RunRecord> {
  const res = await fetch(`${base}/api/flows/${encodeURIComponent(flow)}/run`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ input }),
  });
  if (res.status !== 202) throw new Error(`POST /api/flows/${flow}/run: ${res.status} ${await res.text()}`);
  const { runId } = (await res.json()) as { runId: string };
  return waitForRunEnd(base, token, runId);
}

// ---------------------------------------------------------------------------------------------------------------------
// Commands shown in documentation

/** Splits a POSIX shell command line into words: single and double quotes, backslash escapes, `\`-newline joins. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  const src = line.replace(/\\\n/g, ' ');
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === "'") {
      const end = src.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unclosed ' in: ${line}`);
      word = (word ?? '') + src.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let text = '';
      let j = i + 1;
      for (; j < src.length && src[j] !== '"'; j++) {
        if (src[j] === '\\' && /["\\$`]/.test(src[j + 1] ?? '')) j++;
        else if (src[j] === '$' || src[j] === '`') throw new Error(`expansions in double quotes are not supported: ${line}`);
        text += src[j];
      }
      if (j >= src.length) throw new Error(`unclosed " in: ${line}`);
      word = (word ?? '') + text;
      i = j;
    } else if (c === '\\') {
      word = (word ?? '') + (src[i + 1] ?? '');
      i++;
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

export interface CurlRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/** What a `curl …` command line sends (the options documentation uses: -X, -H, -d, -s); anything else is an error. */
export function parseCurl(line: string): CurlRequest {
  const words = shellWords(line);
  if (words[0] !== 'curl') throw new Error(`not a curl command: ${line}`);
  let url: string | undefined;
  let method: string | undefined;
  let body: string | undefined;
  const headers: Record<string, string> = {};
  for (let i = 1; i < words.length; i++) {
    const w = words[i]!;
    const value = () => {
      const v = words[++i];
      if (v === undefined) throw new Error(`${w} needs a value: ${line}`);
      return v;
    };
    if (w === '-X' || w === '--request') method = value();
    else if (w === '-H' || w === '--header') {
      const h = value();
      const colon = h.indexOf(':');
      if (colon < 1) throw new Error(`not a header: ${h}`);
      headers[h.slice(0, colon).trim().toLowerCase()] = h.slice(colon + 1).trim();
    } else if (w === '-d' || w === '--data' || w === '--data-raw') body = value();
    else if (w === '-s' || w === '-sS' || w === '--silent') continue;
    else if (w.startsWith('-')) throw new Error(`curl option ${w} is not understood by the test: ${line}`);
    else if (url === undefined) url = w;
    else throw new Error(`two URLs in: ${line}`);
  }
  if (!url) throw new Error(`no URL in: ${line}`);
  // curl's defaults: -d makes it a POST of a form unless told otherwise
  if (body !== undefined) headers['content-type'] ??= 'application/x-www-form-urlencoded';
  return { url, method: method ?? (body !== undefined ? 'POST' : 'GET'), headers, body };
}

/** Sends what `curl` would send and returns the status and the body as text (what curl prints). */
export async function sendCurl(request: CurlRequest): Promise<{ status: number; text: string }> {
  const res = await fetch(request.url, { method: request.method, headers: request.headers, body: request.body });
  return { status: res.status, text: await res.text() };
}

/** A line of a guide as a pattern: `…` matches anything, the rest is literal (the guides' expected output). */
export function linePattern(line: string): RegExp {
  return new RegExp(
    `^${line
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
}
