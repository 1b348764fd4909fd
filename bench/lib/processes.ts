/** Child processes of a benchmark: started until they print a ready line, stopped with SIGTERM, killed on Ctrl-C. */
import { type ChildProcess, spawn } from 'node:child_process';

const children = new Set<ChildProcess>();

export interface SpawnOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Resolves once the output (stdout + stderr) matches. */
  ready: RegExp;
  /** For error messages. */
  label: string;
  timeoutMs?: number;
}

/** Starts a process and resolves once it printed its ready line; rejects (with its output) if it exits first. */
export function spawnReady(command: string, args: string[], options: SpawnOptions): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return new Promise<ChildProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${options.label}: not ready after ${options.timeoutMs ?? 60_000} ms:\n${out}`));
    }, options.timeoutMs ?? 60_000);
    const check = () => {
      if (options.ready.test(out)) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        child.stderr!.off('data', check);
        resolve(child);
      }
    };
    child.stdout!.on('data', check);
    child.stderr!.on('data', check);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${options.label} exited (${code ?? signal}) before it was ready:\n${out}`));
    });
  });
}

/** Runs a process to its end; rejects with its output when it exits non-zero. */
export function runToEnd(command: string, args: string[], options: Omit<SpawnOptions, 'ready'>): Promise<string> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 300_000);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (code === 0) resolve(out);
      else reject(new Error(`${options.label} exited (${code ?? signal}):\n${out.slice(-4000)}`));
    });
  });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once every process has exited. */
export async function stop(processes: readonly ChildProcess[], graceMs = 15_000): Promise<void> {
  await Promise.all(
    processes.map(
      (child) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
          child.once('exit', () => {
            clearTimeout(timer);
            done();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

/** SIGKILL to every child still running (the Ctrl-C path; synchronous). */
export function killAll(): void {
  for (const child of children) child.kill('SIGKILL');
}
