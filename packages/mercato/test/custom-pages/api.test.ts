/** Experimental custom pages over real HTTP: disabled, listing with per-request authorize, the loader/action RPC and its errors. */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineCustomPage } from '../../src/app/define.ts';
import { createTestDatabase, describeEngines } from '../../src/db/testing.ts';
import { createLogger } from '../../src/logger.ts';
import { OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';

const app = defineApp();
const flows = { note: app.defineFlow({ name: 'note', input: z.object({ text: z.string() }), run: () => null }) };

/** authorize calls per (page, shop): proves the callback runs on every request. */
const authorizeCalls = new Map<string, number>();
const count = (key: string) => authorizeCalls.set(key, (authorizeCalls.get(key) ?? 0) + 1);
let slowAborted = false;

const reports = app.defineCustomPage({
  title: 'Sales report',
  path: '/reports/sales',
  authorize: ({ shop }) => {
    count(`reports:${shop}`);
    return shop === SHOP;
  },
  loaders: {
    summary: {
      input: z.object({ days: z.number().int().min(1).max(90).default(7), region: z.enum(['eu', 'us']).optional() }),
      run: (ctx, input) => ({
        shop: ctx.shop,
        appHandle: ctx.appHandle,
        page: ctx.page,
        days: input.days,
        region: input.region ?? null,
        hasSignal: ctx.signal instanceof AbortSignal,
      }),
    },
    nothing: { run: (_ctx, input) => ({ inputWasUndefined: input === undefined }) },
    empty: { run: () => undefined },
  },
  actions: {
    addNote: {
      input: z.object({ text: z.string().min(1) }),
      run: async (ctx, input) => ctx.dispatchFlow({ flowName: 'note', input: { text: input.text } }),
    },
    explode: { run: () => Promise.reject(new Error('secret detail: db password is hunter2')) },
    bigint: { run: () => ({ n: 10n }) },
    slow: {
      timeout: 100,
      run: (ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener(
            'abort',
            () => {
              slowAborted = true;
              resolve('aborted');
            },
            { once: true },
          );
        }),
    },
  },
});

const everyone = defineCustomPage({ title: 'Help', loaders: { faq: { run: () => ['a', 'b'] } } });
const hidden = defineCustomPage({ title: 'Internal', nav: false, authorize: () => Promise.resolve(true) });
const broken = defineCustomPage({
  title: 'Broken',
  authorize: () => {
    throw new Error('authorize bug');
  },
  loaders: { any: { run: () => 1 } },
});

const enabled = app.defineConfig({
  flows,
  experimental: { customPages: true, pages: { reports, help: everyone, internal: hidden, broken } },
});
const disabled = app.defineConfig({ flows, experimental: { customPages: false } });

