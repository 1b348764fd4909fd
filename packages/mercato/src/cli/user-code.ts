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
  return codeFrameColumns(source, { start: { line: loc.line, column: loc.column } }, { highlightCode: false, linesAbove: 2, linesBelow: 2, message });
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

/**
 * An error thrown while the app's modules were evaluated: its message, where in the app it was thrown, and a code frame.
 * `what` says what was being loaded (`service.config.ts`, `routes/orders.ts`).
 */
export function fromEvaluationError(error: unknown, projectDir: string, what: string): UserCodeError {
  const err = error instanceof Error ? error : new Error(String(error));
  const where = projectFrames(err.stack, projectDir)[0];
  const title = err.name && err.name !== 'Error' && !err.message.startsWith(err.name) ? `${err.name}: ${err.message}` : err.message;
  if (!where) return new UserCodeError(`${what} threw while loading: ${title}`, [], { cause: err });
  return new UserCodeError(`${what} threw while loading, at ${displayLocation(projectDir, where)}:\n\n${indent(title)}\n\n${indent(codeFrame(where))}`, [where], { cause: err });
}
