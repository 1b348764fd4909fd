/**
 * `mercato init <dir>`: scaffolds a working app from the files of `templates/app/` (docs/cli.md). `{{name}}`-style
 * placeholders are replaced, and files npm would drop from the published package are stored under another name
 * (`gitignore` → `.gitignore`). A directory that is not empty is refused unless `force` is set; nothing is written then.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { basename, dirname, isAbsolute, join, normalize, relative, resolve } from 'node:path';
import { LATEST_STABLE_API_VERSION } from '../app/platform.ts';
import { PACKAGE_ROOT } from '../package-root.ts';
import { MERCATO_VERSION } from '../version.ts';

export interface InitOptions {
  /** The directory to scaffold into, as the user gave it (relative to `cwd`); created when missing. `.` is allowed. */
  dir: string;
  cwd: string;
  /** Write into a non-empty directory: the scaffold's files overwrite files of the same name, other files are left. */
  force?: boolean;
  /** The `mercato` dependency spec written to package.json (default `^<MERCATO_VERSION>`); a path becomes `file:<abs>`. */
  mercatoSpec?: string;
  out: (line: string) => void;
  /** Where problems go (default: `out`). */
  err?: (line: string) => void;
}

/** The template of `mercato init`, shipped in the npm package (`templates/app/` beside its package.json). */
export const TEMPLATE_DIR = join(PACKAGE_ROOT, 'templates', 'app');

/** Template files stored under another name because `npm pack` would drop (or rename) them. */
const RENAMED: Record<string, string> = { gitignore: '.gitignore', dockerignore: '.dockerignore' };

/** Entries that do not make a directory "not empty". */
const IGNORED_ENTRIES = new Set(['.git', '.DS_Store']);

/** Names a package of the scaffold cannot take: npm refuses to install a dependency with the name of the project itself. */
const RESERVED_NAMES = new Set(['node_modules', 'favicon.ico', 'mercato', 'zod', 'tsx', 'typescript']);

const SHOWN_ENTRIES = 5;

/** Whether npm accepts `name` as the name of a new unscoped package. */
export function isValidPackageName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 214 &&
    /^[a-z0-9][a-z0-9._-]*$/.test(name) &&
    !RESERVED_NAMES.has(name) &&
    !builtinModules.includes(name)
  );
}

/** The package name for a directory name: kept when npm accepts it, otherwise made valid (lower-case, `-` for the rest). */
export function packageNameFor(dirName: string): string {
  if (isValidPackageName(dirName)) return dirName;
  let name = dirName
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // é → e
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2') // myApp → my-App
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[._-]+/, '')
    .slice(0, 200)
    .replace(/[._-]+$/, '');
  if (!name) name = 'mercato-app';
  if (!isValidPackageName(name)) name = `${name}-app`;
  return name;
}

/** The dependency spec of `mercato`: a path (relative to `cwd`) becomes an absolute `file:` spec, anything else is kept. */
export function mercatoDependencySpec(spec: string | undefined, cwd: string): string {
  if (spec === undefined) return `^${MERCATO_VERSION}`;
  const value = spec.trim();
  if (value.startsWith('file:')) {
    const path = value.slice('file:'.length);
    return isAbsolute(path) ? value : `file:${resolve(cwd, path)}`;
  }
  const looksLikePath = isAbsolute(value) || /^\.\.?([\\/]|$)/.test(value) || (/\.(tgz|tar\.gz)$/.test(value) && !value.includes('://'));
  return looksLikePath ? `file:${resolve(cwd, value)}` : value;
}

/** mercato's own dependency specs: the scaffold's zod follows mercato's (its types are the ones mercato's use). */
function mercatoDependencies(): Record<string, string> {
  try {
    const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8'));
    return pkg.dependencies ?? {};
  } catch {
    return {};
  }
}

/** Every template file, as a `/`-separated path relative to the template folder, sorted. */
function templateFiles(dir = TEMPLATE_DIR, prefix = ''): string[] {
  const files: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) files.push(...templateFiles(full, `${prefix}${name}/`));
    else files.push(`${prefix}${name}`);
  }
  return files;
}

function targetPathOf(templatePath: string): string {
  const parts = templatePath.split('/');
  const last = parts.pop()!;
  return [...parts, RENAMED[last] ?? last].join('/');
}

/** Replaces `{{key}}` for the known keys only; in JSON files the values are escaped as JSON string content. */
function substitute(text: string, values: Record<string, string>, json: boolean): string {
  return text.replace(/\{\{(\w+)\}\}/g, (match, key: string) => {
    if (!(key in values)) return match;
    return json ? JSON.stringify(values[key]).slice(1, -1) : values[key];
  });
}

