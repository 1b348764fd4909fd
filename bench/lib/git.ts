/** The commit a benchmark measured, for its JSON. */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return ''; // not a git checkout
  }
}

/** The short commit of the checkout ('' outside git), and whether `paths` have changes not committed. */
export function gitState(paths: readonly string[]): { commit: string; uncommittedChanges: boolean } {
  return { commit: git(['rev-parse', '--short', 'HEAD']), uncommittedChanges: git(['status', '--porcelain', '--', ...paths]) !== '' };
}
