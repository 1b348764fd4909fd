/**
 * "Any module setup loads": apps generated at test time for every package type (no "type", "commonjs", "module") and
 * every config extension (.ts, .mts, .js, .mjs), with the flow, route, provider and function files rotating through the
 * four extensions, so that every (package type × file kind × extension) combination occurs. `.js` files of non-module
 * packages are written in CommonJS (require / module.exports) or in ESM syntax, as users write both. Every app passes
 * `mercato check` and runs under `dev` (route answers, a flow run completes); `start` and `worker` run one app of each
 * package type (on PostgreSQL when DATABASE_URL is set: a run dispatched through `start` is completed by `worker`).
 *
 * The apps live under <repo>/test-artifacts/ (git-ignored) so that `mercato` and `zod` resolve from the workspace's
 * node_modules; the folder is removed at the end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import pg from 'pg';
import { type ExpectStatic, afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../../platform-sim/src/jwt.ts';
import { SHOP } from '../kit/index.ts';

const ROOT = resolve(import.meta.dirname, '../../../..');
const BIN = join(ROOT, 'packages/mercato/bin/mercato.js');
const ARTIFACTS = join(ROOT, 'test-artifacts', `module-setups-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`);
const API_KEY = 'module-setups-key';
const API_SECRET = 'module-setups-secret';
const ENCRYPTION_KEY = 'b'.repeat(64);
const PG_URL = process.env.DATABASE_URL?.trim() || undefined;

const PKG_TYPES = ['none', 'commonjs', 'module'] as const;
const EXTS = ['.ts', '.mts', '.js', '.mjs'] as const;
const KINDS = ['flow', 'route', 'provider', 'function'] as const;
type PkgType = (typeof PKG_TYPES)[number];
type Ext = (typeof EXTS)[number];
type Kind = (typeof KINDS)[number];
type Syntax = 'esm' | 'cjs';

interface SourceFile {
  /** Relative to the app folder, `/`-separated. */
  path: string;
  ext: Ext;
  syntax: Syntax;
}

interface AppSpec {
  id: string;
  dir: string;
  pkg: PkgType;
  config: SourceFile;
  files: Record<Kind, SourceFile>;
  flowName: string;
  providerName: string;
  functionHandle: string;
}

const FOLDERS: Record<Kind, string> = {
  flow: 'flows/greet',
  route: 'routes/info',
  provider: 'providers/crm',
  function: 'functions/discount',
};
const isTs = (ext: Ext) => ext === '.ts' || ext === '.mts';
const camel = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * `.js` in a package that is not "type": "module" is CommonJS for Node: write CommonJS in half of those files (each
 * kind gets one CommonJS and one ESM-syntax `.js` file across the two non-module package types), ESM everywhere else.
 */
function syntaxOf(pkg: PkgType, ext: Ext, slot: number): Syntax {
  if (ext !== '.js' || pkg === 'module') return 'esm';
  return (slot + PKG_TYPES.indexOf(pkg)) % 2 === 0 ? 'cjs' : 'esm';
}

function specOf(pkg: PkgType, configIndex: number): AppSpec {
  const configExt = EXTS[configIndex];
  const id = `${pkg}-${configExt.slice(1)}`;
  const files = {} as Record<Kind, SourceFile>;
  KINDS.forEach((kind, k) => {
    // kind k of the app with config extension c gets extension c+k+1: over the four apps of a package type, each kind
    // goes through the four extensions
    const ext = EXTS[(configIndex + k + 1) % EXTS.length];
    files[kind] = { path: FOLDERS[kind] + ext, ext, syntax: syntaxOf(pkg, ext, k) };
  });
  const suffix = camel(pkg) + camel(configExt.slice(1));
  return {
    id,
    dir: join(ARTIFACTS, id),
    pkg,
    config: { path: `service.config${configExt}`, ext: configExt, syntax: syntaxOf(pkg, configExt, KINDS.length) },
    files,
    flowName: `greet${suffix}`,
    providerName: `crm${suffix}`,
    functionHandle: `discount-${id}`,
  };
}

const APPS: AppSpec[] = PKG_TYPES.flatMap((pkg) => EXTS.map((_, c) => specOf(pkg, c)));

