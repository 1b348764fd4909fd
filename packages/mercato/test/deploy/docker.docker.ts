/**
 * The container image, for real (`npm run test:docker`, kept out of `npm test`: it needs root, a Docker daemon and
 * minutes). It makes sure a daemon answers (scripts/docker/ensure-docker.sh; the suite is skipped, saying why, only when
 * Docker cannot be installed or started), makes the offline base image when it is missing (scripts/docker/base-image.sh,
 * kept as a cache), builds the Dockerfile of the repository on it, then runs a one-shot `migrate` container and a `start`
 * and a `worker` container against a fresh database of the host's PostgreSQL (`--network host`); then brings
 * docker-compose.yml up with two workers, its postgres:15 replaced (by an override file) with a stand-in made from
 * Debian's postgresql-15 (scripts/docker/postgres-image.sh), since no registry can be reached. It removes the
 * containers, volumes, the app image, the build stages and the database it made; the two base images stay as a cache.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import demo from '../../../../examples/demo/service.config.ts';
import { createTestDatabase, type TestDatabase } from '../../src/db/testing.ts';
import { silentLogger } from '../../src/logger.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const BASE_IMAGE = process.env.MERCATO_BASE_IMAGE ?? 'mercato-node20-bookworm-offline:local';
/** The readiness endpoint the image's HEALTHCHECK calls too. */
const READY_PATH = '/readyz';
const suffix = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
const IMAGE = `mercato-demo-test:${suffix}`;
const WEB = `mercato-test-web-${suffix}`;
const WORKER = `mercato-test-worker-${suffix}`;
const MIGRATE = `mercato-test-migrate-${suffix}`;
const POSTGRES_IMAGE = process.env.MERCATO_POSTGRES_IMAGE ?? 'mercato-postgres15-offline:local';

