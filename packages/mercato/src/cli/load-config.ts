/**
 * Loads the app: finds `service.config.ts` (or `--config`), bundles it together with every file under `routes/` with
 * esbuild into `.mercato/build/` as ES modules (`.mjs`), and imports the bundle. Any module setup therefore loads the
 * same way: `.ts`, `.mts`, `.js` or `.mjs` files, ESM or CommonJS syntax, a package.json with or without `"type"`.
 * npm packages stay imports resolved from the app's node_modules (so the app and the CLI share one `mercato`); the
 * app's own files are bundled, with `import.meta.url`, `__dirname` and `__filename` keeping their original values.
 * Source maps make stack traces point at the original files. Errors come out as UserCodeError (file:line:column and a
 * code frame). See docs/cli.md ("How your files are loaded").
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Message, type Plugin, build } from 'esbuild';
import { type MercatoInstance, isMercatoInstance } from '../app/app.ts';
import { type RouteFile, scanRouteFiles } from '../routes/loader.ts';
import { type PackageImport, UserCodeError, fromBuildFailure, fromEvaluationError } from './user-code.ts';

export const CONFIG_FILE_NAMES = ['service.config.ts', 'service.config.mts', 'service.config.js', 'service.config.mjs'];

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export function findConfigFile(cwd: string, explicit?: string): string {
  if (explicit) {
    const path = resolve(cwd, explicit);
    if (!existsSync(path)) throw new CliError(`Config file not found: ${path}`);
    return path;
  }
  for (const name of CONFIG_FILE_NAMES) {
    const path = resolve(cwd, name);
    if (existsSync(path)) return path;
  }
  throw new CliError(`No ${CONFIG_FILE_NAMES[0]} found in ${cwd} (looked for ${CONFIG_FILE_NAMES.join(', ')}); pass --config <path>`);
}

/** Imports a module of the app (a route file) from the same bundle as the config. */
export type ModuleLoader = (file: string) => Promise<Record<string, unknown>>;

export interface LoadedConfig {
  instance: MercatoInstance<any, any>;
  configPath: string;
  projectDir: string;
  /** Imports a file of the app from this load's bundle (route files); other files are imported as they are. */
  loadModule: ModuleLoader;
  /** The app's own source files this load read (what `mercato dev` watches). */
  inputs: string[];
  /** Removes this load's bundle folder. */
  dispose(): void;
}

const LOADERS: Record<string, 'ts' | 'tsx' | 'js' | 'jsx' | 'json'> = {
  '.ts': 'ts',
  '.mts': 'ts',
  '.cts': 'ts',
  '.tsx': 'tsx',
  '.js': 'js',
  '.mjs': 'js',
  '.cjs': 'js',
  '.jsx': 'jsx',
  '.json': 'json',
};

/** Gives each bundled file of the app its own `import.meta.url`, `__dirname` and `__filename`. */
function originalLocations(): Plugin {
  return {
    name: 'mercato-original-locations',
    setup(b) {
      b.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, (args) => {
        if (args.path.split(sep).includes('node_modules')) return undefined;
        const loader = LOADERS[extname(args.path)];
        if (!loader) return undefined;
        const contents = readFileSync(args.path, 'utf8');
        // on the first line, so every other line keeps its number (stack traces, code frames)
        const prelude =
          `var __mercato_url = ${JSON.stringify(pathToFileURL(args.path).href)}, ` +
          `__mercato_dirname = ${JSON.stringify(dirname(args.path))}, __mercato_filename = ${JSON.stringify(args.path)};`;
        return { contents: prelude + contents, loader };
      });
    },
  };
}

let generation = 0;

/** Removes bundle folders left by processes that no longer run. */
function cleanStaleBuilds(buildRoot: string) {
  if (!existsSync(buildRoot)) return;
  for (const name of readdirSync(buildRoot)) {
    const pid = Number(name.split('-')[0]);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch (error) {
      alive = (error as NodeJS.ErrnoException).code === 'EPERM';
    }
    if (!alive) rmSync(join(buildRoot, name), { recursive: true, force: true });
  }
}

export interface LoadConfigOptions {
  /** Where bundles go (default: `<project>/.mercato/build`, or MERCATO_BUILD_DIR). It must be inside the project. */
  buildRoot?: string;
}

