import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineProvider } from '../../src/app/define.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { createLogger } from '../../src/logger.ts';
import { checkFailureMessage, checkProvider } from '../../src/providers/service.ts';
import { FAST_WORKER, OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';

const KEY = '0123456789abcdef'.repeat(4);
const API_KEY = 'sk_live_TOPSECRET_1234';

// A real HTTP service the provider talks to.
let service: Server;
let serviceUrl = '';
const seenKeys: string[] = [];

const checkerCalls: string[] = [];
const transformerSaw: unknown[] = [];
let checkerMode: 'ok' | 'false' | 'throw' | 'hang' = 'ok';

const crm = defineProvider({
  name: 'crm',
  ui: {
    fields: {
      baseUrl: {
        type: 'text',
        label: 'Base URL',
        placeholder: 'https://crm.example',
        validate: z
          .string()
          .url()
          .transform((u) => u.replace(/\/+$/, '')),
      },
      apiKey: { type: 'password', label: 'API key' },
      timeoutMs: { type: 'number', label: 'Timeout', required: false },
      sandbox: { type: 'checkbox', label: 'Sandbox', required: false },
      region: {
        type: 'select',
        label: 'Region',
        options: [
          { label: 'EU', value: 'eu' },
          { label: 'US', value: 'us' },
        ],
      },
    },
  },
  transformer: ({ data }) => {
    transformerSaw.push(structuredClone(data));
    return { ...data, region: data.region };
  },
  async checker({ config, signal }) {
    checkerCalls.push(config.baseUrl);
    if (checkerMode === 'throw') throw new Error(`CRM refused key ${config.apiKey}`);
    if (checkerMode === 'hang') await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
    if (checkerMode === 'false') return false;
    const res = await fetch(`${config.baseUrl}/ping`, { headers: { 'x-api-key': config.apiKey }, signal });
    return res.ok;
  },
  methods: {
    async lookup(config: { baseUrl: string; apiKey: string }, email: string) {
      const res = await fetch(`${config.baseUrl}/customers?email=${encodeURIComponent(email)}`, {
        headers: { 'x-api-key': config.apiKey },
      });
      return (await res.json()) as { email: string; id: number };
    },
  },
});

const badTransformer = defineProvider({
  name: 'badTransformer',
  ui: { fields: { token: { type: 'text', label: 'Token' } } },
  transformer: () => 'not an object' as any,
  methods: {},
});
const noChecker = defineProvider({
  name: 'noChecker',
  ui: { fields: { url: { type: 'text', label: 'URL', required: false } } },
  methods: {},
});
const dropsField = defineProvider({
  name: 'dropsField',
  ui: { fields: { a: { type: 'text', label: 'A' }, b: { type: 'text', label: 'B' } } },
  transformer: ({ data }) => ({ a: data.a }),
  methods: {},
});

const app = defineApp({ providers: { crm, badTransformer, noChecker, dropsField } });
const instance = app.defineConfig({
  flows: {
    useCrm: app.defineFlow({
      name: 'useCrm',
      input: z.object({ email: z.string() }),
      concurrency: null,
      retryPolicy: { maxAttempts: 1 },
      run: (ctx, input) => ctx.step('lookup', () => ctx.providers.crm.lookup(input.email)),
    }),
  },
  worker: FAST_WORKER,
});

beforeAll(async () => {
  service = createServer((req, res) => {
    seenKeys.push(String(req.headers['x-api-key']));
    const url = new URL(req.url!, 'http://x');
    if (req.headers['x-api-key'] !== API_KEY) {
      res.writeHead(401).end();
      return;
    }
    if (url.pathname === '/ping') res.writeHead(200).end('pong');
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ email: url.searchParams.get('email'), id: 7 }));
  });
  await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
  serviceUrl = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => service.close(() => r())));

