/**
 * The deployment files, read as files (the image itself is built and run by `npm run test:docker`, docker.docker.ts):
 * docker-compose.yml (parsed with `yaml`, its `${…}` interpolated as Compose does, the environment it gives checked
 * by the runtime's own start-up validation), the Dockerfile's shape, and docs/deploy.md naming every variable the
 * code reads.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import demo from '../../../../examples/demo/service.config.ts';
import { PORT_VARIABLES } from '../../src/app/env.ts';
import { PLATFORM_VARIABLES } from '../../src/app/platform.ts';
import { resolveStartup } from '../../src/app/startup.ts';
import { ConfigError } from '../../src/app/validate.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Compose's interpolation: `${X}`, `${X:-default}`, `${X-default}`, `${X:?message}`, `${X?message}`, `$$`. */
function interpolate(text: string, env: Record<string, string | undefined>): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g, (whole, name?: string, op?: string, arg?: string) => {
    if (whole === '$$') return '$';
    const value = env[name!];
    const unset = op?.startsWith(':') ? !value : value === undefined;
    if (op?.endsWith('-')) return unset ? arg! : value!;
    if (op?.endsWith('?') && unset) throw new Error(`${name}: ${arg}`);
    return value ?? '';
  });
}

interface Service {
  image?: string;
  build?: { context: string; args?: Record<string, string> };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  container_name?: string;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
  volumes?: string[];
  restart?: string;
  init?: boolean;
  stop_grace_period?: string;
}

function compose(env: Record<string, string | undefined>): { services: Record<string, Service>; volumes: Record<string, unknown> } {
  return parse(interpolate(read('docker-compose.yml'), env), { merge: true });
}

const KEY = randomBytes(32).toString('hex');

