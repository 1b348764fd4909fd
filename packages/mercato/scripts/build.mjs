#!/usr/bin/env node
/**
 * Builds the installable `mercato` package into dist/:
 *   dist/index.js, dist/testing.js, dist/cli.js   ESM bundles (npm dependencies stay external; the platform simulator
 *                                                  of `mercato dev` is bundled in, it is not published on its own)
 *   dist/types/                                    type declarations (tsc), with `.js` import specifiers
 *   dist/admin-ui/                                 the built admin UI (packages/admin-ui), served at `/`
 *   dist/pglite-template/                          an empty embedded database with every migration applied: a new
 *                                                  data folder starts as its copy (src/db/pglite-template.ts)
 * Options: --js (JavaScript only: what the CLI needs to run; used by `npm start` and the test set-up),
 *          --if-stale (skip when dist/ is newer than every source file), --quiet, --no-pglite-template (no
 *          dist/pglite-template/: the image's build, where the database is PostgreSQL and 45 MB count).
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const jsOnly = args.has('--js');
const quiet = args.has('--quiet');
const say = (line) => quiet || process.stdout.write(`${line}\n`);
const dist = join(root, 'dist');
const adminUiRoot = join(root, '..', 'admin-ui');
const simRoot = join(root, '..', 'platform-sim');

function newestMtime(dir) {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const full = join(dir, name);
    const st = statSync(full);
    newest = Math.max(newest, st.isDirectory() ? newestMtime(full) : st.mtimeMs);
  }
  return newest;
}

const stamp = join(dist, '.build-stamp');
if (args.has('--if-stale') && existsSync(stamp)) {
  const built = statSync(stamp).mtimeMs;
  // the migrations too: the embedded database template is made from them
  const sources = Math.max(
    newestMtime(join(root, 'src')),
    newestMtime(join(simRoot, 'src')),
    newestMtime(join(root, 'migrations')),
    statSync(join(root, 'package.json')).mtimeMs,
  );
  const wantTypes = !jsOnly && !existsSync(join(dist, 'types', 'index.d.ts'));
  if (sources < built && !wantTypes && existsSync(join(dist, 'cli.js'))) process.exit(0);
}

// loaded only once a build is due: `npm start` on a built tree stops above without paying for it
const { build } = await import('esbuild');
const started = Date.now();
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
// built beside dist/ and swapped in at the end, so a process running the CLI from dist/ meanwhile keeps working
const out = join(root, `.dist-build-${process.pid}`);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
// a JavaScript-only build keeps the declarations of the last full build
if (jsOnly && existsSync(join(dist, 'types'))) cpSync(join(dist, 'types'), join(out, 'types'), { recursive: true });

await build({
  absWorkingDir: root,
  entryPoints: { index: 'src/index.ts', testing: 'src/db/testing.ts', cli: 'src/cli/main.ts' },
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  chunkNames: 'chunks/[name]-[hash]',
  // npm dependencies stay imports (installed beside the package); vitest is only needed by mercato/testing
  external: [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {}), 'vitest'],
  logLevel: 'warning',
});
say(`mercato build: JavaScript bundles in dist/ (${Date.now() - started} ms)`);

if (!jsOnly) {
  const t = Date.now();
  const tsc = spawnSync(
    process.execPath,
    [
      join(root, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      join(root, 'tsconfig.build.json'),
      '--outDir',
      join(out, 'types'),
    ],
    { stdio: 'inherit' },
  );
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
  // declarations keep the sources' `.ts` specifiers: point them at the `.d.ts` files' JavaScript names
  const rewrite = (dir) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) rewrite(full);
      else if (name.endsWith('.d.ts')) {
        const text = readFileSync(full, 'utf8');
        const next = text.replace(/((?:from\s+|import\()\s*['"])(\.{1,2}\/[^'"]*?)\.ts(['"])/g, '$1$2.js$3');
        if (next !== text) writeFileSync(full, next);
      }
    }
  };
  rewrite(join(out, 'types'));
  say(`mercato build: type declarations in dist/types/ (${Date.now() - t} ms)`);
}

// the admin UI: build it when it is missing, then ship a copy inside the package
if (existsSync(join(adminUiRoot, 'package.json'))) {
  if (
    !existsSync(join(adminUiRoot, 'dist', 'index.html')) ||
    newestMtime(join(adminUiRoot, 'src')) > statSync(join(adminUiRoot, 'dist', 'index.html')).mtimeMs
  ) {
    const t = Date.now();
    const vite = spawnSync('npm', ['run', 'build', '--silent', '-w', 'packages/admin-ui'], {
      cwd: join(root, '..', '..'),
      stdio: quiet ? 'ignore' : 'inherit',
    });
    if (vite.status !== 0) process.exit(vite.status ?? 1);
    say(`mercato build: admin UI built (${Date.now() - t} ms)`);
  }
  cpSync(join(adminUiRoot, 'dist'), join(out, 'admin-ui'), { recursive: true });
}
// the embedded database template (src/db/pglite-template.ts): the last build's is kept while its key holds (the same
// PGlite and migrations), else made again (initdb and the migrations, several seconds)
if (!args.has('--no-pglite-template')) {
  const t = Date.now();
  const template = join(out, 'pglite-template');
  if (existsSync(join(dist, 'pglite-template'))) renameSync(join(dist, 'pglite-template'), template);
  const { buildPgliteTemplate } = await import(pathToFileURL(join(out, 'cli.js')).href);
  if (await buildPgliteTemplate(template)) say(`mercato build: embedded database template in dist/pglite-template/ (${Date.now() - t} ms)`);
}
writeFileSync(join(out, '.build-stamp'), `${new Date().toISOString()}\n`);
const old = join(root, `.dist-old-${process.pid}`);
if (existsSync(dist)) renameSync(dist, old);
renameSync(out, dist);
rmSync(old, { recursive: true, force: true });
say(`mercato build: done in ${Date.now() - started} ms`);
