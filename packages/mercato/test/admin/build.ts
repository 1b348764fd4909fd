/**
 * Builds the admin UI for the browser tests when its build is missing or older than what it is made from: the UI's
 * sources (index.html, src/, public/), its build setup (vite.config.ts, tsconfig.json, package.json) and the
 * installed dependencies (the root package-lock.json, rewritten by every npm install). A lock folder keeps two test
 * processes from building at once.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ADMIN_UI_DIR = fileURLToPath(new URL('../../../admin-ui', import.meta.url));
export const ADMIN_UI_DIST = join(ADMIN_UI_DIR, 'dist');
export const ROOT_LOCKFILE = fileURLToPath(new URL('../../../../package-lock.json', import.meta.url));

/** What the build is made from, relative to the admin-ui folder (folders count with everything inside them). */
export const BUILD_INPUTS = ['index.html', 'src', 'public', 'vite.config.ts', 'tsconfig.json', 'package.json'];

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** True when `dir`/dist/index.html exists and is at least as new as every build input and the lockfile. */
export function adminUiBuildIsCurrent(dir = ADMIN_UI_DIR, lockfile = ROOT_LOCKFILE): boolean {
  const index = join(dir, 'dist', 'index.html');
  if (!existsSync(index)) return false;
  const inputs = [...BUILD_INPUTS.map((p) => newestMtime(join(dir, p))), newestMtime(lockfile)];
  return statSync(index).mtimeMs >= Math.max(...inputs);
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