describe('docker-compose.yml', () => {
  const file = compose({ ENCRYPTION_KEY: KEY });
  const { services } = file;

  it('has PostgreSQL 15 on a named volume, a one-shot migrate, web and worker', () => {
    expect(Object.keys(services).sort()).toEqual(['migrate', 'postgres', 'web', 'worker']);
    expect(services.postgres!.image).toMatch(/^postgres:15(\b|$)/);
    const volume = services.postgres!.volumes!.find((v) => v.endsWith(':/var/lib/postgresql/data'));
    expect(volume).toBeDefined();
    const name = volume!.split(':')[0]!;
    expect(name, 'a named volume, not a host path').toMatch(/^[a-z][a-z0-9_-]*$/);
    expect(file.volumes).toHaveProperty(name);
    expect(services.postgres!.healthcheck!.test!.join(' ')).toContain('pg_isready');
  });

  it('runs each mercato command from the image built by the Dockerfile', () => {
    expect(services.migrate!.command).toEqual(['migrate']);
    expect(services.web!.command).toEqual(['start']);
    expect(services.worker!.command).toEqual(['worker']);
    for (const name of ['migrate', 'web', 'worker']) {
      const s = services[name]!;
      expect(s.build?.context, name).toBe('.');
      expect(statSync(join(ROOT, s.build!.context, 'Dockerfile')).isFile()).toBe(true);
      expect(s.build?.args?.BASE_IMAGE, name).toBe('node:20-bookworm-slim');
      expect(s.image, name).toBe(services.web!.image);
      expect(s.init, `${name}: an init process forwards SIGTERM`).toBe(true);
    }
    expect(compose({ ENCRYPTION_KEY: KEY, BASE_IMAGE: 'offline:local' }).services.worker!.build!.args!.BASE_IMAGE).toBe('offline:local');
  });

  it('orders the start: postgres healthy → migrate completed → web and worker', () => {
    expect(services.migrate!.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(services.migrate!.restart).toBe('no');
    for (const name of ['web', 'worker']) {
      expect(services[name]!.depends_on, name).toEqual({ migrate: { condition: 'service_completed_successfully' } });
      expect(services[name]!.restart, name).toBe('unless-stopped');
    }
  });

  it('lets the worker scale (`--scale worker=N`): no published port, no container name; its health on the operations port', () => {
    expect(services.worker!.ports).toBeUndefined();
    expect(services.worker!.container_name).toBeUndefined();
    expect(services.web!.container_name).toBeUndefined();
    // the image's HEALTHCHECK asks MERCATO_METRICS_PORT when it is set (the worker's /readyz, with its loop)
    expect(services.worker!.healthcheck).toBeUndefined();
    expect(services.worker!.environment?.MERCATO_METRICS_PORT).toBe('9464');
    expect(services.migrate!.healthcheck).toEqual({ disable: true });
    // web keeps the image's HEALTHCHECK (/readyz)
    expect(services.web!.healthcheck).toBeUndefined();
    expect(services.web!.ports).toEqual(['3000:3000']);
  });

  it('gives processes more time to stop than their own grace (lease 10 s, HTTP drain 10 s)', () => {
    for (const name of ['web', 'worker']) {
      const seconds = Number(/^(\d+)s$/.exec(services[name]!.stop_grace_period ?? '')?.[1]);
      expect(seconds, name).toBeGreaterThan(10);
    }
  });

  it('gives an environment the runtime accepts for `start` and `worker`, pointing at the postgres service', () => {
    const env = services.web!.environment!;
    expect(services.worker!.environment).toEqual({ ...env, MERCATO_METRICS_PORT: '9464' });
    expect(services.migrate!.environment).toEqual(env);
    expect(env.NODE_ENV).toBe('production');
    const url = new URL(env.DATABASE_URL!);
    const pg = services.postgres!.environment!;
    expect(url.hostname).toBe('postgres');
    expect(url.username).toBe(pg.POSTGRES_USER);
    expect(url.password).toBe(pg.POSTGRES_PASSWORD);
    expect(url.pathname).toBe(`/${pg.POSTGRES_DB}`);
    for (const mode of ['start', 'worker'] as const) {
      const { env: runtimeEnv, platform } = resolveStartup(
        demo.config.shopify,
        services[mode === 'start' ? 'web' : 'worker']!.environment!,
        {
          projectDir: ROOT,
          mode,
        },
      );
      expect(runtimeEnv.production).toBe(true);
      expect(runtimeEnv.encryptionKey).toBe(KEY);
      expect(runtimeEnv.databaseUrl).toBe(env.DATABASE_URL);
      expect(runtimeEnv.platformOrigin).toBeUndefined();
      expect(runtimeEnv.metricsPort).toBe(mode === 'worker' ? 9464 : undefined);
      expect(platform.apps.map((a) => a.handle)).toEqual(['default']);
    }
  });

  it('refuses to start without ENCRYPTION_KEY, and the runtime rejects a malformed one', () => {
    expect(() => compose({})).toThrow(/ENCRYPTION_KEY/);
    const env = compose({ ENCRYPTION_KEY: 'not-a-key' }).services.web!.environment!;
    expect(() => resolveStartup(demo.config.shopify, env, { projectDir: ROOT, mode: 'start' })).toThrow(ConfigError);
  });

  it('passes every variable it sets to a documented name', () => {
    const documented = read('docs/deploy.md');
    for (const name of Object.keys(services.worker!.environment!)) expect(documented, name).toContain(`\`${name}\``);
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');

  it('is multi-stage on BASE_IMAGE (default node:20-bookworm-slim), non-root, production-only, with a HEALTHCHECK on /readyz', () => {
    expect(dockerfile).toMatch(/^ARG BASE_IMAGE=node:20-bookworm-slim$/m);
    expect(dockerfile.match(/^FROM \$\{BASE_IMAGE\}/gm)!.length).toBeGreaterThanOrEqual(3);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^ENV NODE_ENV=production/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK [^\n]*(\\\n[^\n]*)*\/readyz/m);
    // the admin UI is built inside (build.mjs copies it to dist/admin-ui) and dist/ is copied into the runtime stage
    expect(dockerfile).toMatch(/build\.mjs/);
    expect(dockerfile).toMatch(/COPY --from=build \/repo\/packages\/mercato\/dist /);
  });

  it('is the shape `mercato init` gives an app of its own', () => {
    const template = readFileSync(join(ROOT, 'packages/mercato/templates/app/Dockerfile'), 'utf8');
    expect(template).toMatch(/^ARG BASE_IMAGE=node:20-bookworm-slim$/m);
    expect(template).toMatch(/npm ci --omit=dev/);
    expect(template).toMatch(/^USER node$/m);
    expect(template).toMatch(/\/readyz/);
  });
});

/** The names of environment variables the code under src/ reads. */
function variablesReadBySrc(): Set<string> {
  const names = new Set<string>();
  const patterns = [
    /\b(?:read|envValue)\(\s*\w*env,\s*'([A-Z][A-Z0-9_]+)'/gi,
    /\b\w*[eE]nv\.([A-Z][A-Z0-9_]+)\b/g,
    /\b\w*[eE]nv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g,
  ];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
        const text = readFileSync(full, 'utf8');
        for (const pattern of patterns) for (const m of text.matchAll(pattern)) names.add(m[1]!);
      }
    }
  };
  walk(join(ROOT, 'packages/mercato/src'));
  return names;
}

describe('docs/deploy.md', () => {
  it('names every environment variable the code reads', () => {
    const doc = read('docs/deploy.md');
    const names = variablesReadBySrc();
    // read through lists of names (src/app/platform.ts PLATFORM_VARIABLES, src/app/env.ts PORT_VARIABLES)
    for (const name of [...Object.values(PLATFORM_VARIABLES).flat(), ...PORT_VARIABLES]) names.add(name);
    expect(names.size).toBeGreaterThan(10);
    const missing = [...names].filter((name) => !doc.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });
});
