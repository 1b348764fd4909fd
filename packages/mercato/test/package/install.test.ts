/**
 * `npm pack` of packages/mercato gives a tarball that installs into an empty directory outside the workspace with
 * `npm install <tarball>` and runs there: the tarball's contents, a plain `.js` ESM app and a `.ts` app run by the
 * installed CLI (no tsx: the CLI loads TypeScript itself), and a TypeScript app type-checked against the installed
 * declarations (dist/types) with the workspace's tsc. The pack and the install are shared with the other tests of
 * test/package/ (test/helpers/package.ts).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Background,
  childEnv,
  cleanUp,
  describeResult,
  type InstalledPackage,
  installedPackage,
  MERCATO_PKG,
  PACKAGE_ROOT,
  type PackedPackage,
  packedPackage,
  previewToken,
  run,
  runFlowViaApi,
  startBackground,
  TSC,
  WORKSPACE,
} from '../helpers/package.ts';

let pkg: PackedPackage;
let installed: InstalledPackage;

beforeAll(async () => {
  pkg = await packedPackage();
  installed = await installedPackage();
}, 900_000);

afterAll(cleanUp, 30_000);

/** Every file under `dir`, relative and `/`-separated. */
function filesUnder(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...filesUnder(full, `${prefix}${name}/`));
    else out.push(`${prefix}${name}`);
  }
  return out.sort();
}

/** Every folder called `name` anywhere under `root` (nested node_modules included). */
function foldersNamed(root: string, name: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const full = join(dir, entry.name);
      if (entry.name === name) found.push(full);
      walk(full);
    }
  };
  walk(root);
  return found;
}

