/**
 * Errors in the app's own files (docs/cli.md, "Errors in your code"): `mercato check` and `mercato start` on an app with a
 * syntax error, a missing export (of a file of the app, of a package), a package that is not installed, a module that
 * throws while loading, or a config that fails validation — in the config and in a route file — exit 1 and print
 * `file:line:column`, the message and a code frame, never a stack trace or anything of the bundler.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../../bin/mercato.js');
// inside the workspace, so the apps resolve `mercato` from its node_modules (test-artifacts/ is git-ignored)
const ROOT = resolve(here, `../../../../test-artifacts/user-errors-${randomBytes(4).toString('hex')}`);
const DATA = mkdtempSync(join(tmpdir(), 'mercato-user-errors-'));

vi.setConfig({ testTimeout: 90_000 });

afterAll(() => {
  rmSync(ROOT, { recursive: true, force: true });
  rmSync(DATA, { recursive: true, force: true });
});

const CONFIG = `import { defineApp } from 'mercato';
import { hello } from './flows/hello.ts';

const app = defineApp();

export default app.defineConfig({
  flows: { hello },
});
`;
const FLOW = `import { defineFlow } from 'mercato';
import { z } from 'zod';

export const hello = defineFlow({
  name: 'hello',
  input: z.object({}),
  async run() {
    return { hello: 'world' };
  },
});
`;
const ROUTE = `import { defineRoute } from 'mercato';

export default defineRoute({
  auth: 'none',
  GET: () => Response.json({ pong: true }),
});
`;

interface Case {
  name: string;
  /** The files that differ from the good app. */
  files: Record<string, string>;
  /** The location printed (`file:line:column`), and text the message holds. */
  location: RegExp;
  message: string;
}

const cases: Case[] = [
  // the config, and the files it imports
  {
    name: 'config: syntax error',
    files: { 'service.config.ts': CONFIG.replace('flows: { hello },', 'flows: { hello, , },') },
    location: /service\.config\.ts:7:\d+: error:/,
    message: 'the app does not build',
  },
  {
    name: 'config: missing export of a file of the app',
    files: {
      'service.config.ts': CONFIG.replace(
        "import { hello } from './flows/hello.ts';",
        "import { hello, nope } from './flows/hello.ts';\nconsole.log(nope);",
      ),
    },
    location: /service\.config\.ts:2:17: error: No matching export in "flows\/hello\.ts" for import "nope"/,
    message: 'the app does not build',
  },
  {
    name: 'config: missing export of a package',
    files: {
      'service.config.ts': CONFIG.replace(
        "import { defineApp } from 'mercato';",
        "import { defineApp, nope } from 'mercato';\nconsole.log(nope);",
      ),
    },
    location: /at service\.config\.ts:1:21:/,
    message: "SyntaxError: The requested module 'mercato' does not provide an export named 'nope'",
  },
  {
    name: 'config: a package that is not installed',
    files: {
      'service.config.ts': CONFIG.replace(
        "import { defineApp } from 'mercato';",
        "import { defineApp } from 'mercato';\nimport pad from 'mercato-no-such-package/pad';\nconsole.log(pad);",
      ),
    },
    location: /at service\.config\.ts:2:17:/,
    message: "Cannot find package 'mercato-no-such-package' imported from service.config.ts",
  },
  {
    name: 'config: an imported module throws while loading',
    files: { 'flows/hello.ts': `${FLOW}throw new RangeError('flows/hello.ts refuses to load');\n` },
    location: /at flows\/hello\.ts:11:\d+:/,
    message: 'RangeError: flows/hello.ts refuses to load',
  },
  {
    name: 'config: fails validation (defineConfig throws ConfigError)',
    files: {
      'service.config.ts': CONFIG.replace('flows: { hello },', "flows: { hello },\n  crons: [{ schedule: 'every day', flow: 'hello' }],"),
    },
    location: /at service\.config\.ts:6:20:/,
    message: 'crons[0].schedule: "every day" is not a valid cron expression',
  },
  // a route file
  {
    name: 'route: syntax error',
    files: { 'routes/ping.ts': ROUTE.replace('{ pong: true })', '{ pong: true )') },
    location: /routes\/ping\.ts:5:\d+: error:/,
    message: 'the app does not build',
  },
  {
    name: 'route: missing export of a file of the app',
    files: {
      'routes/ping.ts': ROUTE.replace(
        "import { defineRoute } from 'mercato';",
        "import { defineRoute } from 'mercato';\nimport { nope } from '../flows/hello.ts';\nconsole.log(nope);",
      ),
    },
    location: /routes\/ping\.ts:2:10: error: No matching export in "flows\/hello\.ts" for import "nope"/,
    message: 'the app does not build',
  },
  {
    name: 'route: missing export of a package',
    files: {
      'routes/ping.ts': ROUTE.replace(
        "import { defineRoute } from 'mercato';",
        "import { defineRoute, nope } from 'mercato';\nconsole.log(nope);",
      ),
    },
    location: /at routes\/ping\.ts:1:23:/,
    message: "SyntaxError: The requested module 'mercato' does not provide an export named 'nope'",
  },
  {
    name: 'route: a package that is not installed',
    files: {
      'routes/ping.ts': ROUTE.replace(
        "import { defineRoute } from 'mercato';",
        "import { defineRoute } from 'mercato';\nimport pad from 'mercato-no-such-package';\nconsole.log(pad);",
      ),
    },
    location: /at routes\/ping\.ts:2:17:/,
    message: "Cannot find package 'mercato-no-such-package' imported from routes/ping.ts",
  },
  {
    name: 'route: throws while loading',
    files: { 'routes/ping.ts': `${ROUTE}throw new Error('routes/ping.ts refuses to load');\n` },
    location: /at routes\/ping\.ts:7:\d+:/,
    message: 'routes/ping.ts refuses to load',
  },
];

