/**
 * Secrets at rest, end to end (docs/secrets.md, "What is tested"): a full scenario over real HTTP — two shops installed
 * by token exchange with the platform simulator, providers saved with secret fields, MCP tokens created, used, rotated
 * and revoked, flows and a webhook handler that use the provider and the Admin API and write logs, a provider check and a
 * run that fail with the password in their error — then every table of the database (listed from information_schema,
 * each row cast to text), every line the server logged and every response of the scenario are searched for each
 * plaintext secret, in several encodings: 0 hits. Control cases show the search can fail: the secrets are non-trivial,
 * the scenario did store what it should, the one response allowed to carry an MCP secret (its creation) carries it, and
 * copies planted in a table and in the log are found.
 */
import { randomBytes } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { type PlatformSim, start } from 'platform-sim';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineProvider, defineWebhook } from '../../src/app/define.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { signSessionToken } from '../../src/http/session-token.ts';
import { FAST_WORKER, OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { capturingLogger } from '../kit/index.ts';
import { type Haystack, dumpDatabase, encodings, findSecrets, isNonTrivial } from './dump.ts';

const alnum = (bytes: number) =>
  randomBytes(bytes)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '');

// Every secret of the scenario is random, so a hit cannot come from a fixture or a default.
const ENCRYPTION_KEY = randomBytes(32).toString('hex');
const API_KEY = `atrest-key-${randomBytes(4).toString('hex')}`;
const API_SECRET = `appsecret${alnum(24)}`;
const PASSWORDS: Record<string, string> = { [SHOP]: `vaultpw${alnum(24)}`, [OTHER_SHOP]: `vaultpw${alnum(24)}` };
const SIGNING: Record<string, string> = { [SHOP]: `signing${alnum(24)}`, [OTHER_SHOP]: `signing${alnum(24)}` };
/** What the provider's transformer adds (a value the form never had): secret too. */
const derived = (password: string) => `Basic ${Buffer.from(`user:${password}`).toString('base64')}`;
const SHOP_QUERY = '{ shop { name myshopifyDomain } }';

/** The external service the provider talks to: it wants the shop's password in `x-api-key`. */
let vault: Server;
let vaultUrl = '';

const vaultProvider = defineProvider({
  name: 'vault',
  ui: {
    fields: {
      url: { type: 'text', label: 'URL' },
      apiKey: { type: 'password', label: 'API key' },
      signingSecret: { type: 'password', label: 'Signing secret', required: false },
    },
  },
  transformer: ({ data }) => ({ ...data, authorization: derived(String(data.apiKey)) }),
  async checker({ config }) {
    // a careless checker: its error quotes the key, Mercato must scrub it
    if (config.url.endsWith('/broken')) throw new Error(`vault refused key ${config.apiKey} (signing ${config.signingSecret})`);
    return (await fetch(`${config.url}/ping`, { headers: { 'x-api-key': config.apiKey } })).ok;
  },
  methods: {
    async lookup(config: { url: string; apiKey: string }, id: string) {
      const res = await fetch(`${config.url}/items/${id}`, { headers: { 'x-api-key': config.apiKey } });
      if (!res.ok) throw new Error(`vault answered ${res.status}`);
      return (await res.json()) as { id: string; label: string };
    },
    async explode(config: { apiKey: string; authorization: string }) {
      throw new Error(`cannot reach the vault with ${config.apiKey} / ${config.authorization}`);
    },
  },
});

