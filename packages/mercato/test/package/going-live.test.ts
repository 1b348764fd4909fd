/**
 * docs/going-live.md, followed as written up to the steps that need the platform, in a fresh directory outside the
 * workspace with the packed package standing in for the registry:
 *
 * - every command of its ```sh blocks, in order: `npx mercato init` (the installed tarball's CLI), `cd`, `npm install`,
 *   `npm run check` (which must print no `warning:` about the scaffold's shopify.app.toml), and the command line the
 *   guide says the platform CLI runs (`SHOPIFY_API_KEY=… … npm run dev`: its `…` values filled, its port replaced by a
 *   free one); its banner must show the lines of the guide's "It prints:" block (`…` matches anything; a line that is
 *   only `…` stands for any lines);
 * - `shopify …` commands need the internet and a Partner account: they are listed, not run, and must be ones the guide
 *   explains (a new one fails the test until it is taught here).
 *
 * Any other command fails the test.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  childEnv,
  cleanUp,
  describeResult,
  type InstalledPackage,
  installedPackage,
  linePattern,
  npmInstall,
  run,
  scratchDir,
  shellWords,
  startBackground,
  WORKSPACE,
} from '../helpers/package.ts';

const GUIDE_PATH = join(WORKSPACE, 'docs', 'going-live.md');
const GUIDE = readFileSync(GUIDE_PATH, 'utf8');
const GUIDE_PORT = '3000';
/** The platform CLI's commands the guide explains; each needs the internet and a Partner account. */
const PLATFORM_COMMANDS = ['shopify app config link', 'shopify app dev', 'shopify app webhook trigger', 'shopify app deploy'];

interface Block {
  lang: string;
  body: string;
  intro: string;
}

function blocksOf(text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  let prose: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```([\w-]*)\s*$/.exec(lines[i]!);
    if (!fence) {
      prose.push(lines[i]!);
      continue;
    }
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    const paragraphs = prose
      .join('\n')
      .trim()
      .split(/\n\s*\n/);
    blocks.push({ lang: fence[1]!, body: body.join('\n'), intro: paragraphs.at(-1)!.replace(/\s+/g, ' ').trim() });
    prose = [];
  }
  return blocks;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolvePort(port));
    });
  });
}

let installed: InstalledPackage;
let work: string;

beforeAll(async () => {
  installed = await installedPackage();
  work = scratchDir('going-live');
}, 900_000);

afterAll(async () => {
  await cleanUp();
}, 60_000);

it('is followed word for word up to the steps that need the platform', { timeout: 600_000 }, async () => {
  const blocks = blocksOf(GUIDE);
  let cwd = work;
  const env = childEnv();
  const notRun: string[] = [];
  let banner: string | undefined;
  for (const [index, block] of blocks.entries()) {
    if (block.lang !== 'sh') continue;
    for (const command of block.body
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)) {
      const words = shellWords(command);
      if (words[0] === 'shopify') {
        expect(
          PLATFORM_COMMANDS.some((known) => command === known || command.startsWith(`${known} `)),
          `${command}: a platform CLI command the guide does not explain`,
        ).toBe(true);
        notRun.push(command);
        continue;
      }
      if (command === 'npx mercato init my-app') {
        const r = await run(
          'npx',
          ['--no-install', '--prefix', installed.dir, 'mercato', 'init', 'my-app', '--mercato', `file:${installed.tarball}`],
          { cwd, env, timeoutMs: 60_000 },
        );
        expect(r.code, describeResult(r)).toBe(0);
        expect(r.stdout).toContain('shopify.app.toml');
        continue;
      }
      if (words[0] === 'cd' && words.length === 2) {
        cwd = resolve(cwd, words[1]!);
        continue;
      }
      if (command === 'npm install') {
        await npmInstall(cwd, env);
        continue;
      }
      if (command === 'npm run check') {
        const r = await run('npm', ['run', 'check'], { cwd, env, timeoutMs: 180_000 });
        expect(r.code, describeResult(r)).toBe(0);
        expect(r.stdout).toContain('is valid');
        expect(r.stderr, describeResult(r)).not.toContain('warning:');
        continue;
      }
      const assignments = words.slice(0, -3);
      if (words.slice(-3).join(' ') === 'npm run dev' && assignments.every((a) => /^[A-Z_]+=/.test(a))) {
        // what `shopify app dev` runs: the guide's variables, `…` filled in, on a free port
        const port = String(await freePort());
        const vars: Record<string, string> = {};
        for (const a of assignments) {
          const [name, value] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)];
          vars[name] = value === GUIDE_PORT ? port : value.replaceAll('…', `guide-${name.toLowerCase()}`);
        }
        expect(Object.keys(vars).sort()).toEqual([
          'BACKEND_PORT',
          'PORT',
          'SCOPES',
          'SHOPIFY_API_KEY',
          'SHOPIFY_API_SECRET',
          'SHOPIFY_APP_URL',
        ]);
        const dev = startBackground('npm', ['run', 'dev'], { cwd, env: { ...env, ...vars } });
        await dev.waitFor(/listening on http:\/\/\S+/, 120_000);
        await dev.waitFor(/platform: .*\n/, 10_000);
        const printed = blocks[index + 1];
        expect(printed?.intro, 'the block after the command is what it prints').toBe('It prints:');
        const out = dev.stdout().split('\n');
        let at = 0;
        for (const line of printed!.body.split('\n').map((l) => l.replaceAll(`:${GUIDE_PORT}`, `:${port}`))) {
          if (line === '…') continue;
          const pattern = linePattern(line);
          const found = out.findIndex((l, i) => i >= at && pattern.test(l));
          expect(
            found,
            `the guide's line\n${line}\nis not in what \`npm run dev\` printed:\n${dev.stdout()}\n${dev.stderr()}`,
          ).toBeGreaterThanOrEqual(at);
          at = found + 1;
        }
        banner = dev.stdout();
        expect(banner).not.toContain('simulator at');
        await dev.stop('SIGINT');
        continue;
      }
      throw new Error(
        `${GUIDE_PATH} has a command this test does not know how to follow: \`${command}\` (teach test/package/going-live.test.ts)`,
      );
    }
  }
  expect(banner, 'the guide runs `npm run dev` the way the platform CLI does').toBeDefined();
  expect(notRun.map((c) => PLATFORM_COMMANDS.find((k) => c === k || c.startsWith(`${k} `)))).toEqual([
    'shopify app config link',
    'shopify app dev',
    'shopify app webhook trigger',
    'shopify app deploy',
  ]);
  // the scaffold's TOML files as the guide describes them
  const appToml = readFileSync(join(cwd, 'shopify.app.toml'), 'utf8');
  expect(appToml).toMatch(/compliance_topics = \[ "customers\/data_request", "customers\/redact", "shop\/redact" \]/);
  expect(readFileSync(join(cwd, 'shopify.web.toml'), 'utf8')).toMatch(/^dev = "npm run dev"$/m);
});
