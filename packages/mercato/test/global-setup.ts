/**
 * Once before the tests: build the package's JavaScript (dist/) and the admin UI when they are older than their
 * sources, because tests that start real `mercato` processes run the built CLI, as users do.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup() {
  const script = fileURLToPath(new URL('../scripts/build.mjs', import.meta.url));
  const r = spawnSync(process.execPath, [script, '--js', '--if-stale', '--quiet'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`building the mercato package failed (exit ${r.status})`);
}