const app = defineApp({ providers: { vault: vaultProvider } });
const instance = app.defineConfig({
  flows: {
    sync: app.defineFlow({
      name: 'sync',
      input: z.object({ id: z.string() }),
      concurrency: null,
      run: async (ctx, input) => {
        const item = await ctx.step('vault', () => ctx.providers.vault.lookup(input.id));
        const shop = await ctx.step('shop', () => ctx.admin.request(SHOP_QUERY, { signal: ctx.signal }));
        await ctx.log.info('synced', { item: item.label, shop: (shop as any).shop.name });
        return { label: item.label };
      },
    }),
    explode: app.defineFlow({
      name: 'explode',
      input: z.object({}),
      retryPolicy: { maxAttempts: 1 },
      run: async (ctx) => {
        await ctx.log.warn('about to fail');
        return ctx.step('explode', () => ctx.providers.vault.explode());
      },
    }),
    // the control: a flow whose own code logs a value it was given (the search must find it)
    plant: app.defineFlow({
      name: 'plant',
      input: z.object({ text: z.string() }),
      run: async (ctx, input) => {
        await ctx.log.info(`planted ${input.text}`);
      },
    }),
  },
  webhooks: {
    'orders/create': defineWebhook({
      topic: 'orders/create',
      async handler(ctx, payload: { id: number }) {
        const shop = await ctx.step('shop', () => ctx.admin.request(SHOP_QUERY, { signal: ctx.signal }));
        // the provider is used by the flow the handler dispatches
        const { runId } = await ctx.step('dispatch', () => ctx.dispatchFlow({ flowName: 'sync', input: { id: `order-${payload.id}` } }));
        await ctx.log.info('order handled', { orderId: payload.id, runId, shop: (shop as any).shop.name });
      },
    }),
  },
  worker: FAST_WORKER,
});