/** The import specifier of `to` from `from`; `nodenext` writes a TypeScript file's `.js`/`.mjs` name (as tsc's NodeNext wants). */
function specifier(from: SourceFile, to: SourceFile, nodenext = false): string {
  let rel = relative(dirname(from.path), to.path).split('\\').join('/');
  if (!rel.startsWith('.')) rel = `./${rel}`;
  if (nodenext && to.ext === '.ts') rel = rel.replace(/\.ts$/, '.js');
  if (nodenext && to.ext === '.mts') rel = rel.replace(/\.mts$/, '.mjs');
  return rel;
}

const describeFile = (f: SourceFile) => `${f.path}${f.ext === '.js' ? ` (${f.syntax})` : ''}`;
const labelOf = (app: AppSpec) =>
  `${app.id}: config ${describeFile(app.config)}, ${KINDS.map((k) => describeFile(app.files[k])).join(', ')}`;

function flowSource(app: AppSpec, f: SourceFile): string {
  const t = isTs(f.ext) ? ': string' : '';
  const body = [
    `const label${t} = ${JSON.stringify(`${app.id} ${f.path} ${f.syntax}`)};`,
    `function greeting(name${t})${t} {`,
    '  return `hello ${name} from ${label}`;',
    '}',
  ];
  const flow = [
    'defineFlow({',
    `  name: ${JSON.stringify(app.flowName)},`,
    "  input: z.object({ name: z.string().default('world') }),",
    "  run: (ctx, input) => ctx.step('greet', () => greeting(input.name)),",
    '})',
  ];
  if (f.syntax === 'cjs') {
    return [
      "const { defineFlow } = require('mercato');",
      "const { z } = require('zod');",
      '',
      ...body,
      '',
      `module.exports = { flow: ${flow.join('\n')}, greeting };`,
      '',
    ].join('\n');
  }
  return [
    "import { defineFlow } from 'mercato';",
    "import { z } from 'zod';",
    '',
    ...body,
    '',
    `export const flow = ${flow.join('\n')};`,
    'export { greeting };',
    '',
  ].join('\n');
}

function providerSource(app: AppSpec, f: SourceFile): string {
  const t = isTs(f.ext);
  const provider = [
    'defineProvider({',
    `  name: ${JSON.stringify(app.providerName)},`,
    `  description: ${JSON.stringify(`CRM of ${app.id}`)},`,
    "  ui: { fields: { apiKey: { type: 'password', label: 'API key' } } },",
    `  methods: { ping: (config${t ? ': { apiKey: string }' : ''}) => \`pong \${config.apiKey.length}\` },`,
    '})',
  ].join('\n');
  if (f.syntax === 'cjs') return `const mercato = require('mercato');\n\nexports.provider = mercato.${provider};\n`;
  return `import { defineProvider } from 'mercato';\n\nexport const provider = ${provider};\n`;
}

function functionSource(app: AppSpec, f: SourceFile): string {
  const fn = [
    'defineFunction({',
    "  type: 'discount',",
    `  handle: ${JSON.stringify(app.functionHandle)},`,
    "  title: 'Volume discount',",
    "  fields: { percentage: { type: 'number', label: 'Percent off' } },",
    '})',
  ].join('\n');
  // one default export, one module.exports = …, named exports elsewhere
  if (f.syntax === 'cjs') return `const { defineFunction } = require('mercato');\n\nmodule.exports = ${fn};\n`;
  if (f.ext === '.mjs') return `import { defineFunction } from 'mercato';\n\nexport default ${fn};\n`;
  return `import { defineFunction } from 'mercato';\n\nexport const discount = ${fn};\n`;
}

/** How another file gets the function definition, whatever way its file exports it. */
function functionImport(app: AppSpec, from: SourceFile, nodenext = false): { esm: string; cjs: string } {
  const f = app.files.function;
  const spec = JSON.stringify(specifier(from, f, nodenext));
  if (f.syntax === 'cjs' || f.ext === '.mjs')
    return { esm: `import discount from ${spec};`, cjs: `const discount = require(${spec})${f.syntax === 'cjs' ? '' : '.default'};` };
  return { esm: `import { discount } from ${spec};`, cjs: `const { discount } = require(${spec});` };
}

