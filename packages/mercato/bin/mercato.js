#!/usr/bin/env node
// The `mercato` command: runs the bundled CLI in dist/ (built by `npm run build -w packages/mercato`, shipped in the package).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('mercato: this copy of the package is not built (dist/cli.js is missing); in the repository run `npm run build`\n');
  process.exit(1);
}
// stack traces of user code (bundled by the CLI) point at the original files and lines
process.setSourceMapsEnabled(true);
// output piped into a command that stops reading (`mercato init … | head`): stop quietly, like other command-line tools
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
}
const { main } = await import(cli.href);
process.exitCode = await main(process.argv.slice(2));