export async function loadConfig(cwd: string, explicit?: string, options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const configPath = findConfigFile(cwd, explicit);
  const projectDir = dirname(configPath);
  const buildRoot =
    options.buildRoot ??
    (process.env.MERCATO_BUILD_DIR ? resolve(projectDir, process.env.MERCATO_BUILD_DIR) : join(projectDir, '.mercato', 'build'));
  const routesDir = join(projectDir, 'routes');
  const routeFiles: RouteFile[] = scanRouteFiles(routesDir).routes;
  generation += 1;
  const outDir = join(buildRoot, `${process.pid}-${generation}`);
  if (generation === 1) cleanStaleBuilds(buildRoot);
  mkdirSync(outDir, { recursive: true });
  // the bundle is ESM whatever the app's package.json says
  writeFileSync(join(outDir, 'package.json'), '{ "type": "module" }\n');
  const dispose = () => rmSync(outDir, { recursive: true, force: true });

  const entryPoints = [configPath, ...routeFiles.map((r) => r.file)];
  let metafile;
  try {
    const result = await build({
      absWorkingDir: projectDir,
      entryPoints,
      outdir: outDir,
      outbase: projectDir,
      outExtension: { '.js': '.mjs' },
      entryNames: '[dir]/[name]',
      chunkNames: '_chunks/[name]-[hash]',
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      sourcemap: 'inline',
      sourcesContent: false,
      metafile: true,
      write: true,
      logLevel: 'silent',
      define: {
        'import.meta.url': '__mercato_url',
        // Node's import.meta.dirname and import.meta.filename (20.11+) too: else they would name the bundle folder
        'import.meta.dirname': '__mercato_dirname',
        'import.meta.filename': '__mercato_filename',
        __dirname: '__mercato_dirname',
        __filename: '__mercato_filename',
      },
      // CommonJS files of the app may call require(): give the ES module output one
      banner: {
        js: "import { createRequire as __mercatoCreateRequire } from 'node:module'; const require = __mercatoCreateRequire(import.meta.url);",
      },
      plugins: [originalLocations()],
    });
    metafile = result.metafile;
  } catch (error) {
    dispose();
    const errors = (error as { errors?: Message[] }).errors;
    if (Array.isArray(errors) && errors.length > 0) throw fromBuildFailure(errors, projectDir, projectDir);
    throw error;
  }

  const outputs = new Map<string, string>();
  for (const [out, meta] of Object.entries(metafile.outputs))
    if (meta.entryPoint) outputs.set(resolve(projectDir, meta.entryPoint), resolve(projectDir, out));
  const inputs = Object.keys(metafile.inputs)
    .map((p) => resolve(projectDir, p))
    .filter((p) => !p.split(sep).includes('node_modules'));
  // the packages each file of the app imports: Node's link errors (a missing export, a package not installed) name the
  // package and the bundle, and these say which file of the app it was
  const packageImports: PackageImport[] = [];
  for (const [input, meta] of Object.entries(metafile.inputs)) {
    for (const imp of meta.imports)
      if (imp.external) packageImports.push({ file: resolve(projectDir, input), specifier: imp.original ?? imp.path });
  }
  const hints = { packageImports, buildDir: outDir };

  const configOut = outputs.get(configPath);
  if (!configOut) throw new Error(`mercato: the bundle of ${configPath} was not written`);
  const display = relative(cwd, configPath) || configPath;
  let mod: Record<string, unknown>;
  try {
    mod = await import(pathToFileURL(configOut).href);
  } catch (error) {
    dispose();
    throw fromEvaluationError(error, projectDir, display, hints);
  }
  const instance = esmShape(mod).default;
  if (!isMercatoInstance(instance)) {
    dispose();
    throw new UserCodeError(
      `${display} must export the configured instance as its default export:\n\n  export default defineApp({ ... }).defineConfig({ ... });\n\n` +
        (instance === undefined
          ? `It has no default export (its exports: ${Object.keys(mod).join(', ') || 'none'}).`
          : `Its default export is ${describe(instance)}.`),
    );
  }
  const loadModule: ModuleLoader = async (file) => {
    const out = outputs.get(resolve(file));
    const target = out ?? resolve(file);
    try {
      return esmShape((await import(pathToFileURL(target).href)) as Record<string, unknown>);
    } catch (error) {
      throw fromEvaluationError(error, projectDir, relative(projectDir, file).split(sep).join('/'), hints);
    }
  };
  return { instance, configPath, projectDir, loadModule, inputs, dispose };
}

/**
 * A CommonJS file compiled from ESM (tsc, Babel: `exports.__esModule = true; exports.default = …`) is bundled as
 * `export default module.exports`: as an entry (the config, a route) it gets its ESM shape back — `default` is
 * `exports.default`, the other exports are named exports — as esbuild gives it when a file of the app imports it.
 */
function esmShape(mod: Record<string, unknown>): Record<string, unknown> {
  const cjs = mod.default as Record<string, unknown> | null | undefined;
  if (Object.keys(mod).length !== 1 || typeof cjs !== 'object' || cjs === null || cjs.__esModule !== true) return mod;
  return { ...cjs, default: cjs.default };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object')
    return `an object with keys ${
      Object.keys(value as object)
        .slice(0, 5)
        .join(', ') || '(none)'
    }`;
  return `${typeof value} ${JSON.stringify(value)}`;
}
