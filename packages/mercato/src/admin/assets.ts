/** The built admin UI on disk: where it is, the content type of each file, and safe reads inside its folder. */
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
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

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

export function contentTypeOf(path: string): string {
  return CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * Reads `relative` (a URL path below the UI folder, already decoded) if it names a regular file inside `root`;
 * undefined for anything else: traversal (`..`), hidden files, folders, missing files.
 */
export async function readAsset(root: string, relative: string): Promise<{ body: Buffer; path: string; mtimeMs: number } | undefined> {
  const segments = relative.split('/').filter((s) => s !== '');
  if (segments.length === 0 || segments.some((s) => s === '..' || s === '.' || s.startsWith('.') || s.includes('\\') || s.includes('\0'))) return undefined;
  const base = resolve(root);
  const path = resolve(base, ...segments);
  if (!path.startsWith(base + sep)) return undefined;
  try {
    const info = await stat(path);
    if (!info.isFile()) return undefined;
    return { body: await readFile(path), path, mtimeMs: info.mtimeMs };
  } catch {
    return undefined;
  }
}
