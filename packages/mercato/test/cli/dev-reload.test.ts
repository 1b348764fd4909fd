/**
 * `mercato dev` reloads (docs/cli.md, "Reloading in mercato dev"): one app, one `mercato dev` process. Every kind of file
 * is edited and its new behaviour observed over HTTP; the database and the simulator outlive the reloads; runs in flight
 * finish (on the code they started with, or, past the grace period, on the new code from their last completed step);
 * broken edits print file:line:column and a code frame, never a stack, and the last good version keeps serving.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SHOP } from '../kit/index.ts';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../../bin/mercato.js');
// inside the workspace, so the app resolves `mercato` and `zod` from its node_modules (test-artifacts/ is git-ignored)
const APP = resolve(here, `../../../../test-artifacts/dev-reload-${randomBytes(4).toString('hex')}`);
const DATA = mkdtempSync(join(tmpdir(), 'mercato-dev-reload-'));
const RELOAD_GRACE_MS = 5_000;

vi.setConfig({ testTimeout: 90_000, hookTimeout: 90_000 });

// ---------------------------------------------------------------------------------------------------------------- the app

const files = {
  config: ({
    cron = "{ name: 'Nightly v1', schedule: '0 3 * * *', flow: 'greet', input: {}, shops: 'all' }",
    extra = '',
  } = {}) => `import { defineApp } from 'mercato';
import { crm } from './providers/crm.ts';
import { greet } from './flows/greet.ts';
import { slow } from './flows/slow.ts';
import { discount } from './functions/discount.ts';
import { ordersCreate } from './webhooks/orders-create.ts';
import { report } from './pages/report.ts';

const app = defineApp({ providers: { crm } });

export default app.defineConfig({
  flows: { greet, slow },
  functions: { discount },
  webhooks: { 'orders/create': ordersCreate },
  crons: [${cron}],
  experimental: { customPages: true, pages: { report } },${extra}
});
`,
  flow: (v: string) => `import { defineFlow } from 'mercato';
import { z } from 'zod';

export const greet = defineFlow({
  name: 'greet',
  input: z.object({ name: z.string().default('world') }),
  concurrency: null,
  async run(ctx, input) {
    return ctx.step('say', async () => ({ greeting: \`hello \${input.name} from ${v}\` }));
  },
});
`,
  /** Waits in its second step until the file named by its input exists; each step returns the version of the code that ran it. */
  slow: (v: string) => `import { existsSync } from 'node:fs';
import { defineFlow } from 'mercato';
import { z } from 'zod';

const CODE = '${v}';

export const slow = defineFlow({
  name: 'slow',
  input: z.object({ flag: z.string() }),
  concurrency: null,
  async run(ctx, input) {
    const first = await ctx.step('first', async () => CODE);
    const waitedOn = await ctx.step('wait', async () => {
      while (!existsSync(input.flag)) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        await new Promise((r) => setTimeout(r, 25));
      }
      return CODE;
    });
    const last = await ctx.step('last', async () => CODE);
    return { first, waitedOn, last };
  },
});
`,
  provider: (extraField = '') => `import { defineProvider } from 'mercato';

export const crm = defineProvider({
  name: 'crm',
  ui: { fields: { apiKey: { type: 'password', label: 'API key' },${extraField} } },
  methods: {},
});
`,
  fn: (title: string) => `import { defineFunction } from 'mercato';

export const discount = defineFunction({
  type: 'discount',
  handle: 'volume-discount',
  title: '${title}',
  fields: { percentage: { type: 'number', label: 'Percent off' } },
});
`,
  /** Asks the simulator's Admin API (PLATFORM_ORIGIN) for the shop's name, then logs which version handled the order. */
  webhook: (v: string, head = "import { defineWebhook } from 'mercato';") => `${head}

export const ordersCreate = defineWebhook<{ id: number }>({
  topic: 'orders/create',
  async handler(ctx, payload) {
    const { shop } = await ctx.step('shop', () => ctx.admin.request<{ shop: { name: string } }>('{ shop { name } }', { signal: ctx.signal }));
    await ctx.log.info(\`order \${payload.id} handled by ${v}\`, { shop: shop.name });
  },
});
`,
  page: (title: string) => `import { defineCustomPage } from 'mercato';

export const report = defineCustomPage({
  title: '${title}',
  loaders: { summary: { run: () => ({ title: '${title}' }) } },
});
`,
  route: (v: string, { head = "import { defineRoute } from 'mercato';", auth = "auth: 'none'," } = {}) => `${head}

export default defineRoute({
  ${auth}
  GET: () => Response.json({ hello: '${v}' }),
});
`,
  lib: `export const label = 'util';\n`,
};

