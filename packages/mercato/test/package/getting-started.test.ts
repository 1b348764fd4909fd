/**
 * The docs are the truth: docs/getting-started.md is followed as written, in a fresh directory outside the workspace,
 * with the packed package standing in for the registry. Every fenced block of the guide is an instruction or an
 * expectation, in order:
 *
 * - ```sh blocks: every command is run (`npx mercato init` runs the installed tarball's CLI with `--mercato
 *   file:<tarball>`; `npm run dev` gets `-- --port 0` and MERCATO_SIM_PORT=0, `npm start` gets `-- --port 0`; `curl` is
 *   sent as curl would send it, to the real port). A command the test does not know fails the test.
 * - the ``` block introduced by "It prints:" after `npm run dev`: the banner, compared line by line (`…` matches
 *   anything; the default ports 3000/3001 of the guide stand for the ports given to the test);
 * - ```json after a sentence about the output: the flow named in the guide is run as the admin does (a session token
 *   of the admin preview for the shop named in the guide, the Run button's request) and its output must equal it;
 * - ``` after a sentence about the terminal: these lines must appear, in order, for that run;
 * - ```json right after a `curl`: what curl prints;
 * - ```diff: applied to the app's file (it must apply exactly where its hunk says); the ``` block after it is what
 *   `mercato dev` prints on reload.
 *
 * Any other block fails the test. Each `##` section of the guide is one test, named after it. The production section
 * runs `mercato start` and `mercato worker` only when DATABASE_URL names a PostgreSQL server (a fresh database is made
 * there); otherwise those two commands are reported skipped after `npm run check` passed with the guide's environment.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../src/db/testing.ts';
import {
  type Background,
  childEnv,
  cleanUp,
  describeResult,
  type InstalledPackage,
  installedPackage,
  linePattern,
  npmInstall,
  parseCurl,
  previewToken,
  run,
  runFlowViaApi,
  scratchDir,
  sendCurl,
  shellWords,
  startBackground,
  waitForRunEnd,
  WORKSPACE,
} from '../helpers/package.ts';

const GUIDE_PATH = join(WORKSPACE, 'docs', 'getting-started.md');
const GUIDE = readFileSync(GUIDE_PATH, 'utf8');
/** The section for a checkout of this repository: checked against the repository, not run in the new directory. */
const DEMO_SECTION = 'Run the demo of this repository';
/** The ports the guide shows: `mercato dev`'s defaults (checked against `mercato dev --help`). */
const GUIDE_PORT = 3000;
const GUIDE_SIM_PORT = 3001;

// ---------------------------------------------------------------------------------------------------------------------
// Reading the guide

interface Block {
  lang: string;
  body: string;
  /** The paragraph right before the block. */
  intro: string;
  /** All prose of the guide before the block. */
  proseBefore: string;
  /** 1-based line of the opening fence. */
  line: number;
}

interface Section {
  title: string;
  blocks: Block[];
}

function parseGuide(text: string): Section[] {
  const sections: Section[] = [{ title: '(top)', blocks: [] }];
  const lines = text.split('\n');
  let prose: string[] = [];
  let allProse = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = /^```([\w-]*)\s*$/.exec(line);
    if (fence) {
      const start = i;
      const body: string[] = [];
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
      if (i >= lines.length) throw new Error(`${GUIDE_PATH}:${start + 1}: the block is not closed`);
      const paragraphs = prose
        .join('\n')
        .trim()
        .split(/\n\s*\n/);
      sections.at(-1)!.blocks.push({
        lang: fence[1]!,
        body: body.join('\n'),
        intro: paragraphs.at(-1)!.replace(/\s+/g, ' ').trim(),
        proseBefore: allProse,
        line: start + 1,
      });
      prose = [];
      continue;
    }
    const heading = /^## (.+)$/.exec(line);
    if (heading) {
      sections.push({ title: heading[1]!.trim(), blocks: [] });
      prose = [];
      continue;
    }
    prose.push(line);
    allProse += `${line}\n`;
  }
  return sections;
}

/** A command line without its trailing `# comment` (a `#` outside quotes, after a blank). */
function stripComment(line: string): string {
  let quote: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd();
  }
  return line;
}

