/**
 * Start-up (docs/benchmarks.md, "Start-up"): the OpenTelemetry SDK (about 250 ms of module loading) is loaded only by
 * a process that exports traces. A module resolve hook in the real `mercato` process records every package it loads.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../../bin/mercato.js');
const MINIMAL = resolve(import.meta.dirname, '../fixtures/minimal-app');
const dir = mkdtempSync(join(tmpdir(), 'mercato-lazy-imports-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Node arguments that record every bare specifier the process resolves (the packages it loads) into `log`. */
function hooked(): { args: string[]; log: string } {
  const id = Math.random().toString(36).slice(2);
  const log = join(dir, `resolved-${id}.txt`);
  const hooks = join(dir, `hooks-${id}.mjs`);
  writeFileSync(log, '');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (!/^(\\.|\\/|node:|file:|data:)/.test(specifier)) appendFileSync(${JSON.stringify(log)}, specifier + '\\n');
  return next(specifier, context);
}`,
  );
  const register = join(dir, `register-${id}.mjs`);
  writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  return { args: ['--import', pathToFileURL(register).href], log };
}

/** The packages a short command loaded. */
function loadedPackages(args: string[]): string[] {
  const hook = hooked();
  const r = spawnSync(process.execPath, [...hook.args, BIN, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return readFileSync(hook.log, 'utf8').split('\n').filter(Boolean);
}

describe('what a command loads', () => {
  it('`mercato --version` loads neither the OpenTelemetry SDK nor the database engines', () => {
    const loaded = loadedPackages(['--version']);
    // the hook works: the CLI's own dependencies are seen
    expect(loaded).toContain('commander');
    expect(loaded.filter((s) => s.startsWith('@opentelemetry/') && s !== '@opentelemetry/api')).toEqual([]);
    expect(loaded.filter((s) => s.startsWith('@electric-sql/pglite') || s === 'pg')).toEqual([]);
  });

  it('`mercato dev` loads the OpenTelemetry SDK only with an OTLP endpoint', async () => {
    const sdk = (loaded: string[]) =>
      loaded.filter((s) => s.startsWith('@opentelemetry/sdk-trace') || s.startsWith('@opentelemetry/exporter'));
    const without = await devLoads({});
    expect(without).toContain('@electric-sql/pglite'); // it served: the database was opened
    expect(sdk(without)).toEqual([]);
    // the positive control: the same start with an endpoint (nothing listens there; spans are only buffered)
    const withEndpoint = await devLoads({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(sdk(withEndpoint)).toEqual(expect.arrayContaining(['@opentelemetry/sdk-trace-node', '@opentelemetry/exporter-trace-otlp-http']));
  }, 120_000);
});

/** `mercato dev` of the minimal app until it printed its URLs, then stopped (SIGINT); the packages it loaded. */
async function devLoads(env: NodeJS.ProcessEnv): Promise<string[]> {
  const { args, log } = hooked();
  const child = spawn(process.execPath, [...args, BIN, 'dev', '--no-watch'], {
    cwd: MINIMAL,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', MERCATO_SIM_PORT: '0', MERCATO_DATA_DIR: join(dir, 'data'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const deadline = Date.now() + 90_000;
  while (!/admin UI:/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`mercato dev did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGINT');
  expect(await exited, out).toBe(0);
  return readFileSync(log, 'utf8').split('\n').filter(Boolean);
}