function write(rel: string, content: string) {
  const path = join(APP, rel);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
}

function createApp() {
  write('package.json', JSON.stringify({ name: 'dev-reload-app', private: true, type: 'module' }, null, 2));
  write('service.config.ts', files.config());
  write('flows/greet.ts', files.flow('v1'));
  write('flows/slow.ts', files.slow('v1'));
  write('providers/crm.ts', files.provider());
  write('functions/discount.ts', files.fn('Discount v1'));
  write('webhooks/orders-create.ts', files.webhook('v1'));
  write('pages/report.ts', files.page('Report v1'));
  write('routes/hello.ts', files.route('v1'));
  write('lib/util.ts', files.lib);
}

// ------------------------------------------------------------------------------------------------------------ the process

let child: ChildProcess;
let out = '';
let err = '';
let base = '';
let simUrl = '';
let exited: Promise<number | null>;

async function waitFor(read: () => string, re: RegExp, timeout = 20_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const m = re.exec(read());
    if (m) return m;
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`timed out waiting for ${re}\n--- stdout\n${out}\n--- stderr\n${err}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Writes a file and waits for the reload it causes; returns how long the reload took as printed. */
async function reload(rel: string, content: string): Promise<number> {
  const mark = out.length;
  write(rel, content);
  const m = await waitFor(() => out.slice(mark), new RegExp(`↻ reloaded in (\\d+) ms \\([^)\\n]*${escapeRe(rel)}`));
  return Number(m[1]);
}

/** Writes a broken file and returns the error the reload printed (up to "keeps serving"). */
async function breakWith(rel: string, content: string | null): Promise<string> {
  const mark = err.length;
  if (content === null) rmSync(join(APP, rel), { force: true });
  else write(rel, content);
  const m = await waitFor(
    () => err.slice(mark),
    /(mercato dev: [\s\S]*?)\nmercato dev: the last good version keeps serving; fix the file and save it again/,
  );
  return m[1]!;
}

let token: { value: string; at: number } | undefined;
async function authHeaders() {
  if (!token || Date.now() - token.at > 30_000) {
    const res = await fetch(`${base}/__mercato/preview/session-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ shop: SHOP }),
    });
    expect(res.status).toBe(200);
    token = { value: ((await res.json()) as { token: string }).token, at: Date.now() };
  }
  return { authorization: `Bearer ${token.value}`, 'content-type': 'application/json' };
}

