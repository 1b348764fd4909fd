/**
 * `mercato init <dir>` (src/cli/init.ts). The scaffolds are written under the workspace's git-ignored test-artifacts/
 * folder, so that their `mercato`, `zod` and `tsx` imports resolve from the workspace's node_modules without an npm
 * install; the folder is removed at the end. Validity is proven the ways a user would see it: the config loads and
 * validates (as `mercato check` does), the route file has auth and a handler, `tsc` passes, the scaffold's own
 * `npm test` passes, and a run of its flow dispatched through its route completes on a real runtime.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse as parseToml } from 'smol-toml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LATEST_STABLE_API_VERSION } from '../../src/app/platform.ts';
import { isMercatoInstance } from '../../src/app/app.ts';
import { resolveStartup } from '../../src/app/startup.ts';
import { runCheck } from '../../src/cli/check.ts';
import { applyDevDefaults } from '../../src/cli/dev-defaults.ts';
import { isValidPackageName, mercatoDependencySpec, packageNameFor, runInit, TEMPLATE_DIR } from '../../src/cli/init.ts';
import { createTestDatabase, type TestDatabase } from '../../src/db/testing.ts';
import { inspectRoutes } from '../../src/routes/loader.ts';
import { MERCATO_VERSION } from '../../src/version.ts';
import { type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';

const WORKSPACE = fileURLToPath(new URL('../../../../', import.meta.url));
const MERCATO_PKG = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
const ROOT_PKG = JSON.parse(readFileSync(join(WORKSPACE, 'package.json'), 'utf8'));
const TSC = join(WORKSPACE, 'node_modules', 'typescript', 'bin', 'tsc');

const EXPECTED_FILES = [
  '.dockerignore',
  '.gitignore',
  'Dockerfile',
  'README.md',
  'flows/sync-orders.ts',
  'package.json',
  'routes/sync.ts',
  'service.config.ts',
  'shopify.app.toml',
  'shopify.web.toml',
  'test/sync-orders.test.ts',
  'tsconfig.json',
  'webhooks/orders-create.ts',
];

let base: string;

beforeAll(() => {
  mkdirSync(join(WORKSPACE, 'test-artifacts'), { recursive: true });
  base = mkdtempSync(join(WORKSPACE, 'test-artifacts', 'init-'));
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

async function init(dir: string, options: { force?: boolean; mercatoSpec?: string; cwd?: string } = {}) {
  const lines: string[] = [];
  const code = await runInit({
    dir,
    cwd: options.cwd ?? base,
    force: options.force,
    mercatoSpec: options.mercatoSpec,
    out: (l) => lines.push(l),
  });
  return { code, output: lines.join('\n') };
}

/** Every file under `dir`, `/`-separated and sorted (node_modules and .mercato left out). */
function filesUnder(dir: string, prefix = ''): string[] {
  const files: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === '.mercato') continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) files.push(...filesUnder(full, `${prefix}${name}/`));
    else files.push(`${prefix}${name}`);
  }
  return files.sort();
}

const major = (spec: string) => /(\d+)/.exec(spec)?.[1];

