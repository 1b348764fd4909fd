/**
 * Once before the tests: build the package's JavaScript (dist/) and the admin UI when they are older than their
 * sources, because tests that start real `mercato` processes run the built CLI, as users do.
 *
 * It also gives the run a scratch folder outside the workspace (under the OS temp folder), handed to the tests as
 * `inject('mercatoPackageDir')`: the tests of the installable package (test/package/) pack the package there once per
 * run, on first use (test/helpers/package.ts), and install it beside. The folder is removed after the run.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A folder of this test run, outside the workspace, for the packed package and its installations. */
    mercatoPackageDir: string;
  }
}

export default function setup(project: TestProject) {
  const script = fileURLToPath(new URL('../scripts/build.mjs', import.meta.url));
  const r = spawnSync(process.execPath, [script, '--js', '--if-stale', '--quiet'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`building the mercato package failed (exit ${r.status})`);

  const packageDir = mkdtempSync(join(tmpdir(), 'mercato-package-'));
  project.provide('mercatoPackageDir', packageDir);
  return () => rmSync(packageDir, { recursive: true, force: true, maxRetries: 3 });
}