async function api<T = any>(path: string, init: RequestInit = {}): Promise<{ status: number; body: T }> {
  const res = await fetch(`${base}${path}`, {
    ...init,
    headers: { ...(await authHeaders()), ...(init.headers as Record<string, string>) },
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: body as T };
}

async function dispatch(flow: string, input: unknown): Promise<string> {
  const r = await api<{ runId: string }>(`/api/flows/${flow}/run`, { method: 'POST', body: JSON.stringify({ input }) });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.runId;
}

async function finished(runId: string, timeout = 20_000): Promise<any> {
  let run: any;
  await expect
    .poll(
      async () => {
        run = (await api(`/api/runs/${runId}`)).body;
        return run.status;
      },
      { timeout, interval: 50 },
    )
    .toMatch(/^(completed|failed|canceled)$/);
  return run;
}

const hello = async () => ((await (await fetch(`${base}/routes/hello`)).json()) as { hello?: string }).hello;

/** Polls until `read` gives `expected`; returns how long it took (for the log: timings are not asserted). */
async function liveWithin(read: () => Promise<unknown>, expected: unknown, since: number): Promise<number> {
  await expect.poll(read, { timeout: 10_000, interval: 25 }).toEqual(expected);
  return Date.now() - since;
}

async function deliverOrder(id: number): Promise<void> {
  const res = await fetch(`${simUrl}/__sim/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ shop: SHOP, topic: 'orders/create', payload: { id } }),
  });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { delivery: { status: number } }).delivery.status).toBe(200);
}

/** The log line the webhook run of order `id` wrote (`order <id> handled by vN`), once its run completed. */
async function webhookHandledBy(id: number): Promise<string | undefined> {
  const runs = (
    await api<{ runs: Array<{ id: string; status: string }> }>(`/api/flows/${encodeURIComponent('webhook:orders/create')}/runs`)
  ).body.runs;
  for (const run of runs) {
    if (run.status !== 'completed') continue;
    const logs = (await api<{ logs: Array<{ message: string }> }>(`/api/runs/${run.id}/logs`)).body.logs;
    const line = logs.find((l) => l.message.startsWith(`order ${id} handled by `));
    if (line) return line.message.slice(`order ${id} handled by `.length);
  }
  return undefined;
}

const simState = async () =>
  (await (await fetch(`${simUrl}/__sim/state`)).json()) as {
    webhookDeliveries: Array<{ webhookId: string }>;
    graphqlCalls: unknown[];
    tokenExchanges: unknown[];
  };

/** What every printed error of user code must look like: a location, a code frame, no stack, nothing of the bundler. */
function expectReadable(text: string, location: RegExp | null) {
  if (location) {
    expect(text).toMatch(location);
    expect(text).toMatch(/^\s*> +\d+ \|/m); // the code frame's marked line
  }
  expect(text).not.toMatch(/^\s+at /m);
  expect(text).not.toMatch(/esbuild/i);
  expect(text).not.toContain('.mercato');
  expect(text).not.toContain('node:internal');
}

beforeAll(async () => {
  createApp();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    MERCATO_DATA_DIR: join(DATA, 'db'),
    MERCATO_SIM_PORT: '0',
  };
  child = spawn(process.execPath, [BIN, 'dev', '--port', '0'], { cwd: APP, env, stdio: ['ignore', 'pipe', 'pipe'] });
  exited = new Promise((r) => child.on('exit', (code) => r(code)));
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  base = (await waitFor(() => out, /listening on (http:\/\/\S+)/, 60_000))[1]!;
  simUrl = (await waitFor(() => out, /simulator at (http:\/\/\S+)/))[1]!;
  await waitFor(() => out, /watching .* for changes/);
});

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 15_000))]);
    if (code === 'timeout') child.kill('SIGKILL');
  }
  rmSync(APP, { recursive: true, force: true });
  rmSync(DATA, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------------------- tests

describe('mercato dev: reloading', () => {
  let firstRun: string;
  const timings: Record<string, { reloadMs: number; liveMs: number }> = {};

  it('serves the first version', async () => {
    expect(await hello()).toBe('v1');
    firstRun = await dispatch('greet', { name: 'ada' });
    expect((await finished(firstRun)).output).toEqual({ greeting: 'hello ada from v1' });
    await deliverOrder(1);
    await expect.poll(() => webhookHandledBy(1), { timeout: 20_000 }).toBe('v1');
  });

  it('a change to each kind of file is live, over HTTP, without a restart', async () => {
    const step = async (name: string, rel: string, content: string, read: () => Promise<unknown>, expected: unknown) => {
      const t = Date.now();
      const reloadMs = await reload(rel, content);
      timings[name] = { reloadMs, liveMs: await liveWithin(read, expected, t) };
    };
    await step('route', 'routes/hello.ts', files.route('v2'), hello, 'v2');
    await step('flow', 'flows/greet.ts', files.flow('v2'), async () => (await finished(await dispatch('greet', { name: 'bo' }))).output, {
      greeting: 'hello bo from v2',
    });
    await step(
      'provider',
      'providers/crm.ts',
      files.provider(" region: { type: 'text', label: 'Region' }"),
      async () => (await api('/api/providers')).body.providers[0].fields.map((f: { name: string }) => f.name),
      ['apiKey', 'region'],
    );
    await step(
      'function',
      'functions/discount.ts',
      files.fn('Discount v2'),
      async () => (await api('/api/functions')).body.functions[0].title,
      'Discount v2',
    );
    await step(
      'page',
      'pages/report.ts',
      files.page('Report v2'),
      async () => (await api('/api/pages/custom')).body.pages.map((p: { title: string }) => p.title),
      ['Report v2'],
    );
    await step(
      'config',
      'service.config.ts',
      files.config({ cron: "{ name: 'Nightly v2', schedule: '0 4 * * *', flow: 'greet', input: {}, shops: 'all' }" }),
      async () => (await api('/api/crons')).body.crons.map((c: { name: string }) => c.name),
      ['Nightly v2'],
    );
    // a webhook topic's handling: the next delivery runs the new handler
    const t = Date.now();
    const reloadMs = await reload('webhooks/orders-create.ts', files.webhook('v2'));
    await deliverOrder(2);
    timings.webhook = { reloadMs, liveMs: await liveWithin(() => webhookHandledBy(2), 'v2', t) };
    // the figures (not asserted: the machine may be loaded); "↻ reloaded in N ms" is what the process printed
    console.log('dev reload timings (ms):', JSON.stringify(timings));
    expect(out.match(/listening on /g)).toHaveLength(1); // one start-up: every change was a reload
  });

  it('keeps the database and the simulator: earlier runs, simulator state and URL stay', async () => {
    // the run made by the first version is still there, with its output
    expect((await api(`/api/runs/${firstRun}`)).body).toMatchObject({ status: 'completed', output: { greeting: 'hello ada from v1' } });
    // the simulator printed at start-up still answers, with the deliveries, token exchanges and Admin API calls of before
    const state = await simState();
    expect(state.webhookDeliveries.length).toBe(2);
    expect(state.tokenExchanges.length).toBeGreaterThan(0);
    // the webhook handler of each version called the Admin API of that same simulator (PLATFORM_ORIGIN did not change)
    expect(state.graphqlCalls.length).toBeGreaterThanOrEqual(2);
    expect(out.match(/simulator at /g)).toHaveLength(1);
    // the new version sees the installation stored before the reloads (no new token exchange was needed)
    const exchanges = state.tokenExchanges.length;
    await deliverOrder(3);
    await expect.poll(() => webhookHandledBy(3), { timeout: 20_000 }).toBe('v2');
    expect((await simState()).tokenExchanges.length).toBe(exchanges);
  });

  it('a run in flight that finishes within the grace period completes on the code it started with', async () => {
    const flag = join(DATA, 'flag-a');
    const runId = await dispatch('slow', { flag });
    await expect
      .poll(async () => (await api(`/api/runs/${runId}`)).body.steps?.map((s: { name: string }) => s.name), { timeout: 20_000 })
      .toEqual(['first']);
    await reload('flows/slow.ts', files.slow('v2'));
    writeFileSync(flag, '');
    const run = await finished(runId);
    expect(run.status).toBe('completed');
    expect(run.output).toEqual({ first: 'v1', waitedOn: 'v1', last: 'v1' });
  });

  it('a run still in flight after the grace period is handed back and resumes on the new code from its last completed step', async () => {
    const flag = join(DATA, 'flag-b');
    const runId = await dispatch('slow', { flag });
    await expect
      .poll(async () => (await api(`/api/runs/${runId}`)).body.steps?.map((s: { name: string }) => s.name), { timeout: 20_000 })
      .toEqual(['first']);
    const mark = out.length;
    await reload('flows/slow.ts', files.slow('v3'));
    // the old worker gives up after RELOAD_GRACE_MS and hands the run back (its lease released, not lost)
    await waitFor(() => out.slice(mark), /handed back/, RELOAD_GRACE_MS + 15_000);
    writeFileSync(flag, '');
    const run = await finished(runId);
    expect(run.status).toBe('completed');
    // `first` was checkpointed by v2 and not run again; the interrupted step and the rest ran on v3
    expect(run.output).toEqual({ first: 'v2', waitedOn: 'v3', last: 'v3' });
    expect(run.lostLeases ?? 0).toBe(0);
  });

  describe('broken edits: the error with file:line:column and a code frame; the last good version keeps serving', () => {
    it('a syntax error (flow file)', async () => {
      const text = await breakWith('flows/greet.ts', files.flow('v3').replace("return ctx.step('say'", "return ctx.step(('say'"));
      expect(text).toContain('does not build');
      expectReadable(text, /flows\/greet\.ts:9:\d+: error: Expected "\)" but found ";"/);
      expect(await hello()).toBe('v2');
      expect((await finished(await dispatch('greet', { name: 'cy' }))).output).toEqual({ greeting: 'hello cy from v2' }); // still the last good flow
      await reload('flows/greet.ts', files.flow('v3'));
      expect((await finished(await dispatch('greet', { name: 'cy' }))).output).toEqual({ greeting: 'hello cy from v3' });
    });

    it('a missing export of a file of the app (route file)', async () => {
      const text = await breakWith(
        'routes/hello.ts',
        files.route('v3', { head: "import { defineRoute } from 'mercato';\nimport { nope } from '../lib/util.ts';\nconsole.log(nope);" }),
      );
      expectReadable(text, /routes\/hello\.ts:2:10: error: No matching export in "lib\/util\.ts" for import "nope"/);
      expect(await hello()).toBe('v2');
      await reload('routes/hello.ts', files.route('v3'));
      expect(await hello()).toBe('v3');
    });

    it('a missing export of a package (webhook file)', async () => {
      const text = await breakWith(
        'webhooks/orders-create.ts',
        files.webhook('v3', "import { defineWebhook, nope } from 'mercato';\nconsole.log(nope);"),
      );
      expect(text).toContain("The requested module 'mercato' does not provide an export named 'nope'");
      expectReadable(text, /webhooks\/orders-create\.ts:1:25\b/);
      expect(await hello()).toBe('v3');
      await reload('webhooks/orders-create.ts', files.webhook('v3'));
      await deliverOrder(4);
      await expect.poll(() => webhookHandledBy(4), { timeout: 20_000 }).toBe('v3');
    });

    it('a module that throws while loading (provider file, route file)', async () => {
      const provider = await breakWith(
        'providers/crm.ts',
        `${files.provider()}if (process.env.PATH) throw new Error('the CRM module refuses to load');\n`,
      );
      expect(provider).toContain('the CRM module refuses to load');
      expectReadable(provider, /providers\/crm\.ts:8:\d+/);
      expect(await hello()).toBe('v3');
      await reload(
        'providers/crm.ts',
        files.provider(" region: { type: 'text', label: 'Region' }, zone: { type: 'text', label: 'Zone', required: false }"),
      );
      await expect
        .poll(async () => (await api('/api/providers')).body.providers[0].fields.map((f: { name: string }) => f.name))
        .toEqual(['apiKey', 'region', 'zone']);

      const route = await breakWith(
        'routes/hello.ts',
        `${files.route('v4')}throw new TypeError('routes/hello.ts is broken on purpose');\n`,
      );
      expect(route).toContain('TypeError: routes/hello.ts is broken on purpose');
      expectReadable(route, /routes\/hello\.ts:7:\d+/);
      expect(await hello()).toBe('v3');
      await reload('routes/hello.ts', files.route('v4'));
      expect(await hello()).toBe('v4');
    });

    it('a config that fails validation (invalid cron schedule, unknown option, a value of the wrong type)', async () => {
      const cron = await breakWith(
        'service.config.ts',
        files.config({ cron: "{ name: 'Nightly v2', schedule: '61 4 * * *', flow: 'greet', input: {}, shops: 'all' }" }),
      );
      expect(cron).toContain('crons[0].schedule: "61 4 * * *" is not a valid cron expression');
      expectReadable(cron, /service\.config\.ts:11:\d+/); // the defineConfig call
      const unknown = await breakWith('service.config.ts', files.config({ extra: '\n  bogus: true,' }));
      expect(unknown).toContain('bogus: unknown option');
      expectReadable(unknown, /service\.config\.ts:11:\d+/);
      const typeInvalid = await breakWith(
        'service.config.ts',
        files.config({ extra: "\n  worker: { concurrency: 'many' as unknown as number }," }),
      );
      expect(typeInvalid).toContain('worker.concurrency: must be a positive integer');
      expectReadable(typeInvalid, /service\.config\.ts:11:\d+/);
      expect((await api('/api/crons')).body.crons.map((c: { name: string }) => c.name)).toEqual(['Nightly v2']);
      await reload(
        'service.config.ts',
        files.config({ cron: "{ name: 'Nightly v3', schedule: '0 5 * * *', flow: 'greet', input: {}, shops: 'all' }" }),
      );
      await expect.poll(async () => (await api('/api/crons')).body.crons.map((c: { name: string }) => c.name)).toEqual(['Nightly v3']);
    });

    it('a rule of mercato check: a route without auth, two route files on one path', async () => {
      const noAuth = await breakWith('routes/hello.ts', files.route('v5', { auth: '' }));
      expect(noAuth).toContain("routes/hello.ts: declares no auth; export auth = 'none' or an auth function");
      expectReadable(noAuth, null);
      expect(await hello()).toBe('v4');
      await reload('routes/hello.ts', files.route('v5'));
      expect(await hello()).toBe('v5');

      const clash = await breakWith('routes/hello/index.ts', files.route('v6'));
      expect(clash).toContain('routes/hello.ts and routes/hello/index.ts both map to /routes/hello');
      expectReadable(clash, null);
      expect(await hello()).toBe('v5');
      const mark = out.length;
      rmSync(join(APP, 'routes/hello'), { recursive: true, force: true });
      await waitFor(() => out.slice(mark), /↻ reloaded in \d+ ms \([^)\n]*routes\/hello\/index\.ts/);
      expect(await hello()).toBe('v5');
    });

    it('after all of it: one process, the first run still readable, no stack trace printed', async () => {
      expect(child.exitCode).toBe(null);
      expect(out.match(/listening on /g)).toHaveLength(1);
      expect((await api(`/api/runs/${firstRun}`)).body.status).toBe('completed');
      expect(err).not.toMatch(/^\s+at /m);
      expect(existsSync(join(APP, '.mercato', 'build'))).toBe(true);
    });
  });
});