describeEngines('custom pages API', (get) => {
  let t: TestRuntime;
  const lines: string[] = [];
  const logs = () => lines.map((l) => JSON.parse(l));
  const rpc = (path: string, body: unknown, shop = SHOP) =>
    t.api(`/api/pages/custom/${path}`, { method: 'POST', shop, json: body }).then(json);

  beforeAll(async () => {
    const logger = createLogger({ level: 'info', destination: { write: (line: string) => void lines.push(line) } });
    t = await startTestRuntime(enabled, get().db, { http: true, logger });
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(async () => {
    await get().reset();
    authorizeCalls.clear();
    lines.length = 0;
  });

  it('lists the authorized pages and the navigation (nav: false left out); another shop sees fewer', async () => {
    const mine = await json(await t.api('/api/pages/custom'));
    expect(mine).toEqual({
      status: 200,
      body: {
        pages: [
          {
            key: 'reports',
            title: 'Sales report',
            path: '/reports/sales',
            loaders: ['summary', 'nothing', 'empty'],
            actions: ['addNote', 'explode', 'bigint', 'slow'],
          },
          { key: 'help', title: 'Help', path: '/help', loaders: ['faq'], actions: [] },
          { key: 'internal', title: 'Internal', path: '/internal', loaders: [], actions: [] },
        ],
        navigation: [
          { label: 'Sales report', path: '/reports/sales' },
          { label: 'Help', path: '/help' },
        ],
      },
    });
    const other = await json(await t.api('/api/pages/custom', { shop: OTHER_SHOP }));
    expect(other.body.pages.map((p: any) => p.key)).toEqual(['help', 'internal']);
    expect(other.body.navigation).toEqual([{ label: 'Help', path: '/help' }]);
  });

  it('runs authorize on every request, never cached', async () => {
    for (let i = 0; i < 3; i++) expect((await t.api('/api/pages/custom')).status).toBe(200);
    expect(authorizeCalls.get(`reports:${SHOP}`)).toBe(3);
    await rpc('reports/_rpc/loader/summary', { input: {} });
    await rpc('reports/_rpc/loader/summary', { input: {} }, OTHER_SHOP);
    expect(authorizeCalls.get(`reports:${SHOP}`)).toBe(4);
    expect(authorizeCalls.get(`reports:${OTHER_SHOP}`)).toBe(1);
  });

  it('a throwing authorize hides its page only, and is logged with the request id', async () => {
    const res = await t.api('/api/pages/custom', { headers: { 'x-request-id': 'req-authorize-1' } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).pages.map((p: any) => p.key)).not.toContain('broken');
    expect(await rpc('broken/_rpc/loader/any', { input: null })).toEqual({ status: 404, body: { error: 'Not found' } });
    const logged = logs().find((l) => l.msg.includes('authorize failed') && l.requestId === 'req-authorize-1');
    expect(logged).toMatchObject({ level: 50, customPage: 'broken', shop: SHOP, err: { message: 'authorize bug' } });
  });

  it('a loader gets the parsed input (defaults applied) and the tenant; the answer is { result }', async () => {
    expect(await rpc('reports/_rpc/loader/summary', { input: { region: 'eu' } })).toEqual({
      status: 200,
      body: { result: { shop: SHOP, appHandle: 'default', page: 'reports', days: 7, region: 'eu', hasSignal: true } },
    });
    expect(await rpc('reports/_rpc/loader/summary', { input: { days: 30 } })).toMatchObject({
      status: 200,
      body: { result: { days: 30, region: null } },
    });
    // no schema: input passed as given; a missing input is undefined; an undefined result is null
    expect(await rpc('reports/_rpc/loader/nothing', {})).toEqual({ status: 200, body: { result: { inputWasUndefined: true } } });
    expect(await rpc('reports/_rpc/loader/empty', { input: 1 })).toEqual({ status: 200, body: { result: null } });
    expect(await rpc('help/_rpc/loader/faq', { input: null }, OTHER_SHOP)).toEqual({ status: 200, body: { result: ['a', 'b'] } });
  });

  it('an action can dispatch a flow for its own app and shop (trigger page)', async () => {
    const { status, body } = await rpc('reports/_rpc/action/addNote', { input: { text: 'hello' } });
    expect(status).toBe(200);
    expect(body.result).toEqual({ runId: expect.any(String), status: 'pending' });
    const [run] = await get().db.query<{ app_handle: string; shop: string; flow_name: string; trigger: string; input: unknown }>(
      sql`select app_handle, shop, flow_name, trigger, input from runs where id = ${body.result.runId}::uuid`,
    );
    expect(run).toEqual({ app_handle: 'default', shop: SHOP, flow_name: 'note', trigger: 'page', input: { text: 'hello' } });
  });

  it('input is validated by the schema: 400 with issues', async () => {
    expect(await rpc('reports/_rpc/loader/summary', { input: { days: 0, region: 'asia' } })).toEqual({
      status: 400,
      body: {
        error: 'Invalid input for loader "summary" of custom page "reports"',
        issues: [
          { path: 'days', message: expect.any(String), code: 'too_small' },
          { path: 'region', message: expect.any(String), code: 'invalid_value' },
        ],
      },
    });
    // a missing input is undefined, which the action's object schema refuses
    const missing = await rpc('reports/_rpc/action/addNote', {});
    expect(missing.status).toBe(400);
    expect(missing.body.issues).toEqual([{ path: '', message: expect.any(String), code: 'invalid_type' }]);
  });

  it('the body must be a JSON object with only input: 400 naming the field', async () => {
    expect(await rpc('reports/_rpc/loader/summary', [1])).toEqual({
      status: 400,
      body: {
        error: 'Body must be a JSON object: { "input": … }',
        field: 'body',
        issues: [{ path: '', message: 'must be a JSON object', code: 'invalid_type' }],
      },
    });
    expect(await rpc('reports/_rpc/loader/summary', { input: {}, inputs: {} })).toEqual({
      status: 400,
      body: {
        error: 'inputs: unknown field',
        field: 'inputs',
        issues: [{ path: 'inputs', message: 'unknown field', code: 'unrecognized_keys' }],
      },
    });
    const notJson = await t.api('/api/pages/custom/reports/_rpc/loader/summary', {
      method: 'POST',
      body: '{',
      headers: { 'content-type': 'application/json' },
    });
    expect(await json(notJson)).toEqual({ status: 400, body: { error: 'Request body must be JSON' } });
  });

  it('unknown kind, page or name, another method, and a page not authorized for the shop: the same 404', async () => {
    const notFound = { status: 404, body: { error: 'Not found' } };
    expect(await rpc('reports/_rpc/query/summary', { input: {} })).toEqual(notFound);
    expect(await rpc('reports/_rpc/loaders/summary', { input: {} })).toEqual(notFound);
    expect(await rpc('nope/_rpc/loader/summary', { input: {} })).toEqual(notFound);
    expect(await rpc('reports/_rpc/loader/nope', { input: {} })).toEqual(notFound);
    expect(await rpc('reports/_rpc/loader/addNote', { input: {} })).toEqual(notFound); // an action is not a loader
    expect(await rpc('reports/_rpc/loader/toString', { input: {} })).toEqual(notFound); // no prototype lookups
    expect(await rpc('__proto__/_rpc/loader/summary', { input: {} })).toEqual(notFound);
    expect(await json(await t.api('/api/pages/custom/reports/_rpc/loader/summary'))).toEqual(notFound);
    // not authorized for OTHER_SHOP: indistinguishable from missing, and checked before the body
    expect(await rpc('reports/_rpc/loader/summary', { input: {} }, OTHER_SHOP)).toEqual(notFound);
    expect(await rpc('reports/_rpc/loader/summary', 'not an object', OTHER_SHOP)).toEqual(notFound);
  });

  it('a thrown error is logged with the request id and answered with a generic 500', async () => {
    const res = await t.api('/api/pages/custom/reports/_rpc/action/explode', {
      method: 'POST',
      json: { input: {} },
      headers: { 'x-request-id': 'req-explode-1' },
    });
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: 'Internal server error', requestId: 'req-explode-1' });
    expect(text).not.toContain('hunter2');
    // the failure's line once (beside the request's access line, at error for a 500)
    const logged = logs().filter((l) => l.requestId === 'req-explode-1' && l.level === 50 && l.msg !== 'request');
    expect(logged).toHaveLength(1);
    expect(logs().filter((l) => l.requestId === 'req-explode-1' && l.msg === 'request')).toEqual([
      expect.objectContaining({ level: 50, status: 500 }),
    ]);
    expect(logged[0]).toMatchObject({
      msg: 'custom page action failed',
      customPage: 'reports',
      kind: 'action',
      name: 'explode',
      err: { message: expect.stringContaining('hunter2') },
    });
  });

  it('a result that is not JSON-serialisable is a logged generic 500', async () => {
    const { status, body } = await rpc('reports/_rpc/action/bigint', { input: {} });
    expect(status).toBe(500);
    expect(body).toEqual({ error: 'Internal server error', requestId: expect.any(String) });
    expect(logs().some((l) => l.requestId === body.requestId && l.msg.includes('not JSON-serialisable'))).toBe(true);
  });

  it('the time limit aborts ctx.signal and answers 500 saying so', async () => {
    const { status, body } = await rpc('reports/_rpc/action/slow', { input: {} });
    expect(status).toBe(500);
    expect(body).toEqual({ error: 'Action "slow" of custom page "reports" timed out after 100 ms', requestId: expect.any(String) });
    expect(slowAborted).toBe(true);
  });

  it('needs a session token', async () => {
    expect((await fetch(`${t.url}/api/pages/custom`)).status).toBe(401);
    expect((await fetch(`${t.url}/api/pages/custom/help/_rpc/loader/faq`, { method: 'POST', body: '{"input":null}' })).status).toBe(401);
  });
});