/** A path as the user would type it in a POSIX shell. */
function shellQuote(path: string): string {
  return /^[A-Za-z0-9_./~@%+=:,-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}

function entryList(entries: string[]): string {
  const shown = entries.slice(0, SHOWN_ENTRIES).join(', ');
  return entries.length > SHOWN_ENTRIES ? `${shown} and ${entries.length - SHOWN_ENTRIES} more` : shown;
}

/** `mercato init <dir>`: returns the exit code (0 done, 1 refused or failed, 2 usage error). */
export async function runInit(options: InitOptions): Promise<number> {
  const { cwd, out } = options;
  const err = options.err ?? out;
  if (typeof options.dir !== 'string' || options.dir.trim() === '') {
    err('mercato init: missing the directory to create the app in (mercato init <dir>; "." for the current directory)');
    return 2;
  }
  if (options.mercatoSpec !== undefined && options.mercatoSpec.trim() === '') {
    err('mercato init: --mercato needs a dependency spec (a version range, a tag, a path to a tarball, …)');
    return 2;
  }
  const target = resolve(cwd, options.dir);
  const shown = normalize(options.dir).replace(/[\\/]+$/, '') || options.dir;
  const named = isAbsolute(shown) ? `"${target}"` : `"${shown}" (${target})`;

  // Every check comes before anything is written.
  if (existsSync(target) && !statSync(target).isDirectory()) {
    err(`mercato init: ${named} exists and is not a directory`);
    return 1;
  }
  const entries = existsSync(target)
    ? readdirSync(target)
        .filter((e) => !IGNORED_ENTRIES.has(e))
        .sort()
    : [];
  if (entries.length > 0 && !options.force) {
    err(`mercato init: the directory ${named} is not empty (it contains ${entryList(entries)}).`);
    err(
      'Pass --force to create the app in it anyway: the files of the scaffold overwrite files of the same name, other files are left as they are.',
    );
    return 1;
  }
  const files = templateFiles()
    .map((template) => ({ template, target: targetPathOf(template) }))
    .sort((a, b) => a.target.split('/').length - b.target.split('/').length || a.target.localeCompare(b.target));
  const blocked: string[] = [];
  for (const file of files) {
    const parts = file.target.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const path = join(target, ...parts.slice(0, i));
      if (!existsSync(path)) break;
      const isDir = statSync(path).isDirectory();
      if (i < parts.length ? !isDir : isDir) {
        blocked.push(`${parts.slice(0, i).join('/')} (${isDir ? 'a directory' : 'a file'})`);
        break;
      }
    }
  }
  if (blocked.length > 0) {
    const list = [...new Set(blocked)];
    err(
      `mercato init: cannot write the scaffold into ${named}: ${list.join(', ')} ${list.length === 1 ? 'is' : 'are'} in the way; move ${list.length === 1 ? 'it' : 'them'} and run again`,
    );
    return 1;
  }

  const dirName = basename(target);
  const name = packageNameFor(dirName);
  const deps = mercatoDependencies();
  const values: Record<string, string> = {
    name,
    mercatoSpec: mercatoDependencySpec(options.mercatoSpec, cwd),
    zodSpec: deps.zod ?? '^4',
    // shopify.app.toml's [webhooks] api_version: the Admin API version the app's client uses by default
    apiVersion: LATEST_STABLE_API_VERSION,
  };

  const written: string[] = [];
  try {
    mkdirSync(target, { recursive: true });
    for (const file of files) {
      const json = file.template.endsWith('.json');
      const content = substitute(readFileSync(join(TEMPLATE_DIR, ...file.template.split('/')), 'utf8'), values, json);
      if (json) JSON.parse(content); // a template error must not reach the user's project unnoticed
      const path = join(target, ...file.target.split('/'));
      const existed = existsSync(path);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
      written.push(existed ? `${file.target} (overwritten)` : file.target);
    }
  } catch (error) {
    err(`mercato init: could not write the scaffold into ${named}: ${(error as Error).message}`);
    if (written.length > 0) err(`Written before the failure: ${written.join(', ')}`);
    return 1;
  }

  const here = relative(cwd, target) === '';
  out(`Created a Mercato app in ${here ? 'the current directory' : shown}:`);
  if (name !== dirName) out(`  (package name "${name}": "${dirName}" is not a usable npm package name)`);
  for (const file of written) out(`  ${file}`);
  const localSpec = values.mercatoSpec!.startsWith('file:') ? values.mercatoSpec!.slice('file:'.length) : undefined;
  if (localSpec !== undefined && !existsSync(localSpec))
    err(
      `mercato init: warning: --mercato ${localSpec} does not exist; \`npm install\` in the app fails until it does (or fix "mercato" in its package.json)`,
    );
  out('');
  out('Next steps:');
  if (!here) out(`  cd ${shellQuote(shown)}`);
  out('  npm install');
  out('  npm run dev');
  out('');
  out('See README.md in the app for what it contains and where to go next.');
  return 0;
}