function sh(command: string, args: string[], options: { timeoutMs?: number; allowFail?: boolean } = {}) {
  const r = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', timeout: options.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 });
  if (!options.allowFail && r.status !== 0)
    throw new Error(
      `${command} ${args.join(' ')} exited ${r.status ?? r.signal}:\n${(r.stdout ?? '').slice(-4000)}\n${(r.stderr ?? '').slice(-4000)}`,
    );
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

const docker = (args: string[], options?: { timeoutMs?: number; allowFail?: boolean }) => sh('docker', args, options);

/** Null when a daemon answers; otherwise why not (the only reason to skip). */
function dockerUnavailable(): string | null {
  const r = spawnSync('bash', [join(ROOT, 'scripts/docker/ensure-docker.sh')], { encoding: 'utf8', timeout: 600_000 });
  return r.status === 0 ? null : (r.stderr || `ensure-docker.sh exited ${r.status ?? r.signal}`).trim();
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function until<T>(what: string, deadlineMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const unavailable = dockerUnavailable();
if (unavailable) process.stdout.write(`test:docker skipped: ${unavailable}\n`);

describe.skipIf(unavailable !== null)('test:docker', () => {
  const timings: Record<string, number> = {};

  beforeAll(() => {
    let t = Date.now();
    sh('bash', [join(ROOT, 'scripts/docker/base-image.sh'), BASE_IMAGE], { timeoutMs: 900_000 });
    timings.baseImageMs = Date.now() - t;
    t = Date.now();
    docker(['build', '--build-arg', `BASE_IMAGE=${BASE_IMAGE}`, '-t', IMAGE, '.'], { timeoutMs: 1_500_000 });
    timings.buildMs = Date.now() - t;
  }, 2_400_000);

  afterAll(() => {
    docker(['rmi', '-f', IMAGE], { allowFail: true });
    // the build stages' images (labelled in the Dockerfile) are the layer cache of the next build: kept on request
    if (!process.env.MERCATO_DOCKER_KEEP_CACHE)
      docker(['image', 'prune', '-f', '--filter', 'label=org.mercato.build-stage'], { allowFail: true });
    process.stdout.write(`test:docker timings: ${JSON.stringify(timings)}\n`);
  }, 120_000);

  describe('the image of the demo app, on the host PostgreSQL', () => {
    let database: TestDatabase;
    let port: number;
    let workerPort: number;
    let base: string;
    let env: Record<string, string>;

    const envArgs = () => Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);

    beforeAll(async () => {
      process.env.DATABASE_URL ??= 'postgres://postgres@127.0.0.1:5432/postgres';
      database = await createTestDatabase('postgres', { migrate: false });
      port = await freePort();
      workerPort = await freePort();
      base = `http://127.0.0.1:${port}`;
      env = {
        DATABASE_URL: database.url!,
        ENCRYPTION_KEY: randomBytes(32).toString('hex'),
        PLATFORM_API_KEY: 'docker-test-key',
        PLATFORM_API_SECRET: 'docker-test-secret',
        PORT: String(port),
      };

      const t = Date.now();
      const migrated = docker(['run', '--name', MIGRATE, '--network', 'host', ...envArgs(), IMAGE, 'migrate'], { timeoutMs: 300_000 });
      timings.migrateMs = Date.now() - t;
      expect(migrated.stdout + migrated.stderr).toMatch(/migrat/i);

      docker(['run', '-d', '--init', '--name', WEB, '--network', 'host', ...envArgs(), IMAGE]);
      // the worker's operations port: its /readyz (with the worker loop) is what the image's HEALTHCHECK asks
      docker([
        'run',
        '-d',
        '--init',
        '--name',
        WORKER,
        '--network',
        'host',
        '-e',
        `MERCATO_METRICS_PORT=${workerPort}`,
        ...envArgs(),
        IMAGE,
        'worker',
      ]);
    }, 600_000);

    afterAll(async () => {
      for (const name of [WEB, WORKER, MIGRATE]) docker(['rm', '-f', name], { allowFail: true });
      await database?.drop();
    }, 120_000);

    it('the one-shot migrate container applied every migration and exited 0', async () => {
      expect(docker(['inspect', '-f', '{{.State.ExitCode}}', MIGRATE]).stdout.trim()).toBe('0');
      const [row] = await database.db.query<{ n: number }>(sql`select count(*)::int as n from mercato_migrations`);
      expect(row!.n).toBeGreaterThan(0);
    });

    it(`the start container answers ${READY_PATH} with 200 JSON`, async () => {
      const body = await until(`${READY_PATH} to answer 200`, 180_000, async () => {
        const res = await fetch(`${base}${READY_PATH}`);
        if (res.status !== 200) return undefined;
        expect(res.headers.get('content-type')).toMatch(/application\/json/);
        return (await res.json()) as { ok?: unknown };
      });
      expect(body.ok).toBe(true);
    }, 200_000);

    it('serves the built admin UI at /', async () => {
      const res = await until('the admin UI', 120_000, async () => {
        const r = await fetch(`${base}/`);
        return r.status === 200 ? r : undefined;
      });
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
      const html = await res.text();
      const asset = html.match(/(?:src|href)="(\/assets\/[^"]+\.js)"/)?.[1];
      expect(asset, 'index.html references a hashed script under /assets/').toBeDefined();
      const script = await fetch(`${base}${asset}`);
      expect(script.status).toBe(200);
      expect((await script.text()).length).toBeGreaterThan(1000);
    }, 150_000);

    it("the image's HEALTHCHECK calls the readiness endpoint and reports healthy", async () => {
      const check = docker(['inspect', '-f', '{{json .Config.Healthcheck.Test}}', IMAGE]).stdout;
      expect(check).toContain(READY_PATH);
      const status = await until('the start container to be healthy', 180_000, async () => {
        const s = docker(['inspect', '-f', '{{.State.Health.Status}}', WEB]).stdout.trim();
        return s === 'healthy' || s === 'unhealthy' ? s : undefined;
      });
      expect(status, docker(['inspect', '-f', '{{json .State.Health.Log}}', WEB]).stdout).toBe('healthy');
      const worker = await until('the worker container to be healthy', 180_000, async () => {
        const s = docker(['inspect', '-f', '{{.State.Health.Status}}', WORKER]).stdout.trim();
        return s === 'healthy' || s === 'unhealthy' ? s : undefined;
      });
      expect(worker, docker(['inspect', '-f', '{{json .State.Health.Log}}', WORKER]).stdout).toBe('healthy');
      const ready = (await (await fetch(`http://127.0.0.1:${workerPort}${READY_PATH}`)).json()) as { ok?: unknown; checks?: unknown };
      expect(ready.ok).toBe(true);
      expect(JSON.stringify(ready.checks)).toContain('worker');
    }, 400_000);

    it('runs as a non-root user with NODE_ENV=production', () => {
      expect(docker(['inspect', '-f', '{{.Config.User}}', IMAGE]).stdout.trim()).toBe('node');
      expect(docker(['exec', WEB, 'id', '-u']).stdout.trim()).not.toBe('0');
      expect(docker(['exec', WORKER, 'id', '-u']).stdout.trim()).not.toBe('0');
      expect(docker(['exec', WEB, 'node', '-p', 'process.env.NODE_ENV']).stdout.trim()).toBe('production');
    });

    it('holds production dependencies only', () => {
      const listing = docker([
        'run',
        '--rm',
        '--entrypoint',
        'sh',
        IMAGE,
        '-c',
        'ls /app/node_modules /app/node_modules/.bin 2>/dev/null; ls /app/packages',
      ]).stdout;
      const names = new Set(listing.split(/\s+/).filter(Boolean));
      for (const present of ['pg', 'hono', 'esbuild', 'mercato', 'zod']) expect(names, present).toContain(present);
      for (const dev of ['vitest', 'typescript', 'vite', 'tsx', 'drizzle-kit', 'eslint', 'prettier', 'react', 'platform-sim', 'admin-ui'])
        expect(names, dev).not.toContain(dev);
    });

    it('a dispatched run completes in the worker container', async () => {
      // dispatched here, through the library on the same database (as a route of the app would): this process has no
      // worker, so only the worker container can execute it
      const runtime: Runtime = await createRuntime({
        instance: demo,
        projectDir: mkdtempSync(join(tmpdir(), 'mercato-docker-test-')),
        mode: 'test',
        migrate: false,
        logger: silentLogger(),
        env: { ...env, NODE_ENV: 'test' },
      });
      try {
        const { runId } = await runtime.dispatch({
          appHandle: 'default',
          shop: null,
          flowName: 'sendDigest',
          input: { channel: 'slack' },
          trigger: 'api',
        });
        const run = await until('the run to complete', 120_000, async () => {
          const [row] = await database.db.query<{ status: string; output: unknown }>(
            sql`select status, output from runs where id = ${runId}::uuid`,
          );
          if (row?.status === 'failed') throw new Error(`run failed: ${JSON.stringify(row)}`);
          return row?.status === 'completed' ? row : undefined;
        });
        expect(run.output).toEqual({ sent: true });
        const logs = docker(['logs', WORKER]).stdout;
        expect(logs).toContain(runId);
        expect(logs).toMatch(/"event":"run\.completed"/);
      } finally {
        await runtime.close();
      }
    }, 150_000);

    it('stops on SIGTERM with exit code 0 (graceful shutdown)', () => {
      docker(['stop', '-t', '30', WORKER], { timeoutMs: 60_000 });
      docker(['stop', '-t', '30', WEB], { timeoutMs: 60_000 });
      expect(docker(['inspect', '-f', '{{.State.ExitCode}}', WORKER]).stdout.trim()).toBe('0');
      expect(docker(['inspect', '-f', '{{.State.ExitCode}}', WEB]).stdout.trim()).toBe('0');
      expect(docker(['logs', WEB]).stdout).toMatch(/SIGTERM received, shutting down/);
    }, 120_000);
  });

  /** `docker compose` (the plugin) or `docker-compose` (Compose 1); undefined when neither is installed. */
  const composeCommand = (): string[] | undefined => {
    if (spawnSync('docker', ['compose', 'version']).status === 0) return ['docker', 'compose'];
    if (spawnSync('docker-compose', ['version']).status === 0) return ['docker-compose'];
    return undefined;
  };

  describe('docker-compose.yml, brought up for real', () => {
    const compose = composeCommand();
    const project = `mercato-test-${suffix}`;
    let port: number;
    let env: NodeJS.ProcessEnv;
    let override: string;
    const run = (args: string[], options?: { timeoutMs?: number; allowFail?: boolean }) => {
      const r = spawnSync(compose![0]!, [...compose!.slice(1), '-p', project, '-f', 'docker-compose.yml', '-f', override, ...args], {
        cwd: ROOT,
        env,
        encoding: 'utf8',
        timeout: options?.timeoutMs ?? 300_000,
      });
      if (!options?.allowFail && r.status !== 0) throw new Error(`compose ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
      return r.stdout ?? '';
    };
    const containers = (service: string) => run(['ps', '-q', service]).split('\n').filter(Boolean);

    beforeAll(async () => {
      if (!compose) return;
      // postgres:15 cannot be pulled without a registry: a stand-in of it made from Debian's postgresql-15 replaces it
      sh('bash', [join(ROOT, 'scripts/docker/postgres-image.sh'), POSTGRES_IMAGE], { timeoutMs: 900_000 });
      override = join(mkdtempSync(join(tmpdir(), 'mercato-compose-')), 'offline.yml');
      writeFileSync(override, `services:\n  postgres:\n    image: ${POSTGRES_IMAGE}\n`);
      port = await freePort();
      env = {
        ...process.env,
        ENCRYPTION_KEY: randomBytes(32).toString('hex'),
        MERCATO_IMAGE: IMAGE,
        MERCATO_PORT: String(port),
        BASE_IMAGE,
      };
      run(['up', '-d', '--no-build', '--scale', 'worker=2'], { timeoutMs: 600_000 });
    }, 1_200_000);

    afterAll(() => {
      if (compose) run(['down', '-v', '--remove-orphans'], { allowFail: true, timeoutMs: 180_000 });
    }, 200_000);

    it.skipIf(!compose)(
      `migrates once, then serves ${READY_PATH} healthy with two workers running`,
      async () => {
        const [migrate] = containers('migrate');
        expect(docker(['inspect', '-f', '{{.State.Status}} {{.State.ExitCode}}', migrate!]).stdout.trim()).toBe('exited 0');
        const body = await until(`${READY_PATH} through the published port`, 180_000, async () => {
          const res = await fetch(`http://127.0.0.1:${port}${READY_PATH}`);
          return res.status === 200 && /json/.test(res.headers.get('content-type') ?? '')
            ? ((await res.json()) as { ok?: unknown })
            : undefined;
        });
        expect(body.ok).toBe(true);
        const [web] = containers('web');
        const health = await until('the web container to be healthy', 180_000, async () => {
          const s = docker(['inspect', '-f', '{{.State.Health.Status}}', web!]).stdout.trim();
          return s === 'healthy' || s === 'unhealthy' ? s : undefined;
        });
        expect(health).toBe('healthy');
        const workers = containers('worker');
        expect(workers).toHaveLength(2);
        for (const id of workers) {
          expect(docker(['inspect', '-f', '{{.State.Status}}', id]).stdout.trim()).toBe('running');
          const s = await until('a worker container to be healthy', 180_000, async () => {
            const h = docker(['inspect', '-f', '{{.State.Health.Status}}', id]).stdout.trim();
            return h === 'healthy' || h === 'unhealthy' ? h : undefined;
          });
          expect(s).toBe('healthy');
          expect(docker(['logs', id]).stdout).toMatch(/mercato worker .*database PostgreSQL postgres:\/\/mercato.*@postgres:5432\/mercato/);
        }
      },
      400_000,
    );

    it.skipIf(!compose)(
      'stops every process gracefully (exit 0) within its stop_grace_period',
      () => {
        const ids = [...containers('web'), ...containers('worker')];
        run(['stop'], { timeoutMs: 120_000 });
        for (const id of ids) expect(docker(['inspect', '-f', '{{.State.ExitCode}}', id]).stdout.trim(), id).toBe('0');
      },
      150_000,
    );
  });
});