describeEngines('custom pages API, disabled', (get) => {
  let t: TestRuntime;
  beforeAll(async () => {
    t = await startTestRuntime(disabled, get().db, { http: true });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 404 { error: "Not found" } on every path; GET /api/pages still answers', async () => {
    const notFound = { status: 404, body: { error: 'Not found' } };
    expect(await json(await t.api('/api/pages/custom'))).toEqual(notFound);
    expect(await json(await t.api('/api/pages/custom/help/_rpc/loader/faq', { method: 'POST', json: { input: null } }))).toEqual(notFound);
    expect((await t.api('/api/pages')).status).toBe(200);
  });
});

describe('custom pages and the five page keys', () => {
  it('are not gated by them: every page disabled, custom pages still answer', async () => {
    const db = await createTestDatabase('pglite');
    const allDisabled = app.defineConfig({
      flows,
      pages: { flows: 'disabled', providers: 'disabled', crons: 'disabled', functions: 'disabled', mcp: 'disabled' },
      experimental: { customPages: true, pages: { help: everyone } },
    });
    const t = await startTestRuntime(allDisabled, db.db, { http: true });
    try {
      expect((await t.api('/api/flows')).status).toBe(404);
      expect(await json(await t.api('/api/pages/custom'))).toMatchObject({ status: 200, body: { pages: [{ key: 'help' }] } });
      expect(await json(await t.api('/api/pages/custom/help/_rpc/loader/faq', { method: 'POST', json: { input: null } }))).toEqual({
        status: 200,
        body: { result: ['a', 'b'] },
      });
    } finally {
      await t.close();
      await db.drop();
    }
  });
});
