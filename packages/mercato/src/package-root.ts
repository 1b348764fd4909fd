/**
 * The folder of the installed `mercato` package (the one holding its package.json), found by walking up from this
 * module. The same code runs from `src/` in this repository and from the bundled `dist/` of an installed package, at
 * different depths, so files shipped beside the code (migrations, the built admin UI, templates) are found from here.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if (JSON.parse(readFileSync(manifest, 'utf8')).name === 'mercato') return dir;
      } catch {
        // not a readable manifest: keep walking
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`mercato: cannot find the package folder above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

export const PACKAGE_ROOT: string = findPackageRoot();