describe('mercato init: the scaffold', () => {
  let app: string;
  let output: string;

  beforeAll(async () => {
    const result = await init('my-shop-app');
    expect(result.code).toBe(0);
    output = result.output;
    app = join(base, 'my-shop-app');
  });

  it('creates every file, with .gitignore renamed from the template and no placeholder left', () => {
    expect(filesUnder(app)).toEqual(EXPECTED_FILES);
    expect(existsSync(join(TEMPLATE_DIR, 'gitignore'))).toBe(true); // stored without the dot: npm pack drops .gitignore
    expect(existsSync(join(app, 'gitignore'))).toBe(false);
    for (const file of EXPECTED_FILES) expect(readFileSync(join(app, file), 'utf8'), file).not.toMatch(/\{\{\w+\}\}/);
    const ignored = readFileSync(join(app, '.gitignore'), 'utf8').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['node_modules/', '.mercato/', '.env*']));
  });

  it('writes a package.json with the name, the scripts and dependencies matching the workspace', () => {
    const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: 'my-shop-app', private: true, type: 'module' });
    expect(pkg.scripts).toMatchObject({ dev: 'mercato dev', start: 'mercato start', worker: 'mercato worker', check: 'mercato check' });
    expect(pkg.scripts.test).toMatch(/^node --import tsx --test /);
    expect(pkg.dependencies).toEqual({ mercato: `^${MERCATO_VERSION}`, zod: MERCATO_PKG.dependencies.zod });
    expect(major(pkg.dependencies.zod)).toBe('4');
    expect(major(pkg.devDependencies.typescript)).toBe(major(ROOT_PKG.devDependencies.typescript));
    expect(major(pkg.devDependencies['@types/node'])).toBe(major(ROOT_PKG.devDependencies['@types/node']));
    expect(major(pkg.devDependencies.tsx)).toBe('4');
  });

  it('writes a tsconfig.json as the brief of the app wants it', () => {
    const { compilerOptions } = JSON.parse(readFileSync(join(app, 'tsconfig.json'), 'utf8'));
    expect(compilerOptions).toMatchObject({
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      allowImportingTsExtensions: true,
      noEmit: true,
      types: ['node'],
    });
  });

  it('prints what it created and the next steps', () => {
    for (const file of EXPECTED_FILES) expect(output).toContain(`  ${file}`);
    expect(output).toMatch(/Next steps:\n {2}cd my-shop-app\n {2}npm install\n {2}npm run dev/);
    const readme = readFileSync(join(app, 'README.md'), 'utf8');
    expect(readme).toMatch(/^# my-shop-app\n/);
    for (const text of ['npm install', 'npm run dev', 'http://localhost:3000/', 'routes.md', 'flows.md']) expect(readme).toContain(text);
  });

  it('loads in-process: the default export is a Mercato instance and the config validates as `mercato check` judges it', async () => {
    const mod = await import(pathToFileURL(join(app, 'service.config.ts')).href);
    const instance = mod.default;
    expect(isMercatoInstance(instance)).toBe(true);
    expect(Object.keys(instance.config.flows)).toEqual(['syncOrders']);
    expect(instance.config.crons).toMatchObject([{ flow: 'syncOrders', schedule: '0 3 * * *', shops: 'all' }]);
    expect(Object.keys(instance.config.webhooks)).toEqual(['orders/create']);
    const flow = instance.config.flows.syncOrders;
    expect(flow.input.parse({})).toEqual({ since: '1d', largeOrderTotal: 100 });
    expect(flow.input.safeParse({ since: 'yesterday' }).success).toBe(false);
    // the environment and platform checks of `mercato check` (development values filled in as `mercato dev` does)
    const env: NodeJS.ProcessEnv = {};
    applyDevDefaults(env, instance.config.shopify);
    expect(() => resolveStartup(instance.config.shopify, env, { projectDir: app, mode: 'check' })).not.toThrow();
  });

  it('has a route file that declares auth and a handler', async () => {
    const { routes, problems } = await inspectRoutes(join(app, 'routes'));
    expect(problems).toEqual([]);
    expect(routes.map((r) => [r.path, r.methods, typeof r.definition.auth])).toEqual([['/routes/sync', ['POST'], 'function']]);
  });

  it('passes `mercato check`', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCheck({}, { out: (l) => out.push(l), err: (l) => err.push(l), cwd: app, env: {} });
    expect({ code, err }).toEqual({ code: 0, err: [] });
    expect(out.join('\n')).toContain('/routes/sync (POST; auth function)');
    rmSync(join(app, '.mercato'), { recursive: true, force: true });
  });

  it("writes the platform CLI's shopify.app.toml and shopify.web.toml: scopes, every handler and the compliance topics subscribed, the dev command", () => {
    const appToml = parseToml(readFileSync(join(app, 'shopify.app.toml'), 'utf8')) as any;
    expect(appToml.client_id).toMatch(/REPLACE/);
    expect(appToml.name).toBe('my-shop-app');
    expect(appToml.access_scopes.scopes).toBe('read_orders');
    expect(appToml.webhooks.api_version).toBe(LATEST_STABLE_API_VERSION);
    const subscriptions = appToml.webhooks.subscriptions as Array<{ topics?: string[]; compliance_topics?: string[]; uri: string }>;
    expect(subscriptions.flatMap((s) => s.topics ?? []).sort()).toEqual(['app/uninstalled', 'orders/create']);
    expect(subscriptions.flatMap((s) => s.compliance_topics ?? []).sort()).toEqual([
      'customers/data_request',
      'customers/redact',
      'shop/redact',
    ]);
    expect(new Set(subscriptions.map((s) => s.uri))).toEqual(new Set(['/webhooks']));
    const webToml = parseToml(readFileSync(join(app, 'shopify.web.toml'), 'utf8')) as any;
    expect(webToml.roles).toEqual(['frontend', 'backend']);
    expect(webToml.webhooks_path).toBe('/webhooks');
    const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
    expect(webToml.commands.dev).toBe('npm run dev');
    expect(pkg.scripts.dev).toBe('mercato dev');
    // the scaffold's config reads its scopes from the file
    expect(
      resolveStartup({}, { PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's' }, { projectDir: app, mode: 'check' }).platform.scopes,
    ).toBe('read_orders');
  });

  it('type-checks with tsc', () => {
    // `mercato-source`: in this repository the package's types are its sources (an installed package has dist/types)
    const r = spawnSync(process.execPath, [TSC, '--noEmit', '-p', join(app, 'tsconfig.json'), '--customConditions', 'mercato-source'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect({ status: r.status, out: r.stdout + r.stderr }).toEqual({ status: 0, out: '' });
  });

  it('catches a type error (so the check above means something)', () => {
    const copy = join(base, 'type-error');
    expect(spawnSync('cp', ['-r', app, copy]).status).toBe(0);
    const route = join(copy, 'routes', 'sync.ts');
    writeFileSync(route, readFileSync(route, 'utf8').replace("flowName: 'syncOrders'", "flowName: 'syncOrdrs'"));
    const r = spawnSync(process.execPath, [TSC, '--noEmit', '-p', join(copy, 'tsconfig.json'), '--customConditions', 'mercato-source'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(r.status).not.toBe(0);
    expect(r.stdout).toMatch(/routes\/sync\.ts\(\d+,\d+\): error TS2322: Type '"syncOrdrs"'/);
  });

  it('passes its own `npm test`', () => {
    const r = spawnSync('npm', ['test', '--silent'], {
      cwd: app,
      encoding: 'utf8',
      timeout: 120_000,
      // resolve `mercato` to its sources, as in this repository (no build needed); offline: nothing is fetched
      // (npm_* variables of an enclosing `npm test -w …` would make npm look for a workspace: left out)
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key))),
        NODE_OPTIONS: '--conditions=mercato-source',
        npm_config_offline: 'true',
        npm_config_update_notifier: 'false',
      },
    });
    expect({ status: r.status, out: r.status === 0 ? '' : r.stdout + r.stderr }).toEqual({ status: 0, out: '' });
    expect(r.stdout).toMatch(/(?:#|ℹ) pass 4\b/); // node:test's TAP summary (Node 20 off a terminal) or spec (Node 24)
  });

  describe('on a real runtime', () => {
    let database: TestDatabase;
    let t: TestRuntime;
    afterAll(async () => {
      await t?.close();
      await database?.drop();
    });

    it('its route authenticates, dispatches the flow, and the run completes with both steps', async () => {
      const instance = (await import(pathToFileURL(join(app, 'service.config.ts')).href)).default;
      const route = (await import(pathToFileURL(join(app, 'routes', 'sync.ts')).href)).default;
      database = await createTestDatabase('pglite');
      t = await startTestRuntime(instance, database.db, { worker: true });
      const shop = 'demo-1.myshopify.com';
      const forShop = async ({ shop: s }: { shop: string }) => ({ shop: s, app: { handle: 'default', apiKey: 'k' }, providers: {} });
      const request = (token: string) =>
        new Request('http://localhost/routes/sync', {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
          body: JSON.stringify({ shop, since: '7d' }),
        });

      expect(await route.auth(request('wrong-token'), { forShop, params: {} })).toBeNull();
      const auth = await route.auth(request('dev-sync-token'), { forShop, params: {} });
      expect(auth).toEqual({ shop, since: '7d' });

      const response: Response = await route.POST(request('dev-sync-token'), {
        params: {},
        auth,
        forShop,
        requestId: 'r1',
        dispatchFlow: () => Promise.reject(new Error('the route dispatches through the instance')),
      });
      expect(response.status).toBe(202);
      const { runId, status } = await response.json();
      expect(status).toBe('pending');
      const run = await waitForRun(database.db, runId);
      expect(run).toMatchObject({ status: 'completed', output: { orders: 2, large: 1, total: 222 } });
    });
  });
});

