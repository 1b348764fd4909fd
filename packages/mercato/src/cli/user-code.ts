/**
 * Errors from the app's own files, made readable: `file:line:column`, the message, and a code frame of the line — never
 * a bundler or internal stack. Used for build errors (syntax errors, missing exports, unresolvable imports) and for
 * errors thrown while the app's modules are evaluated (a throwing module, an invalid `defineConfig`).
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { codeFrameColumns } from '@babel/code-frame';

export interface SourceLocation {
  /** Absolute path. */
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
}

export class UserCodeError extends Error {
  constructor(
    message: string,
    readonly locations: SourceLocation[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'UserCodeError';
  }
}

/** `flows/sync.ts:12:7` relative to the project (absolute when outside it). */
export function displayLocation(projectDir: string, loc: SourceLocation): string {
  const rel = relative(projectDir, loc.file);
  const shown = rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel.split(sep).join('/') : loc.file;
  return `${shown}:${loc.line}:${loc.column}`;
}

/** Two lines above and below, a `>` on the line and a caret under the column (no colours: the terminal may be a file). */
export function codeFrame(loc: SourceLocation, message?: string): string {
  let source: string;
  try {
    source = readFileSync(loc.file, 'utf8');
  } catch {
    return '';
  }
  return codeFrameColumns(
    source,
    { start: { line: loc.line, column: loc.column } },
    { highlightCode: false, linesAbove: 2, linesBelow: 2, message },
  );
}

const indent = (text: string, by = '  ') =>
  text
    .split('\n')
    .map((l) => (l ? by + l : l))
    .join('\n');

interface EsbuildMessage {
  text: string;
  location: { file: string; line: number; column: number; lineText?: string } | null;
  notes?: Array<{ text: string; location: { file: string; line: number; column: number } | null }>;
}

/** An esbuild failure (syntax error, missing export, unresolvable import) as one readable error listing every message. */
export function fromBuildFailure(errors: EsbuildMessage[], projectDir: string, buildRoot: string): UserCodeError {
  const locations: SourceLocation[] = [];
  const parts = errors.map((m) => {
    if (!m.location) return `error: ${m.text}`;
    const loc = { file: resolve(buildRoot, m.location.file), line: m.location.line, column: m.location.column + 1 };
    locations.push(loc);
    const notes = (m.notes ?? []).filter((n) => n.text).map((n) => `  note: ${n.text}`);
    return [`${displayLocation(projectDir, loc)}: error: ${m.text}`, indent(codeFrame(loc)), ...notes].filter(Boolean).join('\n');
  });
  const heading = errors.length === 1 ? 'the app does not build' : `the app does not build (${errors.length} errors)`;
  return new UserCodeError(`${heading}:\n\n${parts.join('\n\n')}`, locations);
}

/** The frames of a stack that point into the project's own files (not node_modules, not the bundle folder). */
export function projectFrames(stack: string | undefined, projectDir: string): SourceLocation[] {
  if (!stack) return [];
  const frames: SourceLocation[] = [];
  const re = /(?:\(|\s)((?:file:\/\/)?\/[^\s():]+(?::[^\s():]+)*?):(\d+):(\d+)\)?$/;
  for (const line of stack.split('\n')) {
    const m = re.exec(line.trim());
    if (!m) continue;
    let file = m[1]!;
    try {
      if (file.startsWith('file://')) file = fileURLToPath(file);
    } catch {
      continue;
    }
    const rel = relative(projectDir, file);
    if (rel.startsWith('..') || isAbsolute(rel)) continue;
    if (rel.split(sep).some((part) => part === 'node_modules' || part === '.mercato')) continue;
    frames.push({ file, line: Number(m[2]), column: Number(m[3]) });
  }
  return frames;
}

/** An npm package the app imports (the bundle keeps it an import): the app's file and the specifier as written. */
export interface PackageImport {
  file: string;
  specifier: string;
}

export interface EvaluationHints {
  /** The app's files importing a package (`zod`, `mercato/testing`): Node's link errors name the package, not the file. */
  packageImports?: PackageImport[];
  /** The bundle's folder: a path inside it in a message is replaced by the app's file (or left out). */
  buildDir?: string;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function lineAndColumn(source: string, index: number): { line: number; column: number } {
  const before = source.slice(0, index);
  const line = before.split('\n').length;
  return { line, column: index - before.lastIndexOf('\n') };
}

/** The import of `specifier` in `file` (at `name` when given: the imported name Node could not find). */
function findImport(file: string, specifier: string, name?: string): SourceLocation | undefined {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const quoted = new RegExp(`(['"])${escapeRe(specifier)}\\1`, 'g');
  for (const m of source.matchAll(quoted)) {
    let index = m.index;
    if (name !== undefined) {
      // the statement the specifier ends: from its `import`/`export` keyword to the specifier
      let start = -1;
      for (const k of source.slice(0, index).matchAll(/(?<![\w$.])(?:import|export)(?=[\s{*])/g)) start = k.index;
      if (start < 0) continue;
      const named = new RegExp(`(?<![\\w$])${escapeRe(name)}(?![\\w$])`).exec(source.slice(start, index));
      if (!named) continue;
      index = start + named.index;
    }
    return { file, ...lineAndColumn(source, index) };
  }
  return undefined;
}

/**
 * Node's link errors point at no line of the app: `SyntaxError: The requested module 'zod' does not provide an export
 * named 'zz'` (an import of a name a package does not export) and `Cannot find package 'x' imported from <bundle>` (a
 * package that is not installed). The first carries a source-mapped header (`/app/flows/a.ts:3`, the line, a caret); for
 * both, the app's imports of that package (from the bundle's metafile) say which file and where.
 */
const MISSING_EXPORT_RE = /The requested module '([^']+)' does not provide an export named '([^']+)'/;
const NOT_FOUND_RE = /Cannot find (?:package|module) '([^']+)'/;
const isLinkError = (err: Error) => MISSING_EXPORT_RE.test(err.message) || NOT_FOUND_RE.test(err.message);

function linkErrorLocation(err: Error, projectDir: string, hints: EvaluationHints): SourceLocation | undefined {
  const missing = MISSING_EXPORT_RE.exec(err.message);
  const notFound = NOT_FOUND_RE.exec(err.message);
  if (!missing && !notFound) return undefined;
  const header = /^((?:file:\/\/)?\/[^\n]*?):(\d+)\n([^\n]*)\n( *)\^/.exec(err.stack ?? '');
  if (header) {
    const frame = projectFrames(` ${header[1]}:${header[2]}:1`, projectDir)[0];
    if (frame) {
      const at = missing ? new RegExp(`(?<![\\w$])${escapeRe(missing[2]!)}(?![\\w$])`).exec(header[3]!)?.index : undefined;
      return { ...frame, column: (at ?? header[4]!.length) + 1 };
    }
  }
  const pkg = (missing ?? notFound)![1]!;
  const inPackage = (specifier: string) => specifier === pkg || specifier.startsWith(`${pkg}/`);
  for (const imp of hints.packageImports ?? []) {
    if (!inPackage(imp.specifier)) continue;
    const loc = findImport(imp.file, imp.specifier, missing?.[2]);
    if (loc) return loc;
  }
  return undefined;
}

/**
 * An error thrown while the app's modules were evaluated: its message, where in the app it was thrown, and a code frame.
 * `what` says what was being loaded (`service.config.ts`, `routes/orders.ts`).
 */
export function fromEvaluationError(error: unknown, projectDir: string, what: string, hints: EvaluationHints = {}): UserCodeError {
  const err = error instanceof Error ? error : new Error(String(error));
  const where = projectFrames(err.stack, projectDir)[0] ?? linkErrorLocation(err, projectDir, hints);
  let message = err.message;
  if (hints.buildDir) {
    // `… imported from /app/.mercato/build/123-1/routes/a.mjs`: the bundle is no file of the user's
    const inBuild = new RegExp(`\\s*(?:imported )?from (?:file://)?${escapeRe(hints.buildDir)}\\S*`, 'g');
    message = message.replace(inBuild, where ? ` imported from ${displayLocation(projectDir, where).replace(/:\d+:\d+$/, '')}` : '');
  }
  const title = err.name && err.name !== 'Error' && !message.startsWith(err.name) ? `${err.name}: ${message}` : message;
  const heading = isLinkError(err) ? `${what} cannot be loaded` : `${what} threw while loading`;
  if (!where) return new UserCodeError(`${heading}: ${title}`, [], { cause: err });
  return new UserCodeError(
    `${heading}, at ${displayLocation(projectDir, where)}:\n\n${indent(title)}\n\n${indent(codeFrame(where))}`,
    [where],
    { cause: err },
  );
}