function routeSource(app: AppSpec, f: SourceFile): string {
  const flow = JSON.stringify(specifier(f, app.files.flow));
  const provider = JSON.stringify(specifier(f, app.files.provider));
  const fn = functionImport(app, f);
  const answer = (file: string, dir: string) =>
    `Response.json({ app: ${JSON.stringify(app.id)}, flow: flow.name, provider: provider.name, function: discount.handle, greeting: greeting('route'), file: ${file}, dir: ${dir}, syntax: ${JSON.stringify(f.syntax)} })`;
  if (f.syntax === 'cjs') {
    // as tsc or Babel compile `export default defineRoute(…)` to CommonJS
    return [
      "'use strict';",
      "Object.defineProperty(exports, '__esModule', { value: true });",
      "const mercato_1 = require('mercato');",
      `const { flow, greeting } = require(${flow});`,
      `const { provider } = require(${provider});`,
      fn.cjs,
      '',
      `exports.default = (0, mercato_1.defineRoute)({ auth: 'none', GET: () => ${answer('__filename', '__dirname')} });`,
      '',
    ].join('\n');
  }
  const head = [
    "import { fileURLToPath } from 'node:url';",
    "import { defineRoute } from 'mercato';",
    `import { flow, greeting } from ${flow};`,
    `import { provider } from ${provider};`,
    fn.esm,
    '',
  ];
  const body = answer('fileURLToPath(import.meta.url)', 'import.meta.dirname');
  // named exports in .mjs route files, a default export elsewhere
  if (f.ext === '.mjs') return [...head, "export const auth = 'none';", `export function GET() {\n  return ${body};\n}`, ''].join('\n');
  return [...head, `export default defineRoute({\n  auth: 'none',\n  GET: () => ${body},\n});`, ''].join('\n');
}

function configSource(app: AppSpec): string {
  const f = app.config;
  // TypeScript configs import TypeScript files by their NodeNext names (`./flows/greet.js` for greet.ts)
  const nodenext = isTs(f.ext);
  const flow = JSON.stringify(specifier(f, app.files.flow, nodenext));
  const provider = JSON.stringify(specifier(f, app.files.provider, nodenext));
  const fn = functionImport(app, f, nodenext);
  const config = [
    `app.defineConfig({`,
    '  flows: { [flow.name]: flow },',
    '  functions: { discount },',
    '  worker: { concurrency: 2, pollIntervalMs: 50, pollMaxIntervalMs: 200 },',
    '})',
  ].join('\n');
  const defineApp = 'const app = defineApp({ providers: { [provider.name]: provider } });';
  if (f.syntax === 'cjs') {
    return [
      "const { defineApp } = require('mercato');",
      `const { flow } = require(${flow});`,
      `const { provider } = require(${provider});`,
      fn.cjs,
      '',
      defineApp,
      '',
      `module.exports = ${config};`,
      '',
    ].join('\n');
  }
  return [
    "import { defineApp } from 'mercato';",
    `import { flow } from ${flow};`,
    `import { provider } from ${provider};`,
    fn.esm,
    '',
    defineApp,
    '',
    `export default ${config};`,
    '',
  ].join('\n');
}

function writeApp(app: AppSpec) {
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(app.dir, path)), { recursive: true });
    writeFileSync(join(app.dir, path), text);
  };
  write(
    'package.json',
    `${JSON.stringify({ name: `module-setup-${app.id}`, private: true, ...(app.pkg === 'none' ? {} : { type: app.pkg }) }, null, 2)}\n`,
  );
  write(app.config.path, configSource(app));
  write(app.files.flow.path, flowSource(app, app.files.flow));
  write(app.files.route.path, routeSource(app, app.files.route));
  write(app.files.provider.path, providerSource(app, app.files.provider));
  write(app.files.function.path, functionSource(app, app.files.function));
}

/** An app compiled to CommonJS by tsc (`exports.__esModule`, `exports.default`), in a package without "type". */
const COMPILED_DIR = join(ARTIFACTS, 'compiled-cjs');
const COMPILED: Record<string, string> = {
  'package.json': '{ "name": "module-setup-compiled-cjs", "private": true }\n',
  'service.config.js': [
    '"use strict";',
    'Object.defineProperty(exports, "__esModule", { value: true });',
    'const mercato_1 = require("mercato");',
    'const greet_1 = require("./flows/greet.js");',
    'const app = (0, mercato_1.defineApp)();',
    'exports.default = app.defineConfig({ flows: { compiledGreet: greet_1.compiledGreet } });',
    '',
  ].join('\n'),
  'flows/greet.js': [
    '"use strict";',
    'Object.defineProperty(exports, "__esModule", { value: true });',
    'exports.compiledGreet = void 0;',
    'const mercato_1 = require("mercato");',
    'const zod_1 = require("zod");',
    "exports.compiledGreet = (0, mercato_1.defineFlow)({ name: 'compiledGreet', input: zod_1.z.object({}), run: (ctx) => ctx.step('greet', () => 'hi') });",
    '',
  ].join('\n'),
  'routes/compiled.js': [
    '"use strict";',
    'Object.defineProperty(exports, "__esModule", { value: true });',
    'exports.auth = void 0;',
    'exports.GET = GET;',
    "exports.auth = 'none';",
    'function GET() {',
    '    return Response.json({ ok: true });',
    '}',
    '',
  ].join('\n'),
};