describe('mercato init: directories', () => {
  it('refuses a non-empty directory, naming it and its first entries, and writes nothing', async () => {
    const dir = join(base, 'busy');
    mkdirSync(dir);
    for (const name of ['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt', 'f.txt', 'g.txt']) writeFileSync(join(dir, name), name);
    const { code, output } = await init('busy');
    expect(code).toBe(1);
    expect(output).toContain(`"busy" (${dir}) is not empty`);
    expect(output).toContain('a.txt, b.txt, c.txt, d.txt, e.txt and 2 more');
    expect(output).toContain('--force');
    expect(filesUnder(dir)).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt', 'f.txt', 'g.txt']);
  });

  it('with --force, writes the scaffold over files of the same name and leaves the others', async () => {
    const dir = join(base, 'forced');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.md'), 'keep me');
    writeFileSync(join(dir, 'README.md'), 'old readme');
    const { code, output } = await init('forced', { force: true });
    expect(code).toBe(0);
    expect(readFileSync(join(dir, 'notes.md'), 'utf8')).toBe('keep me');
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toMatch(/^# forced\n/);
    expect(output).toContain('README.md (overwritten)');
    expect(filesUnder(dir)).toEqual([...EXPECTED_FILES, 'notes.md'].sort());
  });

  it('with --force, still refuses when a directory stands where a file goes, before writing anything', async () => {
    const dir = join(base, 'blocked');
    mkdirSync(join(dir, 'package.json'), { recursive: true });
    const { code, output } = await init('blocked', { force: true });
    expect(code).toBe(1);
    expect(output).toContain('package.json (a directory) is in the way');
    expect(filesUnder(dir)).toEqual([]);
  });

  it('accepts an empty directory, a directory holding only .git, and "." (no `cd` step then)', async () => {
    const dir = join(base, 'Empty Dir');
    mkdirSync(join(dir, '.git'), { recursive: true });
    const { code, output } = await init('.', { cwd: dir });
    expect(code).toBe(0);
    expect(output).toContain('Created a Mercato app in the current directory');
    expect(output).toContain('package name "empty-dir"');
    expect(output).not.toContain('cd ');
    expect(output).toMatch(/Next steps:\n {2}npm install\n {2}npm run dev/);
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name).toBe('empty-dir');
  });

  it('creates missing parent directories and quotes the `cd` path for the shell', async () => {
    const { code, output } = await init("nested/it's here");
    expect(code).toBe(0);
    expect(existsSync(join(base, 'nested', "it's here", 'service.config.ts'))).toBe(true);
    expect(output).toContain(`cd 'nested/it'\\''s here'`);
  });

  it('refuses a path that is a file', async () => {
    writeFileSync(join(base, 'a-file'), '');
    const { code, output } = await init('a-file');
    expect(code).toBe(1);
    expect(output).toContain('exists and is not a directory');
  });

  it('writes the --mercato spec; a path is made absolute relative to the current directory', async () => {
    const { code, output } = await init('spec-app', { mercatoSpec: './mercato-0.1.0.tgz' });
    expect(code).toBe(0);
    // the tarball is not there: said, so `npm install` failing next is no surprise
    expect(output).toContain(`mercato init: warning: --mercato ${join(base, 'mercato-0.1.0.tgz')} does not exist`);
    writeFileSync(join(base, 'present.tgz'), '');
    const present = await init('spec-app-2', { mercatoSpec: './present.tgz' });
    expect(present.code).toBe(0);
    expect(present.output).not.toContain('warning');
    const pkg = JSON.parse(readFileSync(join(base, 'spec-app', 'package.json'), 'utf8'));
    expect(pkg.dependencies.mercato).toBe(`file:${join(base, 'mercato-0.1.0.tgz')}`);
    expect(mercatoDependencySpec(undefined, base)).toBe(`^${MERCATO_VERSION}`);
    expect(mercatoDependencySpec('latest', base)).toBe('latest');
    expect(mercatoDependencySpec('~0.1.2', base)).toBe('~0.1.2');
    expect(mercatoDependencySpec('file:../m.tgz', '/a/b')).toBe(`file:${resolve('/a/b', '../m.tgz')}`);
    expect(mercatoDependencySpec('https://example.com/m.tgz', base)).toBe('https://example.com/m.tgz');
  });

  it('a usage error (exit 2) for an empty directory argument or an empty --mercato', async () => {
    expect((await init('')).code).toBe(2);
    expect((await init('x', { mercatoSpec: ' ' })).code).toBe(2);
    expect(existsSync(join(base, 'x'))).toBe(false);
  });
});