describeEngines('providers', (get) => {
  let t: TestRuntime;
  const save = (name: string, config: unknown, shop = SHOP) =>
    t.api(`/api/providers/${name}`, { method: 'PUT', json: { config }, shop }).then(json);
  const list = async (shop = SHOP) => (await json(await t.api('/api/providers', { shop }))).body.providers as any[];
  const crmView = async (shop = SHOP) => (await list(shop)).find((p) => p.name === 'crm');
  const valid = () => ({ baseUrl: `${serviceUrl}/`, apiKey: API_KEY, timeoutMs: '2500', sandbox: 'true', region: 'eu' });

  const logLines: string[] = [];
  const logger = createLogger({ level: 'trace', destination: { write: (line: string) => void logLines.push(line) } });

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true, http: true, logger, env: { ENCRYPTION_KEY: KEY } });
  });
  afterAll(async () => {
    await t?.close();
    expect(logLines.join('\n')).toContain('provider check failed'); // the checker failure was logged, without the key
    expect(logLines.join('\n')).not.toContain(API_KEY);
  });
  beforeEach(async () => {
    await get().reset();
    checkerCalls.length = 0;
    transformerSaw.length = 0;
    checkerMode = 'ok';
  });

  it('lists definitions with field metadata and status "Not configured" before anything is saved', async () => {
    const view = await crmView();
    expect(view).toMatchObject({
      name: 'crm',
      configured: false,
      status: 'Not configured',
      lastCheckedAt: null,
      lastCheckOk: null,
      config: {},
      hasChecker: true,
      methods: ['lookup'],
    });
    expect(view.fields).toEqual([
      { name: 'baseUrl', type: 'text', label: 'Base URL', required: true, placeholder: 'https://crm.example' },
      { name: 'apiKey', type: 'password', label: 'API key', required: true, hasValue: false },
      { name: 'timeoutMs', type: 'number', label: 'Timeout', required: false },
      { name: 'sandbox', type: 'checkbox', label: 'Sandbox', required: false },
      {
        name: 'region',
        type: 'select',
        label: 'Region',
        required: true,
        options: [
          { label: 'EU', value: 'eu' },
          { label: 'US', value: 'us' },
        ],
      },
    ]);
  });

  it('saves through the pipeline: coercion before the transformer, the validator output saved, passwords never read back', async () => {
    const saved = await save('crm', valid());
    expect(saved.status).toBe(200);
    // the transformer saw coerced values (number and boolean), not the submitted strings
    expect(transformerSaw).toEqual([{ baseUrl: `${serviceUrl}/`, apiKey: API_KEY, timeoutMs: 2500, sandbox: true, region: 'eu' }]);
    const view = await crmView();
    expect(view.config).toEqual({ baseUrl: serviceUrl, timeoutMs: 2500, sandbox: true, region: 'eu' }); // trailing slash removed by the validator
    expect(view.fields.find((f: any) => f.name === 'apiKey').hasValue).toBe(true);
    expect(JSON.stringify(await list())).not.toContain(API_KEY);
    expect(view).toMatchObject({ configured: true, status: 'Configured' });
    expect(checkerCalls).toEqual([]); // saving never runs the checker
  });

  it('coerces checkbox strings: "true" is true, any other string false; an empty number is missing', async () => {
    await save('crm', { ...valid(), sandbox: 'yes', timeoutMs: '' });
    expect((await crmView()).config).toEqual({ baseUrl: serviceUrl, sandbox: false, region: 'eu' });
    await save('crm', { ...valid(), sandbox: true, timeoutMs: 10 });
    expect((await crmView()).config).toMatchObject({ sandbox: true, timeoutMs: 10 });
  });

  it('keeps the stored password when the submitted value is missing or empty', async () => {
    await save('crm', valid());
    expect((await save('crm', { ...valid(), apiKey: '' })).status).toBe(200);
    const { apiKey: _omit, ...withoutKey } = valid();
    expect((await save('crm', { ...withoutKey, region: 'us' })).status).toBe(200);
    const res = await json(await t.api('/api/providers/crm/check', { method: 'POST' }));
    expect(res.body.ok).toBe(true); // the checker got the original key: the service accepted it
    expect((await crmView()).config.region).toBe('us');
  });

  it('answers the exact messages: required, field reasons, transformer result', async () => {
    const missing = await save('crm', { baseUrl: serviceUrl, region: 'eu' });
    expect(missing).toMatchObject({ status: 400, body: { error: 'Field "apiKey" is required', field: 'apiKey' } });
    const notNumber = await save('crm', { ...valid(), timeoutMs: 'soon' });
    expect(notNumber.body.error).toBe('Field "timeoutMs": must be a number');
    const badOption = await save('crm', { ...valid(), region: 'mars' });
    expect(badOption.body.error).toBe('Field "region": must be one of eu, us');
    const badUrl = await save('crm', { ...valid(), baseUrl: 'not a url' });
    expect(badUrl.body.error).toMatch(/^Field "baseUrl": /);
    const transformer = await save('badTransformer', { token: 'x' });
    expect(transformer).toMatchObject({ status: 400, body: { error: 'Provider transformer must return an object' } });
    const dropped = await save('dropsField', { a: '1', b: '2' });
    expect(dropped).toMatchObject({ status: 400, body: { error: 'Field "b" is required' } }); // checked again after the transformer
    const unknownField = await save('crm', { ...valid(), extra: 1 });
    expect(unknownField.body.error).toBe('Field "extra": is not a field of this provider');
    const several = await save('crm', { region: 'eu' });
    expect(several.body.errors.map((e: any) => e.message)).toEqual(['Field "baseUrl" is required', 'Field "apiKey" is required']);
    // nothing was written by any failed save
    const [{ n }] = await get().db.query<{ n: number }>(sql`select count(*)::int as n from provider_configs`);
    expect(n).toBe(0);
  });

  it('rejects a body that is not an object (400) and an unknown provider (404)', async () => {
    expect((await t.api('/api/providers/crm', { method: 'PUT', json: [1] })).status).toBe(400);
    expect((await t.api('/api/providers/crm', { method: 'PUT', json: { config: 'x' } })).status).toBe(400);
    expect((await t.api('/api/providers/nope', { method: 'PUT', json: { config: {} } })).status).toBe(404);
    expect((await t.api('/api/providers/nope/check', { method: 'POST' })).status).toBe(404);
  });

  it('check: 400 without a checker; { ok: true }; 200 { ok: false }; 500 { ok: false, error } without the secret', async () => {
    expect(await json(await t.api('/api/providers/noChecker/check', { method: 'POST' }))).toMatchObject({
      status: 400,
      body: { ok: false },
    });
    await save('crm', valid());
    const ok = await json(await t.api('/api/providers/crm/check', { method: 'POST' }));
    expect(ok.status).toBe(200);
    expect(ok.body.ok).toBe(true);
    expect(await crmView()).toMatchObject({ status: 'Connected', lastCheckOk: true, lastCheckedAt: expect.any(String) });
    checkerMode = 'false';
    expect((await json(await t.api('/api/providers/crm/check', { method: 'POST' }))).body.ok).toBe(false);
    expect(await crmView()).toMatchObject({ status: 'Error', lastCheckOk: false });
    checkerMode = 'throw';
    const thrown = await json(await t.api('/api/providers/crm/check', { method: 'POST' }));
    expect(thrown.status).toBe(500);
    expect(thrown.body).toEqual({ ok: false, error: 'CRM refused key [redacted]' });
    // a network failure says what happened (fetch's bare "fetch failed" and its cause), never the key
    checkerMode = 'ok';
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await save('crm', { ...valid(), baseUrl: `http://127.0.0.1:${port}` });
    const refused = await json(await t.api('/api/providers/crm/check', { method: 'POST' }));
    expect(refused.status).toBe(500);
    expect(refused.body).toEqual({ ok: false, error: `fetch failed: connect ECONNREFUSED 127.0.0.1:${port}` });
  });

  it('check without a saved config runs the checker (spec) and records nothing; a failure says the settings are not saved; a hanging checker is aborted at its time limit', async () => {
    checkerMode = 'false';
    checkerCalls.length = 0;
    const res = await json(await t.api('/api/providers/crm/check', { method: 'POST' }));
    expect(res).toEqual({ status: 200, body: { ok: false, lastCheckedAt: null } });
    expect(checkerCalls).toHaveLength(1);
    checkerMode = 'throw';
    const thrown = await json(await t.api('/api/providers/crm/check', { method: 'POST' }));
    expect(thrown).toEqual({
      status: 500,
      body: {
        ok: false,
        error: 'CRM refused key undefined (provider "crm" has no saved settings for this shop: save them, then check again)',
      },
    });
    const [{ n }] = await get().db.query<{ n: number }>(sql`select count(*)::int as n from provider_configs`);
    expect(n).toBe(0);
    await save('crm', valid());
    // a saved config that misses a value the definition now requires (a field added since): the failure names it
    const fields = { ...instance.config.providers.crm.ui.fields, region2: { type: 'text' as const, label: 'Second region' } };
    const grown = { crm: { ...instance.config.providers.crm, ui: { fields } } };
    const base = { db: get().db, secrets: t.runtime.secrets };
    await expect(checkProvider({ ...base, providers: grown as any }, 'default', SHOP, 'crm')).rejects.toMatchObject({
      name: 'CheckFailedError',
      message: expect.stringMatching(/\(provider "crm" is missing saved values: region2; save them, then check again\)$/),
    });
    checkerMode = 'hang';
    const deps = { db: get().db, secrets: t.runtime.secrets, providers: instance.config.providers, checkerTimeoutMs: 100 };
    const begin = Date.now();
    await expect(checkProvider(deps, 'default', SHOP, 'crm')).rejects.toMatchObject({
      name: 'CheckFailedError',
      details: { ok: false },
      message: 'Checker timed out after 100 ms',
    });
    expect(Date.now() - begin).toBeLessThan(5000);
    expect(await crmView()).toMatchObject({ lastCheckOk: false, status: 'Error' });
  });

  it('stores the whole config encrypted, bound to its tenant: no plaintext, and a copied row does not decrypt', async () => {
    await save('crm', valid());
    const rows = await get().db.query<{ config: unknown }>(sql`select config from provider_configs`);
    const raw = JSON.stringify(rows);
    for (const secret of [API_KEY, serviceUrl, '2500', '"eu"']) expect(raw).not.toContain(secret);
    expect(rows[0].config).toMatchObject({ v: 1 });
    // copy the row to another shop: decryption must fail (associated data = app, shop, provider)
    await get().db.query(
      sql`insert into provider_configs (app_handle, shop, provider, config) select app_handle, ${OTHER_SHOP}, provider, config from provider_configs`,
    );
    const copied = await crmView(OTHER_SHOP);
    expect(copied).toMatchObject({ configured: false, status: 'Not configured', config: {} });
    expect(copied.configError).toMatch(/cannot be decrypted/);
    expect((await crmView()).configured).toBe(true);
    expect((await crmView()).configError).toBeNull();
  });

  it('keeps tenants apart: another shop sees its own, empty config', async () => {
    await save('crm', valid());
    expect(await crmView(OTHER_SHOP)).toMatchObject({ configured: false, config: {} });
  });

  it('flows call connectors without the config; a shop without a saved config gets a clear error', async () => {
    await save('crm', valid());
    const ok = await t.runtime.dispatch({
      appHandle: 'default',
      shop: SHOP,
      flowName: 'useCrm',
      input: { email: 'a@b.c' },
      trigger: 'api',
    });
    expect((await waitForRun(get().db, ok.runId)).output).toEqual({ email: 'a@b.c', id: 7 });
    expect(seenKeys.at(-1)).toBe(API_KEY);
    const missing = await t.runtime.dispatch({
      appHandle: 'default',
      shop: OTHER_SHOP,
      flowName: 'useCrm',
      input: { email: 'x@y.z' },
      trigger: 'api',
    });
    const failed = await waitForRun(get().db, missing.runId);
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({
      name: 'ProviderNotConfiguredError',
      message: `Provider "crm" is not configured for shop ${OTHER_SHOP} (app default): save its settings in the admin (Providers page) or with PUT /api/providers/crm`,
    });
    expect(checkerCalls).toEqual([]); // never run implicitly
  });
});

