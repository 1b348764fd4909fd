/** The built admin UI on disk: where it is, and its index.html. */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../package-root.ts';

/**
 * The folder holding index.html and assets/: `MERCATO_ADMIN_UI_DIR` when set; in a checkout of the repository the
 * admin-ui workspace package's `dist/`; else `dist/admin-ui/` inside this package (the package build copies the admin
 * UI there, so an installed package carries it). See docs/admin-ui.md, "Where the build comes from".
 */
export function resolveAdminUiDir(env: Record<string, string | undefined> = process.env): string {
  if (env.MERCATO_ADMIN_UI_DIR) return resolve(env.MERCATO_ADMIN_UI_DIR);
  const packaged = join(PACKAGE_ROOT, 'dist', 'admin-ui');
  // a checkout of the repository (sources beside the package): the admin-ui workspace's own build is the fresh one
  const checkout = existsSync(join(PACKAGE_ROOT, 'src', 'index.ts')) ? [join(PACKAGE_ROOT, '..', 'admin-ui', 'dist')] : [];
  const candidates = [...checkout, packaged];
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? candidates[0]!;
}

/** index.html of the build, or undefined when there is none (the other files are served by Hono's serveStatic). */
export async function readIndexHtml(dir: string): Promise<string | undefined> {
  try {
    return await readFile(join(dir, 'index.html'), 'utf8');
  } catch {
    return undefined;
  }
}
