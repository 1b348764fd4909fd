import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { MERCATO_VERSION } from '../../src/version.ts';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../../bin/mercato.js');
const MINIMAL = resolve(here, '../fixtures/minimal-app');
const INVALID = resolve(here, '../fixtures/invalid-app');
const DEMO = resolve(here, '../../../../examples/demo');
const KEY = 'a'.repeat(64);
const tmpDirs: string[] = [];
const children: ChildProcess[] = [];

function tmp() {
  const dir = mkdtempSync(join(tmpdir(), 'mercato-cli-'));
  tmpDirs.push(dir);
  return dir;
}

function baseEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    MERCATO_DATA_DIR: join(tmp(), 'db'),
    MERCATO_SIM_PORT: '0',
    ...extra,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env;
}

function run(args: string[], cwd: string, env: NodeJS.ProcessEnv = baseEnv()) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Starts a long-running command and resolves once it prints its URL. */
function startServer(args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const url = new Promise<string>((resolveUrl, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(output);
      if (m) resolveUrl(m[1]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited with ${code} before listening:\n${output}`)));
  });
  return { child, url, exited, output: () => output };
}

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});

// every test spawns real `mercato` processes (TypeScript loader + PGlite): allow for a loaded machine
vi.setConfig({ testTimeout: 90_000 });

describe('mercato CLI', () => {
  it('--version prints the package version', () => {
    const r = run(['--version'], MINIMAL);
    expect(r.code).toBe(0);
    expect(r.out.trim()).toBe(MERCATO_VERSION);
  });

  it('--help lists the commands; an unknown command or flag is a usage error (exit 2)', () => {
    const help = run(['--help'], MINIMAL);
    expect(help.code).toBe(0);
    for (const cmd of ['dev', 'start', 'worker', 'migrate', 'check']) expect(help.out).toContain(`  ${cmd} `);
    expect(run(['deploy'], MINIMAL)).toMatchObject({ code: 2, err: expect.stringContaining("unknown command 'deploy'") });
    expect(run(['check', '--bogus'], MINIMAL).code).toBe(2);
    expect(run(['worker', '--concurrency=zero'], MINIMAL)).toMatchObject({
      code: 2,
      err: expect.stringContaining('must be a positive integer'),
    });
    expect(run(['worker', '--prefetch=5000'], MINIMAL)).toMatchObject({
      code: 2,
      err: expect.stringContaining('must be an integer from 0 (off) to 1000 (got "5000")'),
    });
  });

  it('each command has its own --help with its options and an example; typos get the nearest command or option', () => {
    for (const [cmd, options] of [
      ['dev', ['--port', '--sim-port', '--quiet', '--no-watch', '--log-level', '--config']],
      ['start', ['--port', '--log-level', '--config']],
      ['worker', ['--concurrency', '--prefetch', '--log-level', '--config']],
      ['migrate', ['--config']],
      ['check', ['--config']],
      ['init', ['--force', '--mercato', '<dir>']],
    ] as const) {
      const r = run([cmd, '--help'], MINIMAL);
      expect(r.code, cmd).toBe(0);
      expect(r.out, cmd).toContain(`Usage: mercato ${cmd}`);
      for (const o of options) expect(r.out, `${cmd} ${o}`).toContain(o);
      expect(r.out, cmd).toMatch(/Examples?:\n {2}\$ /);
      // not the global help
      expect(r.out, cmd).not.toContain('Commands:');
    }
    expect(run(['help', 'worker'], MINIMAL).out).toContain('Usage: mercato worker');
    const typo = run(['chek'], MINIMAL);
    expect(typo.code).toBe(2);
    expect(typo.err).toContain('(Did you mean check?)');
    const option = run(['check', '--confg', 'x'], MINIMAL);
    expect(option.code).toBe(2);
    expect(option.err).toContain("unknown option '--confg'");
    expect(option.err).toContain('(Did you mean --config?)');
    const level = run(['start', '--log-level', 'loud'], MINIMAL);
    expect(level.code).toBe(2);
    expect(level.err).toContain('Allowed choices are fatal, error, warn, info, debug, trace, silent');
    expect(run(['-v'], MINIMAL).out.trim()).toBe(MERCATO_VERSION);
    const none = run([], MINIMAL);
    expect(none.code).toBe(2);
    expect(none.err).toContain('Usage: mercato');
  });

  it('dev: the simulator keeps its port across restarts (--sim-port / MERCATO_SIM_PORT); a busy port or data folder is a clear error', async () => {
    const simPort = 20000 + Math.floor(Math.random() * 20000);
    const dataDir = join(tmp(), 'db');
    const urls: string[] = [];
    for (let i = 0; i < 2; i++) {
      const s = startServer(
        ['dev', '--port', '0', '--sim-port', String(simPort), '--no-watch'],
        MINIMAL,
        baseEnv({ MERCATO_DATA_DIR: dataDir }),
      );
      const url = await s.url;
      const m = /simulator at (http:\/\/\S+)/.exec(s.output());
      urls.push(m![1]!);
      if (i === 0) {
        // the same for its HTTP port, and for its embedded database folder (one process at a time: docs/database.md)
        const port = new URL(url).port;
        const busyHttp = run(['dev', '--port', port, '--no-watch'], MINIMAL, baseEnv());
        expect(busyHttp.code).toBe(1);
        expect(busyHttp.err).toContain(`mercato dev: cannot listen on 127.0.0.1:${port}: the port is in use`);
        expect(busyHttp.err).toContain('--port <n> or PORT');
        expect(busyHttp.err).not.toContain('    at ');
        const busyData = run(['dev', '--port', '0', '--no-watch'], MINIMAL, baseEnv({ MERCATO_DATA_DIR: dataDir }));
        expect(busyData.code).toBe(1);
        expect(busyData.err).toContain(`mercato dev: the embedded database in ${dataDir} is in use by another process (pid ${s.child.pid}`);
        expect(busyData.err).not.toMatch(/RuntimeError|Aborted|\n\s+at /);
        // a second dev on the same simulator port is refused with a message saying what to do
        const busy = run(['dev', '--port', '0', '--no-watch'], MINIMAL, baseEnv({ MERCATO_SIM_PORT: String(simPort) }));
        expect(busy.code).toBe(1);
        expect(busy.err).toContain(`the platform simulator cannot listen on port ${simPort}`);
        expect(busy.err).toContain('--sim-port');
        expect(busy.err).not.toContain('    at ');
      }
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }
    expect(urls).toEqual([`http://127.0.0.1:${simPort}`, `http://127.0.0.1:${simPort}`]);
  });

  it('dev prints its URLs first, then notes; --quiet still prints the URLs', async () => {
    const s = startServer(['dev', '--port', '0', '--no-watch', '--quiet'], MINIMAL, baseEnv());
    await s.url;
    await vi.waitFor(() => expect(s.output()).toContain('note: generated an encryption key for stored secrets in'), { timeout: 5_000 });
    const lines = s.output().split('\n');
    expect(lines[0]).toMatch(/^mercato dev \S+ — listening on http:\/\/localhost:\d+ \(ready in \d+ ms\)$/);
    expect(lines.slice(1, 5).every((l) => l.startsWith('  '))).toBe(true);
    expect(s.output()).not.toMatch(/WARN|plaintext/);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  it('stops quietly when its output pipe closes early (`mercato init … | head -1`)', () => {
    const dir = join(tmp(), 'piped-app');
    const r = spawnSync('bash', ['-c', `"${process.execPath}" "${BIN}" init "${dir}" | head -1; echo "status=\${PIPESTATUS[0]}" >&2`], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stdout).toBe(`Created a Mercato app in ${dir}:\n`);
    expect(r.stderr).toBe('status=0\n'); // no EPIPE stack, exit 0
    expect(existsSync(join(dir, 'service.config.ts'))).toBe(true);
  });

  it('check validates and summarises a valid config', () => {
    const r = run(['check'], DEMO);
    expect(r.code).toBe(0);
    expect(r.out).toContain('service.config.ts is valid');
    expect(r.out).toMatch(/flows:\s+syncOrders, sendDigest/);
    expect(r.out).toMatch(/crons:\s+syncOrders:0 3 \* \* \*, sendDigest:0 8 \* \* 1/);
  });

  it('check lists every problem with its path and exits 1', () => {
    const r = run(['check'], INVALID);
    expect(r.code).toBe(1);
    expect(r.err).toContain('crons[0].flow: "syncOrderz" is not a registered flow');
    expect(r.err).toContain('worker.concurrency: must be a positive integer');
  });

  it('check reports environment problems too (production without ENCRYPTION_KEY)', () => {
    const r = run(['check'], MINIMAL, baseEnv({ NODE_ENV: 'production', PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's' }));
    expect(r.code).toBe(1);
    expect(r.err).toContain('ENCRYPTION_KEY is required in production');
  });

  it('check reports environment and platform problems together', () => {
    const r = run(['check'], MINIMAL, baseEnv({ NODE_ENV: 'production', PLATFORM_API_SECRET: 's', LOG_LEVEL: 'loud' }));
    expect(r.code).toBe(1);
    expect(r.err).toContain('ENCRYPTION_KEY is required in production');
    expect(r.err).toContain('LOG_LEVEL: "loud" is not a log level');
    expect(r.err).toContain('PLATFORM_API_KEY: required in single-app mode');
  });

  it('check loads the routes/ folder: it lists the routes and reports a clash or a route without auth', async () => {
    const inProcess = async (cwd: string) => {
      const io = { out: [] as string[], err: [] as string[] };
      const code = await main(['check'], { out: (l) => io.out.push(l), err: (l) => io.err.push(l), cwd, env: baseEnv() });
      return { code, out: io.out.join('\n'), err: io.err.join('\n') };
    };
    const clash = await inProcess(resolve(here, '../fixtures/clash-app'));
    expect(clash.code).toBe(1);
    expect(clash.err).toContain('routes/a.ts and routes/a/index.ts both map to /routes/a');
    const noAuth = await inProcess(resolve(here, '../fixtures/noauth-app'));
    expect(noAuth.code).toBe(1);
    expect(noAuth.err).toContain('routes/hook.ts: declares no auth');
    const demo = await inProcess(DEMO);
    expect(demo.code).toBe(0);
    expect(demo.out).toMatch(/routes:\s+.*\/routes\/order-events \(POST; auth function\).*\/routes\/orders\/:id \(GET; auth none\)/);
  });

  it('finds no config where there is none, and honours --config', () => {
    const empty = tmp();
    const r = run(['check'], empty);
    expect(r.code).toBe(1);
    expect(r.err).toContain('No service.config.ts found');
    expect(run(['check', '--config', join(MINIMAL, 'service.config.ts')], empty).code).toBe(0);
  });

  it('migrate applies migrations with progress, then reports up to date', () => {
    // a new embedded database is a copy of the package's migrated template (docs/architecture.md, "Start-up")
    const env = baseEnv();
    const first = run(['migrate'], MINIMAL, env);
    expect(first.code).toBe(0);
    expect(first.out).toContain("created it from the package's template, every migration of this version applied already");
    expect(first.out).toMatch(/Up to date \(\d+ migrations already applied\)/);
    // without the template (MERCATO_PGLITE_TEMPLATE=0): initdb, then each migration with its progress
    const bare = baseEnv({ MERCATO_PGLITE_TEMPLATE: '0' });
    const made = run(['migrate'], MINIMAL, bare);
    expect(made.code).toBe(0);
    expect(made.out).not.toContain('template');
    expect(made.out).toMatch(/\[1\/\d+\] applying 0000_init/);
    expect(made.out).toMatch(/Applied \d+ migration\(s\)/);
    const second = run(['migrate'], MINIMAL, bare);
    expect(second.code).toBe(0);
    expect(second.out).toMatch(/Up to date/);
  });

  it('migrate validates DATABASE_URL like every other command, and trims it', () => {
    const bad = run(['migrate'], MINIMAL, baseEnv({ DATABASE_URL: 'mysql://root:hunter2@db/app' }));
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('DATABASE_URL: must be a postgres:// or postgresql:// connection string');
    expect(bad.err).not.toContain('hunter2');
    const blank = run(['migrate'], MINIMAL, baseEnv({ DATABASE_URL: '   ' })); // whitespace only counts as unset
    expect(blank.code).toBe(0);
    expect(blank.out).toContain('Migrating embedded database');
  });

  it('migrate against a database it cannot reach or that refuses it: one line saying what to check, no stack, no password', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const closed = run(['migrate'], MINIMAL, baseEnv({ DATABASE_URL: `postgres://postgres:hunter2@127.0.0.1:${port}/app` }));
    expect(closed.code).toBe(1);
    expect(closed.err.trim()).toBe(
      `mercato migrate: cannot reach the database (ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:${port}); check DATABASE_URL and that PostgreSQL is running and accepts connections`,
    );
    expect(closed.out + closed.err).not.toContain('hunter2');
    if (!process.env.DATABASE_URL) return; // the refusals need a PostgreSQL server
    const server = new URL(process.env.DATABASE_URL);
    const missing = `mercato_missing_${Math.random().toString(36).slice(2, 10)}`;
    const refused = run(['migrate'], MINIMAL, baseEnv({ DATABASE_URL: `postgres://${server.username}@${server.host}/${missing}` }));
    expect(refused.code).toBe(1);
    expect(refused.err.trim()).toBe(
      `mercato migrate: the database refused the connection (3D000: database "${missing}" does not exist); check the user, password and database name in DATABASE_URL`,
    );
    expect(refused.err).not.toMatch(/^\s+at /m);
  });

  it('dev serves the API, runs flows in-process, mints preview tokens, and stops on SIGTERM', async () => {
    const s = startServer(['dev', '--port', '0'], MINIMAL, baseEnv({ PORT: undefined }));
    const url = await s.url;
    expect(s.output()).toContain('admin preview:');
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    const minted = await fetch(`${url}/__mercato/preview/session-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ shop: 'demo-1.myshopify.com' }),
    });
    expect(minted.status).toBe(200);
    const { token } = (await minted.json()) as { token: string };
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const dispatched = await fetch(`${url}/api/flows/hello/run`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ input: { name: 'cli' } }),
    });
    expect(dispatched.status).toBe(202);
    const { runId } = (await dispatched.json()) as { runId: string };
    await expect
      .poll(async () => ((await (await fetch(`${url}/api/runs/${runId}`, { headers: auth })).json()) as { status: string }).status, {
        timeout: 10_000,
      })
      .toBe('completed');
    const bad = await fetch(`${url}/__mercato/preview/session-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"shop":"not a shop"}',
    });
    expect(bad.status).toBe(400);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  it('honours PORT and the platform variables from the environment', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const s = startServer(
      ['dev'],
      MINIMAL,
      baseEnv({ PORT: String(port), PLATFORM_API_KEY: 'own-key', PLATFORM_API_SECRET: 'own-secret' }),
    );
    expect(await s.url).toBe(`http://localhost:${port}`);
    expect(s.output()).not.toContain('using development values');
    s.child.kill('SIGINT');
    expect(await s.exited).toBe(0);
  });

  it('dev under the platform CLI (`shopify app dev`): its variables are read, no simulator starts, and the banner says so', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const simPort = port + 1;
    const s = startServer(
      ['dev', '--no-watch'],
      MINIMAL,
      baseEnv({
        BACKEND_PORT: String(port),
        PORT: String(port),
        SHOPIFY_API_KEY: 'cli-client-id',
        SHOPIFY_API_SECRET: 'cli-client-secret',
        SCOPES: 'read_orders',
        SHOPIFY_APP_URL: 'https://tunnel.example.com',
        MERCATO_SIM_PORT: String(simPort),
      }),
    );
    expect(await s.url).toBe(`http://localhost:${port}`);
    const out = s.output();
    expect(out).toMatch(
      /platform: +the real platform \(https:\/\/<shop>\), run by the platform CLI \(SHOPIFY_API_KEY, SHOPIFY_API_SECRET, SCOPES, SHOPIFY_APP_URL, BACKEND_PORT, PORT set\); no simulator/,
    );
    expect(out).not.toContain('simulator at');
    expect(out).not.toContain('using development values');
    expect(out).not.toContain('cli-client-secret');
    // nothing listens where the simulator would
    const simAnswer = await fetch(`http://127.0.0.1:${simPort}/`).then(
      (r) => r.status,
      () => 'refused',
    );
    expect(simAnswer).toBe('refused');
    expect((await fetch(`http://localhost:${port}/healthz`)).status).toBe(200);
    s.child.kill('SIGINT');
    expect(await s.exited).toBe(0);
  });

  it('worker: --concurrency beats worker.concurrency from the config, which beats 5; --prefetch beats worker.prefetch (100)', async () => {
    let prefetch = '';
    const started = (args: string[], config = join(MINIMAL, 'service.config.ts'), extra: Record<string, string> = {}) =>
      new Promise<string>((resolveLine, reject) => {
        const child = spawn(process.execPath, [BIN, 'worker', '--config', config, ...args], {
          cwd: MINIMAL,
          env: baseEnv({ PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's', ...extra }),
        });
        children.push(child);
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /concurrency (\d+); prefetch (\d+)/.exec(out);
          if (m) {
            child.kill('SIGTERM');
            prefetch = m[2];
            resolveLine(m[1]);
          }
        });
        child.on('exit', () => reject(new Error(`worker exited: ${out}`)));
      });
    expect(await started(['--concurrency=3'])).toBe('3');
    // the demo's provider has a secret field: its worker needs a key (docs/secrets.md)
    expect(await started([], join(DEMO, 'service.config.ts'), { ENCRYPTION_KEY: KEY })).toBe('5'); // demo sets worker.concurrency 5
    expect(await started([])).toBe('2'); // minimal-app sets worker.concurrency 2
    expect(prefetch).toBe('100');
    expect(await started(['--prefetch=0'])).toBe('2');
    expect(prefetch).toBe('0');
  });

  it('dev and start refuse to start with invalid public routes, naming the files', () => {
    const env = baseEnv({ PORT: '0' });
    const clash = run(['dev'], resolve(here, '../fixtures/clash-app'), env);
    expect(clash.code).toBe(1);
    expect(clash.err).toContain('routes/a.ts and routes/a/index.ts both map to /routes/a');
    expect(clash.err).not.toContain('    at '); // a clear message, no stack trace
    const noAuth = run(
      ['start'],
      resolve(here, '../fixtures/noauth-app'),
      baseEnv({ PORT: '0', PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's' }),
    );
    expect(noAuth.code).toBe(1);
    expect(noAuth.err).toContain('routes/hook.ts: declares no auth');
  });

  it('never offers the admin preview in production or in start', async () => {
    for (const [cmd, extra] of [
      ['dev', { NODE_ENV: 'production' }],
      ['start', {}],
    ] as const) {
      const s = startServer(
        [cmd, '--port', '0'],
        MINIMAL,
        baseEnv({ PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's', ENCRYPTION_KEY: KEY, ...extra }),
      );
      const url = await s.url;
      const res = await fetch(`${url}/__mercato/preview/session-token`, { method: 'POST', body: '{"shop":"demo-1.myshopify.com"}' });
      expect(res.status, cmd).toBe(404);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }
  });
});