/** The commands of a ```sh block: comments and blank lines dropped, `\` continuations joined, `&&` chains split. */
function commandsOf(block: Block): string[] {
  const commands: string[] = [];
  for (const raw of block.body.replace(/\\\n/g, ' ').split('\n')) {
    const line = stripComment(raw).trim();
    if (!line) continue;
    commands.push(...line.split(/\s+&&\s+/).map((c) => c.trim()));
  }
  return commands;
}

const SECTIONS = parseGuide(GUIDE);

// ---------------------------------------------------------------------------------------------------------------------
// Following it

interface State {
  installed?: InstalledPackage;
  work: string;
  cwd: string;
  /** The user's shell environment (a clean one, plus what the guide exports). */
  env: NodeJS.ProcessEnv;
  dev?: Background;
  devStdoutBefore: string;
  base?: string;
  simPort?: number;
  /** Where in dev's output the last action of the guide started. */
  mark: number;
  previous?: { kind: 'sh'; commands: string[] } | { kind: 'diff' } | { kind: 'run' } | { kind: 'other' };
  lastCurl?: { status: number; text: string; body?: string };
  servers: Background[];
  database?: TestDatabase;
  /** Set when a section failed: the later ones cannot follow on from it. */
  broken?: string;
}

const state: State = { work: '', cwd: '', env: childEnv(), devStdoutBefore: '', mark: 0, servers: [] };

beforeAll(async () => {
  state.installed = await installedPackage();
  state.work = scratchDir('getting-started');
  state.cwd = state.work;
}, 900_000);

afterAll(async () => {
  await cleanUp();
  await state.database?.drop().catch(() => {});
}, 60_000);