function makeApp(c: Case): string {
  const dir = join(ROOT, c.name.replace(/[^a-z0-9]+/gi, '-'));
  const all: Record<string, string> = { 'service.config.ts': CONFIG, 'flows/hello.ts': FLOW, 'routes/ping.ts': ROUTE, ...c.files };
  for (const [rel, content] of Object.entries(all)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), content);
  }
  return dir;
}

function run(args: string[], cwd: string): Promise<{ code: number | null; out: string; err: string }> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    MERCATO_DATA_DIR: mkdtempSync(join(DATA, 'db-')),
    MERCATO_SIM_PORT: '0',
    PLATFORM_API_KEY: 'key',
    PLATFORM_API_SECRET: 'secret',
  };
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    // a command that started serving despite the broken file would never exit
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mercato ${args.join(' ')} did not exit:\n${out}\n${err}`));
    }, 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolveRun({ code, out, err });
    });
  });
}

function expectReadable(err: string, c: Case) {
  expect(err).toMatch(c.location);
  expect(err).toContain(c.message);
  expect(err).toMatch(/^\s*> +\d+ \|/m); // the code frame's marked line…
  expect(err).toMatch(/^\s*\| +\^/m); // …and its caret
  expect(err).not.toMatch(/^\s+at /m); // no stack trace
  expect(err).not.toMatch(/esbuild|node:internal|\.mercato|unexpected error/i);
}

describe('errors in the app’s files: check and start exit 1 with file:line:column and a code frame, no stack', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const dir = makeApp(c);
      const [check, start] = await Promise.all([run(['check'], dir), run(['start', '--port', '0'], dir)]);
      for (const [command, r] of [
        ['check', check],
        ['start', start],
      ] as const) {
        expect(r.code, `${command}: ${r.err}`).toBe(1);
        expect(r.err.startsWith(`mercato ${command}: `), r.err).toBe(true);
        expectReadable(r.err, c);
      }
    });
  }

  it('the good app passes check (the cases differ from it only in the broken file)', async () => {
    const r = await run(['check'], makeApp({ name: 'good', files: {}, location: /$/, message: '' }));
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('/routes/ping (GET; auth none)');
  });

  it('a config without a default export: exit 1, says what to export, no stack', async () => {
    const r = await run(
      ['check'],
      makeApp({
        name: 'no default',
        files: { 'service.config.ts': CONFIG.replace('export default ', 'export const config = ') },
        location: /$/,
        message: '',
      }),
    );
    expect(r.code).toBe(1);
    expect(r.err).toContain('service.config.ts must export the configured instance as its default export');
    expect(r.err).toContain('its exports: config');
    expect(r.err).not.toMatch(/^\s+at /m);
  });
});