describe('checkFailureMessage', () => {
  it('adds the causes that say more: fetch failures, dual-stack refusals, nested causes; never repeats itself', () => {
    const refused = Object.assign(
      new AggregateError([new Error('connect ECONNREFUSED ::1:9'), new Error('connect ECONNREFUSED 127.0.0.1:9')], ''),
      {
        code: 'ECONNREFUSED',
      },
    );
    expect(checkFailureMessage(new TypeError('fetch failed', { cause: refused }))).toBe(
      'fetch failed: connect ECONNREFUSED ::1:9: connect ECONNREFUSED 127.0.0.1:9',
    );
    expect(checkFailureMessage(new TypeError('fetch failed', { cause: new Error('getaddrinfo ENOTFOUND crm.invalid') }))).toBe(
      'fetch failed: getaddrinfo ENOTFOUND crm.invalid',
    );
    expect(checkFailureMessage(new Error('The CRM answered 401 Unauthorized'))).toBe('The CRM answered 401 Unauthorized');
    expect(checkFailureMessage(new Error('upstream: timeout', { cause: new Error('timeout') }))).toBe('upstream: timeout');
    expect(checkFailureMessage(Object.assign(new Error(''), { name: 'TimeoutError' }))).toBe('TimeoutError');
    expect(checkFailureMessage('plain string')).toBe('plain string');
    expect(checkFailureMessage({ message: 'an object' })).toBe('an object');
  });
});