/** Replaces the guide's default ports by the ports of this run. */
function withPorts(text: string): string {
  let out = text;
  if (state.base)
    out = out
      .replaceAll(`http://localhost:${GUIDE_PORT}`, state.base)
      .replaceAll(`127.0.0.1:${GUIDE_PORT}`, `127.0.0.1:${new URL(state.base).port}`);
  if (state.simPort !== undefined) out = out.replaceAll(`127.0.0.1:${GUIDE_SIM_PORT}`, `127.0.0.1:${state.simPort}`);
  return out;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, detail: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms\n${detail()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function devOut(): string {
  if (!state.dev) throw new Error('the guide expects output of `npm run dev`, but it has not started it yet');
  return state.dev.stdout();
}

/** The app's package.json scripts (in the current directory). */
function scripts(): Record<string, string> {
  const file = join(state.cwd, 'package.json');
  if (!existsSync(file)) throw new Error(`no package.json in ${state.cwd}`);
  return JSON.parse(readFileSync(file, 'utf8')).scripts ?? {};
}

/** The variables an `export` of the guide may set: those of docs/environment.md, and those the app's code reads. */
function isKnownVariable(name: string): boolean {
  if (readFileSync(join(WORKSPACE, 'docs', 'environment.md'), 'utf8').includes(`\`${name}\``)) return true;
  const appFiles = ['service.config.ts', 'routes/sync.ts', 'flows/sync-orders.ts', 'webhooks/orders-create.ts']
    .map((f) => join(state.cwd, f))
    .filter(existsSync);
  return appFiles.some((f) => readFileSync(f, 'utf8').includes(`process.env.${name}`));
}

async function runCommand(command: string, rest: string[], ctx: TestContext): Promise<void> {
  const words = shellWords(command);
  const [first, second] = words;

  if (first === 'npx' && second === 'mercato' && words[2] === 'init' && words.length === 4) {
    // `npx mercato` fetches the package from the registry: here it is the installed tarball (npx --prefix <where>)
    const installed = state.installed!;
    const r = await run(
      'npx',
      ['--no-install', '--prefix', installed.dir, 'mercato', 'init', words[3]!, '--mercato', `file:${installed.tarball}`],
      { cwd: state.cwd, env: state.env, timeoutMs: 60_000 },
    );
    expect(r.code, describeResult(r)).toBe(0);
    // the steps init prints next are the guide's next commands
    const next = /\nNext steps:\n((?: {2}.+\n)+)/
      .exec(r.stdout)?.[1]
      ?.split('\n')
      .filter(Boolean)
      .map((l) => l.trim());
    expect(rest.slice(0, next?.length ?? 0), `mercato init prints the next steps:\n${r.stdout}`).toEqual(next);
    return;
  }
  if (first === 'cd' && words.length === 2) {
    state.cwd = resolve(state.cwd, words[1]!);
    expect(existsSync(state.cwd), `cd ${words[1]}`).toBe(true);
    return;
  }
  if (first === 'npm' && second === 'install' && words.length === 2) {
    await npmInstall(state.cwd, state.env);
    return;
  }
  if (first === 'export' && words.length > 1) {
    for (const assignment of words.slice(1)) {
      const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(assignment);
      if (!m) throw new Error(`${GUIDE_PATH}: cannot read the assignment "${assignment}" in \`${command}\``);
      const [, name, value] = m as unknown as [string, string, string];
      expect(isKnownVariable(name), `${name} is neither in docs/environment.md nor read by the app`).toBe(true);
      let actual = value;
      if (name === 'DATABASE_URL' && process.env.DATABASE_URL) {
        state.database ??= await createTestDatabase('postgres', { migrate: false });
        actual = state.database.url!;
      } else if (value === '…') {
        actual =
          name === 'ENCRYPTION_KEY' ? randomBytes(32).toString('hex') : `guide-${name.toLowerCase()}-${randomBytes(6).toString('hex')}`;
      } else {
        expect(value, `${name}=${value}: a value to fill in is written …`).not.toContain('…');
      }
      state.env[name] = actual;
    }
    return;
  }
  if (first === 'curl') {
    const request = parseCurl(withPorts(command));
    const response = await sendCurl(request);
    state.lastCurl = { ...response, body: request.body };
    return;
  }
  if (first === 'npm' && (second === 'test' || second === 'start' || second === 'run')) {
    const name = second === 'run' ? words[2] : second;
    expect(words.length, `\`${command}\`: arguments are not expected`).toBe(second === 'run' ? 3 : 2);
    const script = scripts()[name!];
    expect(script, `the app has no "${name}" script`).toBeDefined();
    if (script === 'mercato dev') return startDev(command);
    if (script === 'mercato start' || script === 'mercato worker') return startProduction(command, script, ctx);
    const r = await run('npm', words.slice(1), { cwd: state.cwd, env: state.env, timeoutMs: 180_000 });
    expect(r.code, describeResult(r)).toBe(0);
    if (script === 'mercato check') expect(r.stdout).toContain(`${join(state.cwd, 'service.config.ts')} is valid`);
    return;
  }
  throw new Error(
    `${GUIDE_PATH} has a command this test does not know how to follow: \`${command}\` (teach test/package/getting-started.test.ts)`,
  );
}

async function startDev(command: string): Promise<void> {
  // the guide's ports are the defaults of `mercato dev`
  const help = await run('npx', ['--no-install', 'mercato', 'dev', '--help'], { cwd: state.cwd, env: state.env, timeoutMs: 60_000 });
  const helpText = help.stdout.replace(/\s+/g, ' '); // commander wraps the lines
  expect(helpText).toContain(`default: PORT or ${GUIDE_PORT};`);
  expect(helpText).toContain(`default: MERCATO_SIM_PORT or ${GUIDE_SIM_PORT};`);
  const args = shellWords(command).slice(1);
  const dev = startBackground('npm', [...args, '--', '--port', '0'], { cwd: state.cwd, env: { ...state.env, MERCATO_SIM_PORT: '0' } });
  state.dev = dev;
  state.servers.push(dev);
  const m = await dev.waitFor(/listening on (http:\/\/localhost:(\d+))/, 120_000);
  state.base = m[1]!;
  const sim = await dev.waitFor(/simulator at http:\/\/127\.0\.0\.1:(\d+)/, 30_000);
  state.simPort = Number(sim[1]);
}

async function startProduction(command: string, script: string, ctx: TestContext): Promise<void> {
  if (!process.env.DATABASE_URL) {
    ctx.skip(`\`${command}\` (${script}) needs PostgreSQL: set DATABASE_URL to follow the guide's production section to the end`);
  }
  const words = shellWords(command).slice(1);
  const isStart = script === 'mercato start';
  const server = startBackground('npm', isStart ? [...words, '--', '--port', '0'] : words, { cwd: state.cwd, env: state.env });
  state.servers.push(server);
  if (isStart) {
    const m = await server.waitFor(/^mercato start \S+ — listening on (http:\/\/localhost:\d+)$/m, 120_000);
    expect((await fetch(`${m[1]}/healthz`)).status).toBe(200);
    expect(server.stdout()).toMatch(/^ {2}database: {6}PostgreSQL /m);
    // production has no admin preview
    expect((await fetch(`${m[1]}/__mercato/preview/`)).status).toBe(404);
  } else {
    await server.waitFor(/^mercato worker \S+ \(.+\): database PostgreSQL .*; concurrency \d+; prefetch \d+$/m, 120_000);
  }
}

/** The ``` block after `npm run dev`: the banner, line by line. */
async function expectBanner(block: Block): Promise<void> {
  expect(block.intro, `${GUIDE_PATH}:${block.line}: the banner is introduced by "It prints:"`).toMatch(/It prints:$/);
  const expected = block.body.split('\n').map(withPorts).map(linePattern);
  const dev = state.dev!;
  const lines = () => dev.stdout().split('\n');
  const start = () => lines().findIndex((l) => expected[0]!.test(l));
  await until(
    'the banner',
    () => start() >= 0 && lines().length > start() + expected.length,
    60_000,
    () => dev.stdout(),
  );
  const all = lines();
  const at = start();
  // before the banner: only npm's `> my-app@0.1.0 dev` / `> mercato dev --port 0` lines
  expect(
    all.slice(0, at).filter((l) => l.trim() && !l.startsWith('> ')),
    'printed before the banner',
  ).toEqual([]);
  for (let i = 0; i < expected.length; i++) {
    expect(all[at + i], `banner line ${i + 1} (${GUIDE_PATH}:${block.line + 1 + i})\n${block.body.split('\n')[i]}`).toMatch(expected[i]!);
  }
  // and nothing after it that the guide does not show (once the output has been quiet for a moment)
  let seen = dev.stdout().length;
  let quietSince = Date.now();
  await until(
    'a quiet terminal after the banner',
    () => {
      if (dev.stdout().length !== seen) [seen, quietSince] = [dev.stdout().length, Date.now()];
      return Date.now() - quietSince >= 500;
    },
    10_000,
    () => dev.stdout(),
  );
  expect(
    lines()
      .slice(at + expected.length)
      .filter((l) => l.trim()),
    'printed after the banner',
  ).toEqual([]);
  expect(dev.stderr()).toBe('');
}

/** Lines that must appear in dev's output after the mark, in this order (other lines may come between). */
async function expectTerminalLines(block: Block, what: string): Promise<void> {
  const expected = block.body.split('\n').map(withPorts).map(linePattern);
  const matched = () => {
    let next = 0;
    for (const line of devOut().slice(state.mark).split('\n')) if (next < expected.length && expected[next]!.test(line)) next++;
    return next;
  };
  await until(
    what,
    () => matched() === expected.length,
    30_000,
    () =>
      `matched ${matched()} of ${expected.length} lines of ${GUIDE_PATH}:${block.line}:\n${block.body}\n--- printed:\n${devOut().slice(state.mark)}`,
  );
}

/** Runs the flow the guide names, as the admin does for the shop the guide names, and compares its output. */
async function expectFlowOutput(block: Block): Promise<void> {
  const base = state.base!;
  const named = [...block.proseBefore.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  const shop = named.filter((n) => /^[a-z0-9-]+\.myshopify\.com$/.test(n)).at(-1);
  expect(shop, 'the guide names the shop to pick').toBeDefined();
  // what the user opens: the preview page, then the admin UI as the shop
  expect((await fetch(withPorts(`http://localhost:${GUIDE_PORT}/__mercato/preview/`))).status).toBe(200);
  expect(block.proseBefore).toContain(`http://localhost:${GUIDE_PORT}/__mercato/preview/`);
  const token = await previewToken(base, shop!);
  const flows = (
    (await (await fetch(`${base}/api/flows`, { headers: { authorization: `Bearer ${token}` } })).json()) as { flows: { name: string }[] }
  ).flows.map((f) => f.name);
  const flow = named.filter((n) => flows.includes(n)).at(-1);
  expect(flow, `the guide names a flow of the app (${flows.join(', ')})`).toBeDefined();
  expect((await fetch(`${base}/flows`)).headers.get('content-type')).toMatch(/text\/html/);
  state.mark = devOut().length;
  // the Run button posts the form, filled with the schema's defaults
  const record = await runFlowViaApi(base, token, flow!, {});
  expect(record.status, JSON.stringify(record)).toBe('completed');
  expect(record.output).toEqual(JSON.parse(block.body));
}

/** Applies a ```diff block to the app's file, exactly where its hunks say. */
function applyDiff(block: Block): void {
  const lines = block.body.split('\n');
  const target = /^\+\+\+ b\/(.+)$/.exec(lines[1] ?? '')?.[1];
  expect(lines[0], `${GUIDE_PATH}:${block.line}: a diff starts with --- a/<file>`).toBe(`--- a/${target}`);
  const file = join(state.cwd, target!);
  let text = readFileSync(file, 'utf8').split('\n');
  let i = 2;
  let offset = 0;
  while (i < lines.length) {
    const header = /^@@ -(\d+),(\d+) \+(\d+),(\d+) @@/.exec(lines[i]!);
    if (!header) throw new Error(`${GUIDE_PATH}:${block.line + 1 + i}: expected a hunk header, got "${lines[i]}"`);
    const [oldStart, oldCount, newStart, newCount] = header.slice(1).map(Number) as [number, number, number, number];
    const before: string[] = [];
    const after: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith('@@'); i++) {
      const line = lines[i]!;
      const [mark, content] = [line[0] ?? ' ', line.slice(1)];
      if (mark === ' ') {
        before.push(content);
        after.push(content);
      } else if (mark === '-') before.push(content);
      else if (mark === '+') after.push(content);
      else throw new Error(`${GUIDE_PATH}:${block.line + 1 + i}: not a diff line: "${line}"`);
    }
    expect([before.length, after.length], 'the hunk header counts its lines').toEqual([oldCount, newCount]);
    expect(newStart).toBe(oldStart + offset);
    const at = oldStart - 1 + offset;
    expect(text.slice(at, at + before.length).join('\n'), `${target} at line ${oldStart} is what the guide's diff changes`).toBe(
      before.join('\n'),
    );
    text = [...text.slice(0, at), ...after, ...text.slice(at + before.length)];
    offset += after.length - before.length;
  }
  state.mark = devOut().length;
  writeFileSync(file, text.join('\n'));
}

async function followBlock(block: Block, ctx: TestContext): Promise<void> {
  const previous = state.previous;
  if (block.lang === 'sh') {
    const commands = commandsOf(block);
    expect(commands.length, `${GUIDE_PATH}:${block.line}: an empty sh block`).toBeGreaterThan(0);
    state.previous = { kind: 'sh', commands };
    for (let i = 0; i < commands.length; i++) await runCommand(commands[i]!, commands.slice(i + 1), ctx);
    return;
  }
  if (block.lang === '' && previous?.kind === 'sh' && previous.commands.at(-1) === 'npm run dev') {
    state.previous = { kind: 'other' };
    return expectBanner(block);
  }
  if (block.lang === '' && previous?.kind === 'diff') {
    state.previous = { kind: 'other' };
    await expectTerminalLines(block, 'the reload');
    expect(state.dev!.stderr()).toBe('');
    return;
  }
  if (block.lang === '' && previous?.kind === 'run' && /terminal/i.test(block.intro)) {
    state.previous = { kind: 'other' };
    return expectTerminalLines(block, 'the run in the terminal');
  }
  if (block.lang === 'json' && previous?.kind === 'sh' && previous.commands.at(-1)!.startsWith('curl ')) {
    state.previous = { kind: 'other' };
    const answer = state.lastCurl!;
    expect(answer.text.trim()).toMatch(linePattern(block.body.trim()));
    const { runId } = JSON.parse(answer.text) as { runId?: string };
    if (runId) {
      // the run it started completes (read as the shop of the request)
      const shop = (JSON.parse(answer.body ?? '{}') as { shop?: string }).shop!;
      const record = await waitForRunEnd(state.base!, await previewToken(state.base!, shop), runId);
      expect(record.status, JSON.stringify(record)).toBe('completed');
    }
    return;
  }
  if (block.lang === 'json' && /output/i.test(block.intro)) {
    state.previous = { kind: 'run' };
    return expectFlowOutput(block);
  }
  if (block.lang === 'diff') {
    state.previous = { kind: 'diff' };
    return applyDiff(block);
  }
  throw new Error(
    `${GUIDE_PATH}:${block.line}: this test does not know what to do with this \`\`\`${block.lang} block (after "${block.intro}")`,
  );
}

describe('docs/getting-started.md, followed in a new directory with the packed package', () => {
  it('has a section for the new app, one for the demo of the repository, and blocks the test can follow', () => {
    expect(SECTIONS[0]!.blocks, 'blocks before the first ## heading').toEqual([]);
    const titles = SECTIONS.map((s) => s.title);
    expect(titles).toContain(DEMO_SECTION);
    const blocks = SECTIONS.flatMap((s) => s.blocks);
    expect(blocks.filter((b) => !['sh', '', 'json', 'diff'].includes(b.lang)).map((b) => `${b.line}: ${b.lang}`)).toEqual([]);
    // it starts like the brief of the product: init, cd, install, dev
    expect(commandsOf(blocks[0]!)).toEqual(['npx mercato init my-app', 'cd my-app', 'npm install', 'npm run dev']);
    expect(blocks.filter((b) => b.lang === '' && /It prints:$/.test(b.intro))).toHaveLength(1);
  });

  for (const section of SECTIONS.slice(1)) {
    if (section.blocks.length === 0) continue;
    if (section.title === DEMO_SECTION) {
      it(`${section.title}: the commands are the repository's`, () => {
        expect(section.blocks.map((b) => b.lang)).toEqual(['sh']);
        expect(commandsOf(section.blocks[0]!)).toEqual(['npm install', 'npm start']);
        const root = JSON.parse(readFileSync(join(WORKSPACE, 'package.json'), 'utf8'));
        expect(root.scripts.start).toMatch(/cd examples\/demo && mercato dev$/);
        expect(JSON.parse(readFileSync(join(WORKSPACE, 'examples', 'demo', 'package.json'), 'utf8')).scripts.start).toBe('mercato dev');
      });
      continue;
    }
    it(
      section.title,
      async (ctx) => {
        if (state.broken) throw new Error(`cannot follow on: the section "${state.broken}" failed`);
        try {
          for (const block of section.blocks) await followBlock(block, ctx);
        } catch (error) {
          // a skip (production without PostgreSQL) is not a failure
          if ((error as { code?: string }).code !== 'VITEST_PENDING') state.broken = section.title;
          throw error;
        }
      },
      420_000,
    );
  }

  it('links only to pages that exist', () => {
    const links = [...GUIDE.matchAll(/\]\(([^)#]+\.md)(#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(0);
    for (const link of links) expect(existsSync(join(WORKSPACE, 'docs', link)), link).toBe(true);
  });

  it('Ctrl-C stops every process the guide started (`npm run dev`, and `npm start` and `npm run worker` when they ran)', async () => {
    if (state.broken || state.servers.length === 0) return;
    for (const server of state.servers) {
      await server.stop('SIGINT');
      expect(server.stdout()).toMatch(/^mercato (dev|start|worker): SIGINT received, shutting down…$/m);
      expect(server.stderr()).toBe('');
    }
  });
});