// ---------------------------------------------------------------------------------------------------------------------
// processes

interface Proc {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  /** Resolves with the first match of `re` in the output; rejects when the process exits first or after `ms`. */
  waitFor(re: RegExp, ms?: number): Promise<RegExpExecArray>;
  stop(): Promise<number | null>;
}

const children: ChildProcess[] = [];
let dataDirs = 0;

function baseEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, MERCATO_SIM_PORT: '0', NO_COLOR: '1', ...extra };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env;
}

function mercato(args: string[], cwd: string, env: NodeJS.ProcessEnv): Proc {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  // 'close', not 'exit': the process can have exited before its last output was read from the pipes (CI of b153d26+1:
  // `mercato check` exited 0 and its output read as empty)
  const exited = new Promise<number | null>((r) => child.once('close', (code) => r(code)));
  return {
    child,
    output: () => out,
    exited,
    waitFor(re, ms = 45_000) {
      return new Promise((resolveMatch, reject) => {
        const check = () => {
          const m = re.exec(out);
          if (m) {
            done();
            resolveMatch(m);
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`mercato ${args.join(' ')} (in ${cwd}): no ${re} after ${ms} ms:\n${out}`));
        }, ms);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        void exited.then((code) => {
          if (!listeners.has(check)) return;
          done();
          reject(new Error(`mercato ${args.join(' ')} (in ${cwd}) exited with ${code} before ${re}:\n${out}`));
        });
        check();
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A fresh copy of the migrated PGlite data dir (creating one takes seconds; a copy, milliseconds). */
function freshDataDir(template: string): string {
  const dir = join(ARTIFACTS, 'data', String(++dataDirs));
  cpSync(template, dir, { recursive: true });
  return dir;
}

/** At most `n` processes at a time (a 2-core machine): each task says how many it starts. */
function limiter(n: number) {
  let free = n;
  const waiting: Array<() => void> = [];
  return async <T>(weight: number, fn: () => Promise<T>): Promise<T> => {
    while (free < weight) await new Promise<void>((r) => waiting.push(r));
    free -= weight;
    try {
      return await fn();
    } finally {
      free += weight;
      for (const w of waiting.splice(0)) w();
    }
  };
}
const slots = limiter(3);

async function getJson<T = any>(url: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

/** GET /routes/info answers the names imported from the app's other files, and the route file's own path. */
async function expectRoute(expect: ExpectStatic, app: AppSpec, base: string) {
  const { status, body } = await getJson(`${base}/routes/info`);
  expect({ status, body }, labelOf(app)).toEqual({
    status: 200,
    body: {
      app: app.id,
      flow: app.flowName,
      provider: app.providerName,
      function: app.functionHandle,
      greeting: `hello route from ${app.id} ${app.files.flow.path} ${app.files.flow.syntax}`,
      file: join(app.dir, app.files.route.path),
      dir: join(app.dir, 'routes'),
      syntax: app.files.route.syntax,
    },
  });
}

/** Dispatches the app's flow through the admin API and waits for the run to complete (by whichever process runs it). */
async function expectRunCompletes(
  expect: ExpectStatic,
  app: AppSpec,
  base: string,
  token: () => Promise<string> | string,
  log: () => string,
) {
  const headers = async () => ({ authorization: `Bearer ${await token()}`, 'content-type': 'application/json' });
  const dispatched = await getJson<{ runId: string }>(`${base}/api/flows/${app.flowName}/run`, {
    method: 'POST',
    headers: await headers(),
    body: JSON.stringify({ input: { name: 'api' } }),
  });
  expect(dispatched.status, `${labelOf(app)}\n${JSON.stringify(dispatched.body)}\n${log()}`).toBe(202);
  const runId = dispatched.body.runId;
  let run: { status: string; output: unknown; error?: unknown } | undefined;
  await expect
    .poll(
      async () => {
        run = (await getJson(`${base}/api/runs/${runId}`, { headers: await headers() })).body;
        return run?.status;
      },
      { timeout: 20_000, interval: 100 },
    )
    .toBe('completed')
    .catch((error: Error) => {
      throw new Error(`${labelOf(app)}: run ${runId} did not complete (${JSON.stringify(run)})\n${log()}`, { cause: error });
    });
  expect(run!.output, labelOf(app)).toBe(`hello api from ${app.id} ${app.files.flow.path} ${app.files.flow.syntax}`);
}

// ---------------------------------------------------------------------------------------------------------------------

let template: string;
const databases: string[] = [];

beforeAll(async () => {
  for (const app of APPS) writeApp(app);
  for (const [path, text] of Object.entries(COMPILED)) {
    mkdirSync(dirname(join(COMPILED_DIR, path)), { recursive: true });
    writeFileSync(join(COMPILED_DIR, path), text);
  }
  // one migrated embedded database, copied for every process that needs one
  template = join(ARTIFACTS, 'data', 'template');
  const migrate = mercato(['migrate'], APPS[0].dir, baseEnv({ MERCATO_DATA_DIR: template }));
  const code = await migrate.exited;
  if (code !== 0) throw new Error(`mercato migrate failed (${code}):\n${migrate.output()}`);
}, 60_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(ARTIFACTS, { recursive: true, force: true });
  if (PG_URL && databases.length > 0) {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      for (const name of databases) await admin.query(`drop database if exists ${name} with (force)`);
    } finally {
      await admin.end();
    }
  }
}, 60_000);

describe('module setups: every package type × extension × file kind', () => {
  it('covers every (package type, file kind, extension) combination, with CommonJS and ESM-syntax .js files', () => {
    const seen = new Set(
      APPS.flatMap((a) =>
        [['config', a.config] as const, ...KINDS.map((k) => [k, a.files[k]] as const)].map(([kind, f]) => `${a.pkg} ${kind} ${f.ext}`),
      ),
    );
    for (const pkg of PKG_TYPES)
      for (const kind of ['config', ...KINDS]) for (const ext of EXTS) expect(seen).toContain(`${pkg} ${kind} ${ext}`);
    const jsSyntaxes = new Set(
      APPS.filter((a) => a.pkg !== 'module').flatMap((a) =>
        [a.config, ...KINDS.map((k) => a.files[k])].filter((f) => f.ext === '.js').map((f) => f.syntax),
      ),
    );
    expect([...jsSyntaxes].sort()).toEqual(['cjs', 'esm']);
  });

  describe.concurrent('mercato check', () => {
    for (const app of APPS) {
      it(`check ${labelOf(app)}`, { timeout: 120_000 }, ({ expect }) =>
        slots(1, async () => {
          const p = mercato(['check'], app.dir, baseEnv({ MERCATO_DATA_DIR: join(ARTIFACTS, 'data', 'unused') }));
          const code = await p.exited;
          const out = p.output();
          expect(code, `${labelOf(app)}\n${out}`).toBe(0);
          expect(out).toContain(`${app.config.path} is valid`);
          expect(out).toMatch(new RegExp(`flows:\\s+${app.flowName}\\n`));
          expect(out).toMatch(new RegExp(`providers:\\s+${app.providerName}\\n`));
          expect(out).toMatch(/functions:\s+discount\n/);
          expect(out).toMatch(/routes:\s+\/routes\/info \(GET; auth none\)/);
        }),
      );
    }
    it(
      'check: a config, a flow and a route compiled to CommonJS by tsc (exports.default, exports.__esModule)',
      { timeout: 120_000 },
      ({ expect }) =>
        slots(1, async () => {
          const p = mercato(['check'], COMPILED_DIR, baseEnv({ MERCATO_DATA_DIR: join(ARTIFACTS, 'data', 'unused') }));
          const code = await p.exited;
          const out = p.output();
          expect(code, out).toBe(0);
          expect(out).toContain('service.config.js is valid');
          expect(out).toMatch(/flows:\s+compiledGreet\n/);
          expect(out).toMatch(/routes:\s+\/routes\/compiled \(GET; auth none\)/);
        }),
    );
  });

  describe.concurrent('mercato dev', () => {
    for (const app of APPS) {
      it(`dev ${labelOf(app)}`, { timeout: 120_000 }, ({ expect }) =>
        slots(1, async () => {
          const p = mercato(['dev', '--port', '0', '--no-watch'], app.dir, baseEnv({ MERCATO_DATA_DIR: freshDataDir(template) }));
          try {
            const [, base] = await p.waitFor(/listening on (http:\/\/\S+)/);
            await expectRoute(expect, app, base);
            const token = async () => {
              const minted = await getJson<{ token: string }>(`${base}/__mercato/preview/session-token`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ shop: SHOP }),
              });
              expect(minted.status, JSON.stringify(minted.body)).toBe(200);
              return minted.body.token;
            };
            const t = await token();
            await expectRunCompletes(expect, app, base, () => t, p.output);
          } finally {
            await p.stop();
          }
          expect(await p.exited, p.output()).toBe(0);
        }),
      );
    }
  });

  // one app of each package type, with a CommonJS or ESM-syntax .js config where the package type allows it
  const SERVED: AppSpec[] = [
    APPS.find((a) => a.id === 'none-js')!,
    APPS.find((a) => a.id === 'commonjs-js')!,
    APPS.find((a) => a.id === 'module-mts')!,
  ];
  const serveEnv = (extra: Record<string, string | undefined>) =>
    baseEnv({
      PLATFORM_API_KEY: API_KEY,
      PLATFORM_API_SECRET: API_SECRET,
      ENCRYPTION_KEY,
      // nothing listens there: installing the shop on first contact fails fast (and is not needed to run a flow)
      PLATFORM_ORIGIN: 'http://127.0.0.1:9',
      ...extra,
    });
  const sessionToken = () => signSessionToken({ apiKey: API_KEY, apiSecret: API_SECRET, shop: SHOP });

  describe.runIf(PG_URL).concurrent('mercato start + mercato worker on PostgreSQL', () => {
    for (const app of SERVED) {
      it(`start + worker ${labelOf(app)}`, { timeout: 120_000 }, ({ expect }) =>
        slots(2, async () => {
          const name = `mercato_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
          const admin = new pg.Client({ connectionString: PG_URL });
          await admin.connect();
          try {
            await admin.query(`create database ${name}`);
            databases.push(name);
          } finally {
            await admin.end();
          }
          const url = new URL(PG_URL!);
          url.pathname = `/${name}`;
          const env = serveEnv({ DATABASE_URL: url.toString() });
          const start = mercato(['start', '--port', '0'], app.dir, env);
          const worker = mercato(['worker'], app.dir, env);
          const log = () => `--- start:\n${start.output()}\n--- worker:\n${worker.output()}`;
          try {
            const [[, base]] = await Promise.all([
              start.waitFor(/listening on (http:\/\/\S+)/),
              worker.waitFor(/mercato worker .*: database PostgreSQL .*; concurrency 2/),
            ]);
            await expectRoute(expect, app, base);
            await expectRunCompletes(expect, app, base, sessionToken, log);
            // the worker ran it: `start` runs no flows
            expect(worker.output()).toContain('"event":"run.completed"');
          } finally {
            await Promise.all([start.stop(), worker.stop()]);
          }
          expect(await Promise.all([start.exited, worker.exited]), log()).toEqual([0, 0]);
        }),
      );
    }
  });

  describe.skipIf(PG_URL).concurrent('mercato start and mercato worker, each alone on PGlite', () => {
    for (const app of SERVED) {
      it(`start ${labelOf(app)}`, { timeout: 120_000 }, ({ expect }) =>
        slots(1, async () => {
          const start = mercato(['start', '--port', '0'], app.dir, serveEnv({ MERCATO_DATA_DIR: freshDataDir(template) }));
          try {
            const [, base] = await start.waitFor(/listening on (http:\/\/\S+)/);
            await expectRoute(expect, app, base);
          } finally {
            await start.stop();
          }
          expect(await start.exited, start.output()).toBe(0);
        }),
      );
      it(`worker ${labelOf(app)}`, { timeout: 120_000 }, ({ expect }) =>
        slots(1, async () => {
          const worker = mercato(['worker'], app.dir, serveEnv({ MERCATO_DATA_DIR: freshDataDir(template) }));
          try {
            await worker.waitFor(/mercato worker .*: database embedded PGlite .*; concurrency 2/);
          } finally {
            await worker.stop();
          }
          expect(await worker.exited, worker.output()).toBe(0);
        }),
      );
    }
  });
});
