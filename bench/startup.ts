/**
 * `npm run bench:startup` — how long a new user waits, measured on the real commands:
 *   (i)   `npm start` at the repository root (the demo under `mercato dev`) until it prints its URLs, with no database yet
 *         (examples/demo/.mercato removed: the embedded database is made, from the package's template) — target ≤ 3 s;
 *   (ii)  the same with the database already there — target ≤ 1.5 s;
 *   (iii) a reload in `mercato dev` of the demo: a file of the app is saved and the `↻ reloaded in N ms` line is read —
 *         target ≤ 1 s; measured from the save to the line (includes the file watcher's debounce) and as printed.
 * Fresh and warm starts are interleaved; BENCH_STARTUP_RUNS rounds (default 5). Min / median / max are printed.
 * Ports: the server and the simulator take free ports (PORT=0, MERCATO_SIM_PORT=0). See docs/benchmarks.md, "Start-up".
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEMO = join(ROOT, 'examples', 'demo');
const RUNS = Number(process.env.BENCH_STARTUP_RUNS) > 0 ? Number(process.env.BENCH_STARTUP_RUNS) : 5;
const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', MERCATO_SIM_PORT: '0', FORCE_COLOR: '0' };
delete env.DATABASE_URL;
delete env.PLATFORM_ORIGIN;

interface Started {
  child: ChildProcess;
  ms: number;
  output: () => string;
}

function startAndWait(command: string, args: string[], cwd: string, pattern: RegExp, timeoutMs = 60_000): Promise<Started> {
  const t0 = performance.now();
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no match for ${pattern} in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (pattern.test(out)) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
        resolve({ child, ms: performance.now() - t0, output: () => out });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ${pattern}:\n${out}`));
    });
  });
}

async function stop(child: ChildProcess) {
  const exited = new Promise((r) => child.once('exit', r));
  try {
    process.kill(-child.pid!, 'SIGINT');
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {}
  }, 10_000);
  await exited;
  clearTimeout(timer);
}

const waitFor = async (read: () => string, pattern: RegExp, from: number, timeoutMs = 15_000): Promise<RegExpExecArray> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = pattern.exec(read().slice(from));
    if (m) return m;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, max: s.at(-1)! };
};
const fmt = (xs: number[]) => {
  const { min, median, max } = stats(xs);
  return `min ${min.toFixed(0)} ms · median ${median.toFixed(0)} ms · max ${max.toFixed(0)} ms (${xs.length} runs)`;
};

const fresh: number[] = [];
const warm: number[] = [];
const reloadSeen: number[] = [];
const reloadPrinted: number[] = [];
const LISTENING = /listening on http:\/\/\S+/;
const file = join(DEMO, 'routes', 'order-events.ts');
const original = readFileSync(file, 'utf8');

try {
  for (let round = 1; round <= RUNS; round++) {
    rmSync(join(DEMO, '.mercato'), { recursive: true, force: true });
    const a = await startAndWait('npm', ['start', '--silent'], ROOT, LISTENING);
    fresh.push(a.ms);
    await stop(a.child);
    const b = await startAndWait('npm', ['start', '--silent'], ROOT, LISTENING);
    warm.push(b.ms);
    // reloads: save a file of the app (content changed, so the bundle really changes) and read the reload line
    for (let i = 0; i < 3; i++) {
      const from = b.output().length;
      const t0 = performance.now();
      writeFileSync(file, `${original}\n// bench edit ${round}.${i}\n`);
      const now = new Date();
      utimesSync(file, now, now);
      const m = await waitFor(b.output, /↻ reloaded in (\d+) ms/, from);
      reloadSeen.push(performance.now() - t0);
      reloadPrinted.push(Number(m[1]));
    }
    writeFileSync(file, original);
    await stop(b.child);
    process.stdout.write(
      `round ${round}/${RUNS}: fresh ${fresh.at(-1)!.toFixed(0)} ms, warm ${warm.at(-1)!.toFixed(0)} ms, reloads ${reloadSeen
        .slice(-3)
        .map((x) => x.toFixed(0))
        .join('/')} ms\n`,
    );
  }
} finally {
  writeFileSync(file, original);
}

console.log('\nnpm start → URLs printed');
console.log(`  no database yet:      ${fmt(fresh)}   target ≤ 3000 ms: ${stats(fresh).median <= 3000 ? 'met' : 'NOT met'} (median)`);
console.log(`  database exists:      ${fmt(warm)}   target ≤ 1500 ms: ${stats(warm).median <= 1500 ? 'met' : 'NOT met'} (median)`);
console.log('mercato dev reload of the demo');
console.log(
  `  save → reload line:   ${fmt(reloadSeen)}   target ≤ 1000 ms: ${stats(reloadSeen).median <= 1000 ? 'met' : 'NOT met'} (median)`,
);
console.log(`  as printed (build + swap): ${fmt(reloadPrinted)}`);
