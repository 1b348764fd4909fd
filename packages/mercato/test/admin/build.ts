/**
 * Builds the admin UI for the browser tests when its build is missing or older than its sources (index.html, src/,
 * public/, vite.config.ts, package.json). A lock folder keeps two test processes from building at once.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ADMIN_UI_DIR = fileURLToPath(new URL('../../../admin-ui', import.meta.url));
export const ADMIN_UI_DIST = join(ADMIN_UI_DIR, 'dist');

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

export function adminUiBuildIsCurrent(): boolean {
  const index = join(ADMIN_UI_DIST, 'index.html');
  if (!existsSync(index)) return false;
  const sources = ['index.html', 'src', 'public', 'vite.config.ts', 'package.json'].map((p) => newestMtime(join(ADMIN_UI_DIR, p)));
  return statSync(index).mtimeMs >= Math.max(...sources);
}

export async function ensureAdminUiBuilt(): Promise<void> {
  const lock = join(tmpdir(), 'mercato-admin-ui-build.lock');
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (adminUiBuildIsCurrent()) return;
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another process builds (or a stale lock from a killed run: taken over after two minutes).
      if (Date.now() > deadline) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    if (adminUiBuildIsCurrent()) return;
    const vite = join(ADMIN_UI_DIR, 'node_modules', '.bin', 'vite');
    const command = existsSync(vite) ? vite : 'npx';
    const args = existsSync(vite) ? ['build', '--logLevel', 'warn'] : ['vite', 'build', '--logLevel', 'warn'];
    const result = spawnSync(command, args, { cwd: ADMIN_UI_DIR, encoding: 'utf8', timeout: 180_000 });
    if (result.status !== 0) throw new Error(`admin UI build failed (exit ${result.status}):\n${result.stdout}\n${result.stderr}`);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
