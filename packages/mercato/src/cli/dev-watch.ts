/**
 * The file watcher of `mercato dev` (chokidar): any change to a source file of the app (`.ts`, `.mts`, `.cts`, `.js`,
 * `.mjs`, `.cjs`, `.json`, `.toml`) outside node_modules, `.mercato`, `.git`, `dist`, `coverage` and test folders
 * (`test`, `tests`, `__tests__`), test files (`*.test.*`, `*.spec.*`) excepted, reloads it. Changes that arrive
 * together (an editor saving several files, a `git checkout`) are collected for DEBOUNCE_MS and make one reload; a
 * change during a reload makes one more reload after it.
 */
import { relative, sep } from 'node:path';
import { watch } from 'chokidar';

export const DEBOUNCE_MS = 60;
const SOURCE_RE = /\.(?:[cm]?[jt]sx?|json|toml)$/;
const IGNORED_DIRS = new Set(['node_modules', '.mercato', '.git', 'dist', 'coverage', 'test', 'tests', '__tests__']);
/** Test files are not part of the running app. */
const TEST_FILE_RE = /\.(?:test|spec)\.[cm]?[jt]sx?$/;

export interface ProjectWatcher {
  /** Resolves once the initial scan is done (changes after this are seen). */
  ready: Promise<void>;
  /** Treats these files (absolute paths) as changed: one reload, like a change the watcher saw. */
  notify(paths: string[]): void;
  close(): Promise<void>;
}

export function watchProject(projectDir: string, onChange: (changed: string[]) => Promise<void>): ProjectWatcher {
  const isIgnored = (path: string) => {
    const rel = relative(projectDir, path);
    if (rel === '') return false;
    return rel.split(sep).some((part) => IGNORED_DIRS.has(part));
  };
  const watcher = watch(projectDir, { ignoreInitial: true, ignored: isIgnored, awaitWriteFinish: false });
  let pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let closed = false;
  const flush = async () => {
    timer = undefined;
    if (running || closed || pending.size === 0) return;
    const changed = [...pending].map((p) => relative(projectDir, p).split(sep).join('/'));
    pending = new Set();
    running = onChange(changed).finally(() => {
      running = undefined;
      if (pending.size > 0 && !closed) timer = setTimeout(flush, DEBOUNCE_MS);
    });
    await running;
  };
  const queue = (path: string) => {
    if (!SOURCE_RE.test(path) || TEST_FILE_RE.test(path)) return;
    pending.add(path);
    if (timer) clearTimeout(timer);
    if (!running) timer = setTimeout(flush, DEBOUNCE_MS);
  };
  watcher.on('add', queue).on('change', queue).on('unlink', queue);
  const ready = new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  return {
    ready,
    notify(paths) {
      for (const path of paths) queue(path);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await watcher.close();
      await running;
    },
  };
}
