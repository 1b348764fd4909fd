/**
 * A fresh embedded database from a template instead of initdb. Creating a PGlite database runs PostgreSQL's initdb in
 * WebAssembly (about 6 s on a small machine) and then every migration; opening one that exists takes under a second.
 * So the package's build (scripts/build.mjs) makes, once, an empty database with every migration applied in
 * `dist/pglite-template/`, and a new data folder starts as a copy of it (a file copy, about 0.2 s). A database in memory
 * (the test suite's, db/testing.ts) may load the same template from its dump instead (templateDump).
 *
 * The template is used only when it is exactly what this code would make: its key (TEMPLATE_KEY_FILE) is a hash of
 * the PGlite version and of every migration (tag and content); any difference (a PGlite upgrade, a new or edited
 * migration) and the folder is made by initdb as before. Migrations still run and are checked at every start: with a
 * template, the journal says they are all applied (docs/architecture.md, "Start-up").
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync, readdirSync, renameSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.ts';
import { loadMigrations } from './migrations.ts';

/** Where the build puts the template (shipped in the package with dist/). */
export const PGLITE_TEMPLATE_DIR = join(PACKAGE_ROOT, 'dist', 'pglite-template');
/** The file beside the template's data holding its key (not copied into a data folder). */
const TEMPLATE_KEY_FILE = 'mercato-template.json';
/** The data folder inside a template folder. */
const TEMPLATE_DATA = 'data';
/** The same data as PGlite's own dump (dumpDataDir, gzip), for a database in memory (loadDataDir). */
const TEMPLATE_DUMP = 'data.tar.gz';

/** The installed PGlite's version (part of the key: its data format belongs to its PostgreSQL build). */
function pgliteVersion(): string {
  const require = createRequire(import.meta.url);
  // the package's entry resolves from here; its package.json sits at the root of its folder
  let dir = dirname(require.resolve('@electric-sql/pglite'));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
      if (parsed.name === '@electric-sql/pglite') return parsed.version ?? 'unknown';
    }
    const parent = dirname(dir);
    if (parent === dir) return 'unknown';
    dir = parent;
  }
}

/** The key a template must carry to be used by this code: the PGlite version and every migration's tag and hash. */
export function templateKey(migrationsDir?: string): string {
  const hash = createHash('sha256').update(`pglite ${pgliteVersion()}\n`);
  for (const m of loadMigrations(migrationsDir)) hash.update(`${m.tag} ${m.hash}\n`);
  return hash.digest('hex');
}

function readKey(templateDir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(templateDir, TEMPLATE_KEY_FILE), 'utf8')) as { key?: string }).key;
  } catch {
    return undefined;
  }
}

/** True when `templateDir` holds a whole template (its data and its dump) that this code may use. */
export function templateUsable(templateDir = PGLITE_TEMPLATE_DIR, key = templateKey()): boolean {
  return (
    readKey(templateDir) === key &&
    existsSync(join(templateDir, TEMPLATE_DATA, 'PG_VERSION')) &&
    existsSync(join(templateDir, TEMPLATE_DUMP))
  );
}

const dumps = new Map<string, Blob>();

/**
 * The template as PGlite's dump, for a database in memory (`loadDataDir`: about 1.5 s, where initdb and the migrations
 * take about 7), read once per process; undefined when the template is not usable or has no dump.
 */
export function templateDump(templateDir: string = PGLITE_TEMPLATE_DIR): Blob | undefined {
  const dir = resolve(templateDir);
  const known = dumps.get(dir);
  if (known) return known;
  if (!templateUsable(dir)) return undefined;
  const dump = new Blob([readFileSync(join(dir, TEMPLATE_DUMP))]);
  dumps.set(dir, dump);
  return dump;
}

/** Writes PGlite's dump of the data folder `dataDir` (closed) to `file`. */
async function writeDump(dataDir: string, file: string): Promise<void> {
  const [{ PGlite }, { pg_trgm }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite/contrib/pg_trgm')]);
  const client = new PGlite({ dataDir, extensions: { pg_trgm } });
  try {
    await client.waitReady;
    const dump = await client.dumpDataDir('gzip');
    writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  } finally {
    await client.close();
  }
}

/** A data folder that holds no database yet: missing, or empty (PGlite would run initdb in it). */
function isFresh(dataDir: string): boolean {
  if (!existsSync(dataDir)) return true;
  return readdirSync(dataDir).length === 0;
}

/**
 * Makes `dataDir` a copy of the template when the folder holds no database yet and the template is usable; returns
 * whether it did. The copy is made beside the folder and renamed into place, so a copy cut short leaves no half
 * database (the next start makes a new one). The caller holds the folder's lock (data-dir-lock.ts).
 */
export function seedFromTemplate(dataDir: string, templateDir: string = PGLITE_TEMPLATE_DIR): boolean {
  const target = resolve(dataDir);
  if (!isFresh(target) || !templateUsable(templateDir)) return false;
  const staging = join(dirname(target), `.${basename(target)}.template-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  try {
    cpSync(join(templateDir, TEMPLATE_DATA), staging, { recursive: true });
    if (existsSync(target)) rmdirSync(target); // empty (isFresh): made by an earlier attempt, or by the user
    renameSync(staging, target);
    return true;
  } catch {
    rmSync(staging, { recursive: true, force: true });
    return false; // initdb makes it instead
  }
}

/**
 * Makes a template in `templateDir` with `create` (which makes and migrates an embedded database in the folder it is
 * given and closes it), unless one with this code's key is there. Returns whether it made one. Used by the build.
 */
export async function buildTemplate(
  templateDir: string,
  create: (dataDir: string) => Promise<void>,
  options: { migrationsDir?: string } = {},
): Promise<boolean> {
  const key = templateKey(options.migrationsDir);
  if (templateUsable(templateDir, key)) return false;
  const staging = `${resolve(templateDir)}.building-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  try {
    await create(join(staging, TEMPLATE_DATA));
    await writeDump(join(staging, TEMPLATE_DATA), join(staging, TEMPLATE_DUMP));
    writeFileSync(
      join(staging, TEMPLATE_KEY_FILE),
      `${JSON.stringify({ key, pglite: pgliteVersion(), madeAt: new Date().toISOString() })}\n`,
    );
    rmSync(templateDir, { recursive: true, force: true });
    renameSync(staging, templateDir);
    return true;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