describe('npm pack: the tarball', () => {
  it('is packed from the workspace by `npm pack` (its prepack builds dist/) in one tarball named after the version', () => {
    expect(pkg.tarball).toMatch(new RegExp(`mercato-${MERCATO_PKG.version.replace(/\./g, '\\.')}\\.tgz$`));
    expect(relative(WORKSPACE, pkg.tarball).startsWith('..')).toBe(true);
  });

  it('holds the bundles, the declarations, the admin UI, the migrations and the template', () => {
    for (const file of [
      'package.json',
      'bin/mercato.js',
      'dist/cli.js',
      'dist/index.js',
      'dist/testing.js',
      'dist/types/index.d.ts',
      'dist/types/db/testing.d.ts',
      'dist/admin-ui/index.html',
    ]) {
      expect(pkg.files, file).toContain(file);
    }
    const migrations = filesUnder(join(PACKAGE_ROOT, 'migrations')).map((f) => `migrations/${f}`);
    expect(migrations.length).toBeGreaterThan(0);
    expect(pkg.files).toEqual(expect.arrayContaining(migrations));
    const template = filesUnder(join(PACKAGE_ROOT, 'templates', 'app')).map((f) => `templates/app/${f}`);
    expect(template).toContain('templates/app/gitignore');
    expect(pkg.files).toEqual(expect.arrayContaining(template));
    // the admin UI: the workspace's build, with every asset its index.html loads
    const html = readFileSync(join(WORKSPACE, 'packages', 'admin-ui', 'dist', 'index.html'), 'utf8');
    const assets = [...html.matchAll(/(?:src|href)="\/([^"]+)"/g)].map((m) => `dist/admin-ui/${m[1]}`);
    expect(assets.length).toBeGreaterThan(0);
    expect(pkg.files).toEqual(expect.arrayContaining(assets));
  });

  it('has no sources and no tests: no src/, no test/, no .ts file other than declarations and the template', () => {
    const topLevel = [...new Set(pkg.files.map((f) => f.split('/')[0]))].sort();
    expect(topLevel).toEqual(
      ['bin', 'dist', 'migrations', 'package.json', 'templates']
        .concat(existsSync(join(PACKAGE_ROOT, 'README.md')) ? ['README.md'] : [])
        .sort(),
    );
    // (the template of `mercato init` is an app, with its own tests)
    expect(pkg.files.filter((f) => !f.startsWith('templates/') && /(^|\/)(src|test|tests|scripts|node_modules)\//.test(f))).toEqual([]);
    expect(pkg.files.filter((f) => /\.[cm]?tsx?$/.test(f) && !f.endsWith('.d.ts') && !f.startsWith('templates/'))).toEqual([]);
  });

  it('ships every file its package.json points at (bin, exports, types)', () => {
    const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'));
    const targets = new Set<string>([...Object.values(manifest.bin as Record<string, string>), manifest.types]);
    for (const entry of Object.values(manifest.exports as Record<string, string | Record<string, string>>)) {
      if (typeof entry === 'string') targets.add(entry);
      // `mercato-source` is the workspace's own condition (TypeScript sources, not shipped)
      else for (const [condition, target] of Object.entries(entry)) if (condition !== 'mercato-source') targets.add(target);
    }
    for (const target of targets) expect(pkg.files, target).toContain(target.replace(/^\.\//, ''));
  });
});

describe('npm install <tarball> in an empty directory outside the workspace', () => {
  const env = childEnv({ MERCATO_SIM_PORT: '0' });
  const npx = (args: string[], cwd: string, timeoutMs = 120_000) =>
    run('npx', ['--no-install', 'mercato', ...args], { cwd, env, timeoutMs });

  it('installs mercato and its dependencies only: no tsx anywhere in node_modules, no sources in the package', () => {
    const nm = join(installed.dir, 'node_modules');
    expect(JSON.parse(readFileSync(join(nm, 'mercato', 'package.json'), 'utf8')).version).toBe(MERCATO_PKG.version);
    expect(foldersNamed(nm, 'tsx')).toEqual([]);
    expect(existsSync(join(nm, '.bin', 'tsx'))).toBe(false);
    expect(existsSync(join(nm, 'mercato', 'src'))).toBe(false);
    expect(existsSync(join(nm, 'mercato', 'test'))).toBe(false);
    expect(existsSync(join(nm, '.bin', 'mercato'))).toBe(true);
  });

  it('`npx mercato --version` prints the version', async () => {
    const r = await npx(['--version'], installed.dir);
    expect(r.code, describeResult(r)).toBe(0);
    expect(r.stdout.trim()).toBe(MERCATO_PKG.version);
  });

  /** Starts `npx mercato dev --port 0` in `cwd` and resolves with its URL once the banner is printed. */
  async function dev(cwd: string): Promise<{ server: Background; base: string }> {
    const server = startBackground('npx', ['--no-install', 'mercato', 'dev', '--port', '0'], { cwd, env });
    const m = await server.waitFor(/listening on (http:\/\/localhost:\d+)/, 90_000);
    await server.waitFor(/^watching .* for changes/m, 30_000);
    return { server, base: m[1]! };
  }

  async function stop(server: Background) {
    // SIGTERM to the process group (npx and mercato): mercato shuts down cleanly, whatever npx's own exit status
    await server.stop('SIGTERM');
    expect(server.stdout()).toContain('mercato dev: SIGTERM received, shutting down…');
    expect(server.stderr()).toBe('');
  }

  it('a plain .js ESM app: `mercato check` validates it; `mercato dev` serves /healthz, the admin UI, the preview, a route, and runs a flow', async () => {
    const app = join(installed.dir, 'js-app');
    mkdirSync(join(app, 'routes'), { recursive: true });
    writeFileSync(
      join(app, 'service.config.js'),
      `import { defineApp } from 'mercato';
import { z } from 'zod';

const app = defineApp();

export default app.defineConfig({
  flows: {
    hello: app.defineFlow({
      name: 'hello',
      input: z.object({ name: z.string().default('world') }),
      run: (ctx, input) => ctx.step('greet', () => \`hello \${input.name}\`),
    }),
  },
  worker: { pollIntervalMs: 50, pollMaxIntervalMs: 200 },
});
`,
    );
    writeFileSync(
      join(app, 'routes', 'ping.js'),
      `import { defineRoute } from 'mercato';\n\nexport default defineRoute({ auth: 'none', GET: () => Response.json({ pong: true }) });\n`,
    );

    const check = await npx(['check'], app);
    expect(check.code, describeResult(check)).toBe(0);
    expect(check.stdout).toContain(`${join(app, 'service.config.js')} is valid`);
    expect(check.stdout).toMatch(/flows:\s+hello\n/);
    expect(check.stdout).toMatch(/routes:\s+\/routes\/ping \(GET; auth none\)/);

    const { server, base } = await dev(app);
    expect(server.stdout()).toMatch(/admin preview: http:\/\/localhost:\d+\/__mercato\/preview\//);
    expect(server.stdout()).toMatch(
      /platform: +simulator at http:\/\/127\.0\.0\.1:\d+ \(shops demo-1\.myshopify\.com, demo-2\.myshopify\.com;/,
    );

    expect((await fetch(`${base}/healthz`)).status).toBe(200);

    // the admin UI at `/`: the built index.html shipped in the package, with the boot config added
    const ui = await fetch(`${base}/`);
    expect(ui.status).toBe(200);
    const shipped = readFileSync(join(installed.dir, 'node_modules', 'mercato', 'dist', 'admin-ui', 'index.html'), 'utf8');
    expect(shipped).toBe(readFileSync(join(WORKSPACE, 'packages', 'admin-ui', 'dist', 'index.html'), 'utf8'));
    const served = await ui.text();
    expect(served).toContain('<script id="mercato-boot" type="application/json">');
    expect(served.replace(/\n\s*<script id="mercato-boot" type="application\/json">.*?<\/script>/, '')).toBe(shipped);
    const script = /<script[^>]*src="(\/assets\/[^"]+\.js)"/.exec(shipped)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${base}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);

    // the admin preview: its page, its shops, a session token, then a flow dispatched and completed
    const page = await fetch(`${base}/__mercato/preview/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Mercato admin preview</title>');
    const { shops } = (await (await fetch(`${base}/__mercato/preview/shops`)).json()) as { shops: string[] };
    expect(shops).toEqual(['demo-1.myshopify.com', 'demo-2.myshopify.com']);
    const token = await previewToken(base, shops[0]!);
    const record = await runFlowViaApi(base, token, 'hello', { name: 'package' });
    expect(record).toMatchObject({ status: 'completed', output: 'hello package', shop: 'demo-1.myshopify.com' });

    const ping = await fetch(`${base}/routes/ping`);
    expect(await ping.json()).toEqual({ pong: true });
    await stop(server);
  });

  it('a .ts app (config, flow module, route): loaded by the installed CLI with no tsx, checked and run by `mercato dev`', async () => {
    const app = join(installed.dir, 'ts-app');
    writeTsApp(app);
    const check = await npx(['check'], app);
    expect(check.code, describeResult(check)).toBe(0);
    expect(check.stdout).toContain(`${join(app, 'service.config.ts')} is valid`);
    expect(check.stdout).toMatch(/flows:\s+greet\n/);

    const { server, base } = await dev(app);
    const token = await previewToken(base, 'demo-2.myshopify.com');
    const record = await runFlowViaApi(base, token, 'greet', { name: 'typescript' });
    expect(record).toMatchObject({ status: 'completed', output: { greeting: 'hello typescript', shop: 'demo-2.myshopify.com' } });
    const routed = await fetch(`${base}/routes/greeting?name=route`);
    expect(await routed.json()).toEqual({ greeting: 'hello route' });
    await stop(server);
  });

  it('a TypeScript app type-checks against the installed declarations (dist/types) with the workspace tsc', async () => {
    const app = join(installed.dir, 'ts-app');
    if (!existsSync(join(app, 'service.config.ts'))) writeTsApp(app);
    // one mistake, so the types are shown to be real (not `any`); typed.ts's @ts-expect-error lines would be errors too
    writeFileSync(
      join(app, 'wrong.ts'),
      `import service from './service.config.ts';\n\nawait service.dispatchFlow({ flowName: 'greet', input: { name: 42 }, shop: 'a.myshopify.com' });\n`,
    );
    // skipLibCheck off: the declarations of the package are checked too (their imports must resolve in an install)
    const r = await run(process.execPath, [TSC, '-p', app, '--listFiles'], { cwd: app, env: childEnv(), timeoutMs: 180_000 });
    const errors = r.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
    // drizzle-orm's own declarations do not all check (optional drivers, other dialects): only mercato's and the app's count
    const ours = errors.filter((line) => !line.startsWith('../node_modules/') || line.startsWith('../node_modules/mercato/'));
    expect(ours, describeResult(r)).toEqual([
      expect.stringMatching(/^wrong\.ts\(3,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/),
    ]);
    const files = r.stdout.split('\n').filter((line) => line.startsWith('/'));
    // `mercato` resolved to the installed package's declarations, nothing from the workspace
    expect(files).toContain(join(installed.dir, 'node_modules', 'mercato', 'dist', 'types', 'index.d.ts'));
    expect(files.filter((f) => f.includes('/node_modules/mercato/') && !f.endsWith('.d.ts'))).toEqual([]);
    // from the workspace: only TypeScript's own lib files and Node's types (@types/node and its undici-types)
    const allowed = ['typescript/lib/', '@types/node/', 'undici-types/'].map((p) => `${join(WORKSPACE, 'node_modules')}/${p}`);
    expect(files.filter((f) => f.startsWith(`${WORKSPACE}/`) && !allowed.some((p) => f.startsWith(p)))).toEqual([]);
  }, 180_000); // a full tsc run over the installed declarations: 24–30 s on a loaded 2-core machine
});

/** A TypeScript app below the install: config, a flow in its own module, a route, and typed uses of the instance. */
function writeTsApp(app: string) {
  mkdirSync(join(app, 'flows'), { recursive: true });
  mkdirSync(join(app, 'routes'), { recursive: true });
  writeFileSync(
    join(app, 'flows', 'greet.ts'),
    `import { defineFlow } from 'mercato';
import { z } from 'zod';

export interface Greeting {
  greeting: string;
  shop: string | null;
}

export const greet = defineFlow({
  name: 'greet',
  input: z.object({ name: z.string().default('world') }),
  async run(ctx, input): Promise<Greeting> {
    const greeting: string = await ctx.step('greet', async () => \`hello \${input.name}\`);
    return { greeting, shop: ctx.shop };
  },
});
`,
  );
  writeFileSync(
    join(app, 'service.config.ts'),
    `import { defineApp } from 'mercato';
import { greet } from './flows/greet.ts';

const app = defineApp({ providers: {} });

export default app.defineConfig({
  flows: { greet },
  worker: { pollIntervalMs: 50, pollMaxIntervalMs: 200 },
});
`,
  );
  writeFileSync(
    join(app, 'routes', 'greeting.ts'),
    `import { defineRoute } from 'mercato';

export default defineRoute({
  auth: 'none',
  GET: (request) => Response.json({ greeting: \`hello \${new URL(request.url).searchParams.get('name') ?? 'world'}\` }),
});
`,
  );
  writeFileSync(
    join(app, 'typed.ts'),
    `import type { FlowContext, RunStatus } from 'mercato';
import service from './service.config.ts';

export async function dispatchGreeting(shop: string): Promise<string> {
  const { runId, status } = await service.dispatchFlow({ flowName: 'greet', input: { name: 'typed' }, shop });
  const pending: RunStatus = status;
  void pending;
  // @ts-expect-error: not a registered flow
  await service.dispatchFlow({ flowName: 'greeet', input: {}, shop });
  // @ts-expect-error: the input of greet has no such field
  await service.dispatchFlow({ flowName: 'greet', input: { nickname: 'x' }, shop });
  return runId;
}

export type Context = FlowContext;
`,
  );
  writeFileSync(
    join(app, 'tsconfig.json'),
    `${JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2023',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2023', 'DOM', 'DOM.Iterable'],
          strict: true,
          noEmit: true,
          allowImportingTsExtensions: true,
          verbatimModuleSyntax: true,
          skipLibCheck: false,
          // the install has no @types/node (it is a plain runtime install): take the workspace's
          types: ['node'],
          typeRoots: [join(WORKSPACE, 'node_modules', '@types')],
        },
        exclude: ['node_modules', '.mercato'],
      },
      null,
      2,
    )}\n`,
  );
}