describe('mercato init: package names', () => {
  it('keeps a valid directory name and makes others valid', () => {
    expect(packageNameFor('my-app')).toBe('my-app');
    expect(packageNameFor('my.app_2')).toBe('my.app_2');
    expect(packageNameFor('MyApp')).toBe('my-app');
    expect(packageNameFor('My Shop App!')).toBe('my-shop-app');
    expect(packageNameFor('_private')).toBe('private');
    expect(packageNameFor('.hidden')).toBe('hidden');
    expect(packageNameFor('Café Crème')).toBe('cafe-creme');
    expect(packageNameFor('日本')).toBe('mercato-app');
    expect(packageNameFor('')).toBe('mercato-app');
    // npm refuses a dependency named like the project, and node's own module names
    expect(packageNameFor('mercato')).toBe('mercato-app');
    expect(packageNameFor('zod')).toBe('zod-app');
    expect(packageNameFor('http')).toBe('http-app');
    expect(packageNameFor('x'.repeat(300)).length).toBeLessThanOrEqual(214);
    for (const name of ['my-app', 'my-shop-app', 'cafe-creme', 'mercato-app', 'http-app']) expect(isValidPackageName(name)).toBe(true);
    for (const name of ['My-App', '_x', '.x', 'a b', 'node_modules', 'fs']) expect(isValidPackageName(name)).toBe(false);
  });

  it('keeps the scaffold inside the workspace (so its imports resolve without npm install)', () => {
    expect(relative(WORKSPACE, base).split(sep)[0]).toBe('test-artifacts');
  });
});