beforeAll(async () => {
  const passwords = new Set(Object.values(PASSWORDS));
  vault = createServer((req, res) => {
    if (!passwords.has(String(req.headers['x-api-key']))) {
      res.writeHead(401).end();
      return;
    }
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/ping') res.writeHead(200).end('pong');
    else
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: url.pathname.split('/').pop(), label: 'item' }));
  });
  await new Promise<void>((r) => vault.listen(0, '127.0.0.1', r));
  vaultUrl = `http://127.0.0.1:${(vault.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => vault.close(() => r())));

describeEngines('secrets at rest', (get, kind) => {
  let sim: PlatformSim;
  let t: TestRuntime;
  let logged: string[];
  /** Every response of the scenario: what it was, the status line, the headers and the body as received. */
  const responses: Array<Haystack & { allowed?: string }> = [];
  /** MCP secrets by label, and the response each was created in (the one place it may appear). */
  const mcpSecrets: Record<string, string> = {};
  const sessionTokens: string[] = [];
  const runs: Array<{ id: string; shop: string }> = [];

  const record = async (where: string, res: Response, allowed?: string) => {
    const text = await res.text();
    responses.push({ where, text: `${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${text}`, allowed });
    const isJson = (res.headers.get('content-type') ?? '').includes('json');
    return { status: res.status, body: text && isJson ? (JSON.parse(text) as any) : text };
  };
  const api = async (method: string, path: string, options: { shop?: string; json?: unknown } = {}) => {
    const token = signSessionToken({ apiKey: API_KEY, apiSecret: API_SECRET, shop: options.shop ?? SHOP });
    sessionTokens.push(token);
    const res = await fetch(`${t.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: options.json !== undefined ? JSON.stringify(options.json) : undefined,
    });
    return { res, label: `${method} ${path} (${options.shop ?? SHOP})` };
  };
  const call = async (method: string, path: string, options: { shop?: string; json?: unknown } = {}) => {
    const { res, label } = await api(method, path, options);
    return record(label, res);
  };
  const mcp = async (secret: string, label: string, body: unknown) => {
    const res = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(body),
    });
    return record(`POST /mcp ${label}`, res);
  };

  beforeAll(async () => {
    sim = await start({
      apps: [{ apiKey: API_KEY, apiSecret: API_SECRET }],
      shops: [
        { domain: SHOP, name: 'Shop One' },
        { domain: OTHER_SHOP, name: 'Shop Two' },
      ],
    });
    const captured = capturingLogger('trace');
    logged = captured.raw;
    t = await startTestRuntime(instance, get().db, {
      http: true,
      worker: FAST_WORKER,
      logger: captured.logger,
      env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY, PLATFORM_API_KEY: API_KEY, PLATFORM_API_SECRET: API_SECRET },
    });
    sim.setAppUrl(API_KEY, t.url!);
  });
  afterAll(async () => {
    await t?.close();
    await sim?.close();
  });

  /** Every plaintext secret of the scenario, by label. */
  const secrets = (): Record<string, string> => {
    const out: Record<string, string> = { ENCRYPTION_KEY, 'app API secret': API_SECRET };
    for (const shop of [SHOP, OTHER_SHOP]) {
      out[`password ${shop}`] = PASSWORDS[shop]!;
      out[`signing secret ${shop}`] = SIGNING[shop]!;
      out[`transformer value ${shop}`] = derived(PASSWORDS[shop]!);
      const token = sim.state.installation(API_KEY, shop)?.accessToken;
      if (token) {
        out[`access token ${shop}`] = token;
        out[`access token ${shop} (without prefix)`] = token.replace(/^shpat_/, '');
      }
    }
    for (const [label, secret] of Object.entries(mcpSecrets)) {
      out[label] = secret;
      out[`${label} (random part)`] = secret.split('_').pop()!;
    }
    return out;
  };

  it('runs the scenario: installs, providers, MCP tokens, runs, a webhook, failures that quote the password', async () => {
    // two shops installed by token exchange with the simulator (the first admin request of each)
    for (const shop of [SHOP, OTHER_SHOP]) {
      expect((await call('GET', '/api/providers', { shop })).status).toBe(200);
      expect(sim.state.installation(API_KEY, shop)?.accessToken).toMatch(/^shpat_/);
    }
    // providers saved with their secret fields, then saved again with the password left empty (kept)
    for (const shop of [SHOP, OTHER_SHOP]) {
      const config = { url: vaultUrl, apiKey: PASSWORDS[shop], signingSecret: SIGNING[shop] };
      expect((await call('PUT', '/api/providers/vault', { shop, json: { config } })).status).toBe(200);
      expect((await call('PUT', '/api/providers/vault', { shop, json: { config: { ...config, apiKey: '' } } })).status).toBe(200);
      const check = await call('POST', '/api/providers/vault/check', { shop });
      expect(check.body).toMatchObject({ ok: true });
    }
    // a check that fails with the password in the checker's error: 500, scrubbed
    const broken = { url: `${vaultUrl}/broken`, apiKey: PASSWORDS[OTHER_SHOP], signingSecret: SIGNING[OTHER_SHOP] };
    expect((await call('PUT', '/api/providers/vault', { shop: OTHER_SHOP, json: { config: broken } })).status).toBe(200);
    const failedCheck = await call('POST', '/api/providers/vault/check', { shop: OTHER_SHOP });
    expect(failedCheck.status).toBe(500);
    expect(failedCheck.body.error).toContain('vault refused key');
    const restore = { url: vaultUrl, apiKey: PASSWORDS[OTHER_SHOP], signingSecret: SIGNING[OTHER_SHOP] };
    expect((await call('PUT', '/api/providers/vault', { shop: OTHER_SHOP, json: { config: restore } })).status).toBe(200);

    // MCP tokens: created (the one response that shows each secret), used, rotated, revoked
    const created = [];
    for (const [shop, name] of [
      [SHOP, 'agent'],
      [SHOP, 'to rotate'],
      [OTHER_SHOP, 'other agent'],
    ] as const) {
      const label = `MCP secret "${name}"`;
      const { res } = await api('POST', '/api/mcp/tokens', { shop, json: { name, permissions: ['run_flows', 'read_flows', 'read_logs'] } });
      const body = JSON.parse(await res.clone().text());
      mcpSecrets[label] = body.secret;
      await record(`POST /api/mcp/tokens (${shop})`, res, label);
      expect(res.status).toBe(201);
      created.push({ shop, id: body.token.id as string, secret: body.secret as string, label });
    }
    for (const token of created) {
      const ran = await mcp(token.secret, `flows.run ${token.label}`, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'service.flows.run', arguments: { flow: 'sync', input: { id: `mcp-${token.shop}` } } },
      });
      expect(ran.status).toBe(200);
      expect(ran.body.result?.structuredContent?.runId, JSON.stringify(ran.body)).toEqual(expect.any(String));
      runs.push({ id: ran.body.result.structuredContent.runId, shop: token.shop });
    }
    const rotating = created[1]!;
    const { res: rotated } = await api('POST', `/api/mcp/tokens/${rotating.id}/rotate`);
    const rotatedBody = JSON.parse(await rotated.clone().text());
    mcpSecrets['MCP secret "to rotate" (new)'] = rotatedBody.secret;
    await record(`POST /api/mcp/tokens/${rotating.id}/rotate`, rotated, 'MCP secret "to rotate" (new)');
    expect(rotated.status).toBe(200);
    expect((await mcp(rotating.secret, 'old secret after rotation', { jsonrpc: '2.0', id: 2, method: 'ping' })).status).toBe(401);
    expect((await mcp(rotatedBody.secret, 'new secret', { jsonrpc: '2.0', id: 3, method: 'ping' })).status).toBe(200);
    expect((await call('POST', `/api/mcp/tokens/${created[2]!.id}/revoke`, { shop: OTHER_SHOP })).status).toBe(200);
    await call('GET', '/api/mcp/tokens');
    await call('GET', `/api/mcp/tokens/${created[0]!.id}`);

    // runs from the admin API, a webhook from the platform, and a run that fails quoting the password
    for (const shop of [SHOP, OTHER_SHOP]) {
      const dispatched = await call('POST', '/api/flows/sync/run', { shop, json: { input: { id: `api-${shop}` } } });
      expect(dispatched.status).toBe(202);
      runs.push({ id: dispatched.body.runId, shop });
    }
    const explode = await call('POST', '/api/flows/explode/run', { shop: OTHER_SHOP, json: { input: {} } });
    runs.push({ id: explode.body.runId, shop: OTHER_SHOP });
    const delivery = await sim.deliverWebhook({ apiKey: API_KEY, shop: SHOP, topic: 'orders/create', payload: { id: 4242 } });
    expect(delivery.status).toBe(200);

    const [webhookRun] = await get().db.query<{ id: string }>(sql`select id from runs where flow_name = 'webhook:orders/create'`);
    runs.push({ id: webhookRun!.id, shop: SHOP });
    expect((await waitForRun(get().db, webhookRun!.id, undefined, 20_000)).status).toBe('completed');
    const [fromWebhook] = await get().db.query<{ id: string }>(sql`select id from runs where input->>'id' = 'order-4242'`);
    runs.push({ id: fromWebhook!.id, shop: SHOP });
    const outcomes: Record<string, number> = {};
    for (const { id } of runs) {
      const run = await waitForRun(get().db, id, undefined, 20_000);
      outcomes[run.status] = (outcomes[run.status] ?? 0) + 1;
    }
    expect(outcomes).toEqual({ completed: runs.length - 1, failed: 1 });
    // what the admin and an MCP client read back: runs, their steps, errors and logs
    for (const { id, shop } of runs) {
      expect((await call('GET', `/api/runs/${id}`, { shop })).status).toBe(200);
      expect((await call('GET', `/api/runs/${id}/logs`, { shop })).status).toBe(200);
      expect((await call('GET', `/api/runs/${id}/logs/export?format=csv`, { shop })).status).toBe(200);
    }
    await call('GET', '/api/runs');
    await call('GET', '/api/runs', { shop: OTHER_SHOP });
    await call('GET', '/api/providers');
    await call('GET', '/api/providers', { shop: OTHER_SHOP });
    const search = await mcp(created[0]!.secret, 'logs.search', {
      jsonrpc: '2.0',
      id: 4,
      method: 'tools/call',
      params: { name: 'service.logs.search', arguments: {} },
    });
    expect(search.status).toBe(200);
    // the failed run's error was scrubbed, and still says what happened
    const failed = await call('GET', `/api/runs/${explode.body.runId}`, { shop: OTHER_SHOP });
    expect(JSON.stringify(failed.body)).toContain('cannot reach the vault with');
  });

  it('the scenario stored what it should, and every secret is non-trivial (so a miss is meaningful)', async () => {
    const dump = await dumpDatabase(get().db);
    expect(dump.tables.length).toBeGreaterThanOrEqual(12);
    expect(dump.rows).toMatchObject({ provider_configs: 2, installations: 2, mcp_tokens: 3 });
    expect(dump.rows.runs).toBe(8);
    expect(dump.rows.logs).toBeGreaterThanOrEqual(8);
    expect(dump.rows.webhook_deliveries).toBe(1);
    expect(dump.rows.mcp_audits).toBeGreaterThanOrEqual(3);
    const all = secrets();
    expect(Object.keys(all)).toHaveLength(2 + 2 * 5 + 2 * 4);
    for (const [label, value] of Object.entries(all)) expect(isNonTrivial(value), label).toBe(true);
    expect(new Set(Object.values(all)).size).toBe(Object.keys(all).length);
    expect(responses.length).toBeGreaterThan(40);
    expect(logged.length).toBeGreaterThan(10);
    // the stored values are the encrypted format (not merely renamed plaintext)
    const stored = await get().db.query<{ config: any }>(sql`select config from provider_configs`);
    for (const row of stored) expect(row.config).toMatchObject({ v: 1, iv: expect.any(String), ct: expect.any(String) });
  });

  it(`0 hits: no plaintext secret in any table, log line or response [${kind}]`, async () => {
    const dump = await dumpDatabase(get().db);
    const logs = logged.map((text, i) => ({ where: `log line ${i + 1}`, text }));
    // the session tokens the admin sent are bearer credentials too (short-lived): never kept or logged
    const all = { ...secrets(), ...Object.fromEntries(sessionTokens.map((token, i) => [`session token ${i + 1}`, token])) };
    expect(sessionTokens.length).toBeGreaterThan(40);
    for (const token of sessionTokens) expect(isNonTrivial(token)).toBe(true);
    const hits = [...findSecrets(dump.haystacks, all), ...findSecrets(logs, all)];
    for (const response of responses) {
      for (const hit of findSecrets([response], all)) {
        // the response that created (or rotated) an MCP token is the one place its secret is shown
        if (response.allowed && (hit.secret === response.allowed || hit.secret === `${response.allowed} (random part)`)) continue;
        hits.push(hit);
      }
    }
    const forms = Object.values(all).reduce((n, value) => n + encodings(value).length, 0);
    console.info(
      `secrets at rest [${kind}]: ${Object.keys(all).length} secrets (${forms} encodings) searched in ${dump.tables.length} tables (${dump.haystacks.length} rows), ${logs.length} log lines and ${responses.length} responses: ${hits.length} hits`,
    );
    expect(hits).toEqual([]);
    // the allowed responses did carry their secret: the search sees the responses
    for (const response of responses.filter((r) => r.allowed))
      expect(findSecrets([response], { [response.allowed!]: all[response.allowed!]! }), response.where).not.toEqual([]);
  });

  it('control: copies planted in a table and in the server log are found, in each encoding', async () => {
    const password = PASSWORDS[SHOP]!;
    const key = Object.values(mcpSecrets)[0]!;
    const forms = encodings(password);
    expect(forms.map((f) => f.form)).toEqual(['plain', 'hex', 'HEX', 'base64/0', 'base64/1', 'base64/2']);
    // user code that logs what it should not: the run's log line holds each encoding, between other text
    const planted = `x${forms.map((f) => f.text).join(' y ')} z ${key}`;
    const dispatched = await call('POST', '/api/flows/plant/run', { json: { input: { text: planted } } });
    expect((await waitForRun(get().db, dispatched.body.runId)).status).toBe('completed');
    t.runtime.logger.info({ note: `left here by the test: ${password}` }, 'planted');
    const dump = await dumpDatabase(get().db);
    const hits = findSecrets([...dump.haystacks, ...logged.map((text, i) => ({ where: `log line ${i + 1}`, text }))], {
      password,
      'MCP secret': key,
    });
    const found = (where: RegExp) =>
      hits
        .filter((h) => where.test(h.where))
        .map((h) => `${h.secret}:${h.form}`)
        .sort();
    expect(found(/^table public\.logs /)).toEqual(expect.arrayContaining([...forms.map((f) => `password:${f.form}`), 'MCP secret:plain']));
    expect(found(/^log line /)).toContain('password:plain');
  });
});
