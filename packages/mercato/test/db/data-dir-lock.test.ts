/**
 * One process at a time on an embedded database folder (src/db/data-dir-lock.ts, docs/database.md): a second process
 * (here `mercato migrate`, spawned from the built CLI) on a folder this test process holds open is refused with a message
 * that names the holder, instead of crashing in PGlite's WebAssembly; once the folder is closed it works; a lock left by
 * a process that died is taken over; closing releases it.
 *
 * PGlite only: it runs when DATABASE_URL is unset (the PostgreSQL pass has nothing of its own to check here).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedDatabaseInUseError } from '../../src/db/data-dir-lock.ts';
import { openDatabase } from '../../src/db/engine.ts';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../../bin/mercato.js');
// inside the workspace, so the app resolves `mercato` from its node_modules (test-artifacts/ is git-ignored)
const APP = resolve(here, `../../../../test-artifacts/data-dir-lock-${randomBytes(4).toString('hex')}`);
const DATA = mkdtempSync(join(tmpdir(), 'mercato-data-dir-lock-'));

mkdirSync(join(APP, 'flows'), { recursive: true });
writeFileSync(
  join(APP, 'service.config.ts'),
  `import { defineApp, defineFlow } from 'mercato';
import { z } from 'zod';

const app = defineApp();
export default app.defineConfig({
  flows: { hello: defineFlow({ name: 'hello', input: z.object({}), run: async () => 'hi' }) },
});
`,
);

afterAll(() => {
  rmSync(APP, { recursive: true, force: true });
  rmSync(DATA, { recursive: true, force: true });
});

function migrate(dataDir: string): Promise<{ code: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, MERCATO_DATA_DIR: dataDir };
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [BIN, 'migrate'], { cwd: APP, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mercato migrate did not exit:\n${out}`));
    }, 90_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolveRun({ code, out });
    });
  });
}

describe.skipIf(Boolean(process.env.DATABASE_URL))('the embedded database folder: one process at a time', () => {
  it(
    'refuses a second process with a message naming the holder, then lets it in once the folder is closed',
    { timeout: 180_000 },
    async () => {
      const dataDir = join(DATA, 'held');
      const db = await openDatabase({ dataDir });
      try {
        const lock = JSON.parse(readFileSync(`${dataDir}.lock`, 'utf8'));
        expect(lock).toMatchObject({ pid: process.pid, since: expect.any(String) });
        const refused = await migrate(dataDir);
        expect(refused.code, refused.out).toBe(1);
        expect(refused.out).toContain(
          `mercato migrate: the embedded database in ${dataDir} is in use by another process (pid ${process.pid}`,
        );
        expect(refused.out).toContain('stop that process first, or run this command on PostgreSQL with DATABASE_URL');
        expect(refused.out).not.toMatch(/RuntimeError|Aborted|\n\s+at /);
        // the holder's database is untouched and still answers
        expect(await db.ping()).toBe(true);
      } finally {
        await db.close();
      }
      expect(existsSync(`${dataDir}.lock`)).toBe(false);
      const allowed = await migrate(dataDir);
      expect(allowed.code, allowed.out).toBe(0);
      expect(existsSync(`${dataDir}.lock`)).toBe(false); // released at exit
    },
  );

  it('takes over a lock left by a process that is gone', { timeout: 120_000 }, async () => {
    const dataDir = join(DATA, 'stale');
    mkdirSync(dataDir, { recursive: true });
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(gone.stdout);
    expect(deadPid).toBeGreaterThan(0);
    writeFileSync(`${dataDir}.lock`, JSON.stringify({ pid: deadPid, command: 'mercato dev', since: new Date().toISOString() }));
    const run = await migrate(dataDir);
    expect(run.code, run.out).toBe(0);
    expect(existsSync(`${dataDir}.lock`)).toBe(false);
  });

  it(
    'holds the lock while open and releases it on close, so the same process can open the folder again',
    { timeout: 120_000 },
    async () => {
      const dataDir = join(DATA, 'reopen');
      const lockPath = `${dataDir}.lock`;
      const first = await openDatabase({ dataDir });
      expect(existsSync(lockPath)).toBe(true);
      await first.close();
      expect(existsSync(lockPath)).toBe(false);
      const again = await openDatabase({ dataDir });
      expect(existsSync(lockPath)).toBe(true);
      await again.close();
      expect(existsSync(lockPath)).toBe(false);
    },
  );

  it('refuses in-process too when a live process of another pid holds the folder', async () => {
    const dataDir = join(DATA, 'foreign');
    mkdirSync(dataDir, { recursive: true });
    // the parent of this test process runs, and is not us
    writeFileSync(`${dataDir}.lock`, JSON.stringify({ pid: process.ppid, command: 'mercato dev' }));
    const error = await openDatabase({ dataDir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EmbeddedDatabaseInUseError);
    expect((error as Error).message).toContain(`(pid ${process.ppid}: mercato dev)`);
    expect(JSON.parse(readFileSync(`${dataDir}.lock`, 'utf8')).pid).toBe(process.ppid); // not taken from its owner
  });
});
