/**
 * The save pipeline in the spec's order (coercion only before the transformer, types and options after it), secrets kept
 * out of every answer, run error and log line, and configs that can no longer be decrypted.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineProvider } from '../../src/app/define.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { createLogger } from '../../src/logger.ts';
import { createConnectors } from '../../src/providers/service.ts';
import { FAST_WORKER, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';

const KEY = 'ab'.repeat(32);
const OTHER_KEY = 'cd'.repeat(32);
const SECRET = 'SUPERSECRET_pw_9876';
const DERIVED = `session-${SECRET.split('').reverse().join('')}`;

const transformerSaw: unknown[] = [];
const derive = defineProvider({
  name: 'derive',
  ui: {
    fields: {
      apiKey: { type: 'password', label: 'Key' },
      region: {
        type: 'select',
        label: 'Region',
        options: [
          { label: 'EU', value: 'eu' },
          { label: 'US', value: 'us' },
        ],
      },
      retries: { type: 'number', label: 'Retries', required: false },
    },
  },
  transformer: ({ data }) => {
    transformerSaw.push(structuredClone(data));
    if (data.region === 'explode') throw new Error(`cannot derive from ${String(data.apiKey)}`);
    // normalises the region (the docs example) and derives a secret that is not a declared field
    return { ...data, region: String(data.region).toLowerCase(), sessionToken: DERIVED };
  },
  checker: ({ config }) => {
    throw new Error(`denied ${String(config.apiKey)} / ${String((config as Record<string, unknown>).sessionToken)}`);
  },
  methods: {
    async boom(config: { apiKey: string; sessionToken: string }) {
      throw new Error(`remote refused ${config.apiKey} (session ${config.sessionToken})`, { cause: new Error(`inner ${config.apiKey}`) });
    },
    async echo(config: { region: string }) {
      return config.region;
    },
  },
});
const mars = defineProvider({
  name: 'mars',
  ui: { fields: { region: { type: 'select', label: 'Region', options: [{ label: 'EU', value: 'eu' }] } } },
  transformer: ({ data }) => ({ ...data, region: 'mars' }),
  methods: {},
});
// A validator with only `safeParse` (no `safeParseAsync`): accepted by config validation, so it must work when saving.
const syncOnly = {
  safeParse: (value: unknown) =>
    typeof value === 'string' && value.startsWith('acct_')
      ? { success: true, data: value.toUpperCase() }
      : { success: false, error: { issues: [{ message: 'must start with acct_' }] } },
};
const validated = defineProvider({
  name: 'validated',
  ui: {
    fields: {
      account: { type: 'text', label: 'Account', validate: syncOnly as any },
      url: { type: 'text', label: 'URL', validate: z.string().url() },
    },
  },
  methods: {},
});
const rekey = defineProvider({
  name: 'rekey',
  ui: { fields: { k: { type: 'password', label: 'K' }, u: { type: 'text', label: 'U' } } },
  checker: ({ config }) => config.k === 'second-key',
  methods: {
    async use(config: { u: string }) {
      return config.u;
    },
  },
});

const app = defineApp({ providers: { derive, mars, validated, rekey } });
const flow = (name: string, run: (ctx: any) => Promise<unknown>) =>
  app.defineFlow({ name, input: z.object({}), concurrency: null, retryPolicy: { maxAttempts: 1 }, run });
const instance = app.defineConfig({
  flows: {
    boom: flow('boom', (ctx) => ctx.providers.derive.boom()),
    useRekey: flow('useRekey', (ctx) => ctx.providers.rekey.use()),
  },
  worker: FAST_WORKER,
});

describeEngines('provider save pipeline and secrets', (get) => {
  let t: TestRuntime;
  const logLines: string[] = [];
  const logger = createLogger({ level: 'trace', destination: { write: (line: string) => void logLines.push(line) } });
  const save = (name: string, config: unknown, rt = t) => rt.api(`/api/providers/${name}`, { method: 'PUT', json: { config } }).then(json);
  const check = (name: string, rt = t) => rt.api(`/api/providers/${name}/check`, { method: 'POST' }).then(json);
  const view = async (name: string, rt = t) =>
    ((await json(await rt.api('/api/providers'))).body.providers as any[]).find((p) => p.name === name);
  const connectors = () =>
    createConnectors({ db: get().db, secrets: t.runtime.secrets, providers: instance.config.providers }, 'default', SHOP) as any;
  const runFlow = async (flowName: string) => {
    const { runId } = await t.runtime.dispatch({ appHandle: 'default', shop: SHOP, flowName, input: {}, trigger: 'api' });
    return { runId, run: await waitForRun(get().db, runId) };
  };

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true, http: true, logger, env: { ENCRYPTION_KEY: KEY } });
  });
  afterAll(async () => {
    await t?.close();
    // every line the server logged during these tests, whatever failed
    expect(logLines.length).toBeGreaterThan(0);
    for (const secret of [SECRET, DERIVED, 'second-key', 'first-key']) expect(logLines.join('\n')).not.toContain(secret);
  });
  beforeEach(async () => {
    await get().reset();
    transformerSaw.length = 0;
  });

  it('the public config holds declared non-password fields only: never a key the transformer added', async () => {
    const saved = await save('derive', { apiKey: SECRET, region: 'eu' });
    expect(saved.status).toBe(200);
    expect(saved.body.provider.config).toEqual({ region: 'eu' });
    const listed = await t.api('/api/providers').then((r) => r.text());
    expect(listed).not.toContain(SECRET);
    expect(listed).not.toContain(DERIVED);
    expect(await connectors().derive.echo()).toBe('eu');
  });

  it('checks types and select options after the transformer: it can normalise a value, and cannot save an invalid one', async () => {
    const normalised = await save('derive', { apiKey: SECRET, region: 'EU' });
    expect(normalised.status).toBe(200);
    expect(normalised.body.provider.config.region).toBe('eu');
    expect(await save('mars', { region: 'eu' })).toMatchObject({
      status: 400,
      body: { error: 'Field "region": must be one of eu', field: 'region' },
    });
    // a number field given a non-numeric string: coercion leaves it to the transformer, step 6 refuses it
    const notNumber = await save('derive', { apiKey: SECRET, region: 'eu', retries: 'many' });
    expect(notNumber).toMatchObject({ status: 400, body: { error: 'Field "retries": must be a number', field: 'retries' } });
    expect(transformerSaw.at(-1)).toMatchObject({ retries: 'many' });
    // and a numeric one is coerced before the transformer sees it
    expect((await save('derive', { apiKey: SECRET, region: 'us', retries: '3' })).body.provider.config).toEqual({
      region: 'us',
      retries: 3,
    });
    expect(transformerSaw.at(-1)).toMatchObject({ retries: 3 });
    const [{ n }] = await get().db.query<{ n: number }>(sql`select count(*)::int as n from provider_configs where provider = 'mars'`);
    expect(n).toBe(0);
  });

  it('a transformer that throws is a 400 with its message, secrets scrubbed; required fields are checked before it runs', async () => {
    const thrown = await save('derive', { apiKey: SECRET, region: 'explode' });
    expect(thrown).toEqual({ status: 400, body: { error: 'Provider transformer failed: cannot derive from [redacted]' } });
    transformerSaw.length = 0;
    expect(await save('derive', { region: 'eu' })).toMatchObject({ status: 400, body: { error: 'Field "apiKey" is required' } });
    expect(transformerSaw).toEqual([]);
  });

  it('an unknown provider is a 404 even with a body that is not JSON', async () => {
    const res = await t.api('/api/providers/nope', { method: 'PUT', body: 'not json', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(404);
    expect(
      (await t.api('/api/providers/derive', { method: 'PUT', body: 'not json', headers: { 'content-type': 'application/json' } })).status,
    ).toBe(400);
  });

  it('runs a validator that has only safeParse, saving its output; zod validators still work', async () => {
    expect(await save('validated', { account: 'acct_abc', url: 'https://x.example' })).toMatchObject({
      status: 200,
      body: { provider: { config: { account: 'ACCT_ABC' } } },
    });
    expect(await save('validated', { account: 'nope', url: 'https://x.example' })).toMatchObject({
      status: 400,
      body: { error: 'Field "account": must start with acct_' },
    });
    expect((await save('validated', { account: 'acct_abc', url: 'not a url' })).body.error).toMatch(/^Field "url": /);
  });

  it('scrubs every secret of the config from method errors: run error (message, stack), run detail API and run logs', async () => {
    await save('derive', { apiKey: SECRET, region: 'eu' });
    const { runId, run } = await runFlow('boom');
    expect(run.status).toBe('failed');
    expect(run.error.message).toBe('remote refused [redacted] (session [redacted])');
    expect(run.error.stack).toContain('remote refused [redacted]');
    const detail = await t.api(`/api/runs/${runId}`).then((r) => r.text());
    const logs = await get().db.query<{ message: string; data: unknown }>(
      sql`select message, data from logs where run_id = ${runId}::uuid`,
    );
    for (const text of [JSON.stringify(run), detail, JSON.stringify(logs)]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(DERIVED);
    }
    // the caller gets the same error class, scrubbed, cause included
    const error = await connectors()
      .derive.boom()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).cause)).toBe('Error: inner [redacted]');
  });

  it('the checker path scrubs derived secrets too', async () => {
    await save('derive', { apiKey: SECRET, region: 'eu' });
    expect(await check('derive')).toEqual({ status: 500, body: { ok: false, error: 'denied [redacted] / [redacted]' } });
  });

  it('a config that cannot be decrypted any more: connectors and check say so, a full re-save works, passwords must be re-entered', async () => {
    expect((await save('rekey', { k: 'first-key', u: 'one' })).status).toBe(200);
    await t.close();
    t = await startTestRuntime(instance, get().db, { worker: true, http: true, logger, env: { ENCRYPTION_KEY: OTHER_KEY } });
    expect(await view('rekey')).toMatchObject({
      configured: false,
      configError: expect.stringMatching(/cannot be decrypted.*Save it again/),
    });
    const checked = await check('rekey');
    expect(checked).toMatchObject({ status: 500, body: { ok: false, error: expect.stringMatching(/cannot be decrypted.*Save it again/) } });
    const { run } = await runFlow('useRekey');
    expect(run.error).toMatchObject({
      name: 'ProviderNotConfiguredError',
      message: expect.stringMatching(/cannot be decrypted.*save its settings again/),
    });
    // the old row counts as absent: its password is not kept
    expect(await save('rekey', { u: 'two' })).toMatchObject({ status: 400, body: { error: 'Field "k" is required' } });
    expect(await save('rekey', { k: 'second-key', u: 'two' })).toMatchObject({
      status: 200,
      body: { provider: { configured: true, configError: null } },
    });
    expect(await check('rekey')).toMatchObject({ status: 200, body: { ok: true } });
    expect((await runFlow('useRekey')).run.output).toBe('two');
  });
});
