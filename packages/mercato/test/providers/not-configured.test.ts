/**
 * A provider that is not configured for the run's shop fails the run at once (one attempt, whatever the retry policy),
 * with a ProviderNotConfiguredError that names the provider, the shop and the app and says how to configure it; inside
 * a step and outside alike. Real worker, real database, real HTTP.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineProvider } from '../../src/app/define.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { ProviderNotConfiguredError } from '../../src/index.ts';
import { ownerOf } from '../../src/providers/service.ts';
import { upsertProviderConfig } from '../../src/providers/store.ts';
import { FAST_WORKER, OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';

const KEY = 'fedcba9876543210'.repeat(4);
let methodCalls = 0;
const onErrorCalls: Array<{ name: string; attempt: number; final: boolean }> = [];

const crm = defineProvider({
  name: 'crm',
  ui: { fields: { baseUrl: { type: 'text', label: 'Base URL' }, apiKey: { type: 'password', label: 'API key' } } },
  methods: {
    find(config: { baseUrl: string }, email: string) {
      methodCalls++;
      return { email, via: config.baseUrl };
    },
  },
});

const app = defineApp({ providers: { crm } });
const retries = { maxAttempts: 5, initialIntervalMs: 10 };
const instance = app.defineConfig({
  flows: {
    inStep: app.defineFlow({
      name: 'inStep',
      input: z.object({ email: z.string() }),
      concurrency: null,
      retryPolicy: retries,
      run: (ctx, input) => ctx.step('lookup', () => ctx.providers.crm.find(input.email)),
    }),
    outside: app.defineFlow({
      name: 'outside',
      input: z.object({ email: z.string() }),
      concurrency: null,
      retryPolicy: retries,
      run: (ctx, input) => ctx.providers.crm.find(input.email),
    }),
    optional: app.defineFlow({
      name: 'optional',
      input: z.object({}),
      concurrency: null,
      retryPolicy: retries,
      async run(ctx) {
        try {
          return await ctx.providers.crm.find('a@b.c');
        } catch (error) {
          if (error instanceof ProviderNotConfiguredError) return { skipped: error.provider, shop: error.shop, reason: error.reason };
          throw error;
        }
      },
    }),
  },
  worker: FAST_WORKER,
  retryPolicy: { maxAttempts: 4 },
  onError: (error, context) => {
    onErrorCalls.push({ name: (error as Error).name, attempt: context!.attempt, final: context!.final });
  },
});

const notConfigured = (shop: string) =>
  `Provider "crm" is not configured for shop ${shop} (app default): save its settings in the admin (Providers page) or with PUT /api/providers/crm`;

describeEngines('a provider that is not configured', (get) => {
  let t: TestRuntime;
  const dispatch = (flowName: string, input: unknown, shop: string | null = SHOP) =>
    t.runtime.dispatch({ appHandle: 'default', shop, flowName, input, trigger: 'api' }).then((r) => r.runId);
  const logs = (runId: string) =>
    get().db.query<{ level: string; message: string; step: string | null; data: any }>(
      sql`select level, message, step, data from logs where run_id = ${runId}::uuid order by id`,
    );
  const steps = (runId: string) =>
    get().db.query<{ name: string; status: string; error: any }>(sql`select name, status, error from steps where run_id = ${runId}::uuid`);
  /** Waits long enough for a retry (10 ms backoff) to have happened, if one were scheduled. */
  const settle = () => new Promise((r) => setTimeout(r, 300));

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true, http: true, env: { ENCRYPTION_KEY: KEY } });
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    methodCalls = 0;
    onErrorCalls.length = 0;
    await get().reset();
  });

  it.each(['inStep', 'outside'])('%s: fails after one attempt although 5 are allowed, naming provider, shop and app', async (flowName) => {
    const runId = await dispatch(flowName, { email: 'a@b.c' });
    const run = await waitForRun(get().db, runId);
    await settle();
    const [after] = await get().db.query<{ status: string; attempt: number }>(
      sql`select status, attempt from runs where id = ${runId}::uuid`,
    );
    expect(after).toEqual({ status: 'failed', attempt: 1 });
    expect(run.attempt).toBe(1);
    expect(run.error).toMatchObject({ name: 'ProviderNotConfiguredError', message: notConfigured(SHOP) });
    expect(methodCalls).toBe(0);
    expect(onErrorCalls).toEqual([{ name: 'ProviderNotConfiguredError', attempt: 1, final: true }]);
    expect(await logs(runId)).toEqual([
      {
        level: 'error',
        message: `Attempt 1 failed: ${notConfigured(SHOP)}`,
        step: null,
        data: { error: { name: 'ProviderNotConfiguredError', message: notConfigured(SHOP) }, final: true },
      },
    ]);
    expect(await steps(runId)).toEqual(
      flowName === 'inStep'
        ? [
            {
              name: 'lookup',
              status: 'failed',
              error: expect.objectContaining({ name: 'ProviderNotConfiguredError', message: notConfigured(SHOP) }),
            },
          ]
        : [],
    );
    // the run detail shows it too
    const detail = (await (await t.api(`/api/runs/${runId}`)).json()) as { status: string; attempt: number; error: { message: string } };
    expect([detail.status, detail.attempt, detail.error.message]).toEqual(['failed', 1, notConfigured(SHOP)]);
  });

  it('following the message works: PUT /api/providers/crm, then a retry of the failed run completes', async () => {
    const runId = await dispatch('inStep', { email: 'a@b.c' });
    expect((await waitForRun(get().db, runId)).status).toBe('failed');
    const saved = await t.api('/api/providers/crm', {
      method: 'PUT',
      json: { config: { baseUrl: 'https://crm.example', apiKey: 'sk_test_123456' } },
    });
    expect(saved.status).toBe(200);
    expect((await t.api(`/api/runs/${runId}/retry`, { method: 'POST' })).status).toBe(202);
    const run = await waitForRun(get().db, runId, (r) => r.status === 'completed' || (r.status === 'failed' && r.attempt > 0));
    expect([run.status, run.output]).toEqual(['completed', { email: 'a@b.c', via: 'https://crm.example' }]);
    // another shop is still not configured: its own message
    const other = await waitForRun(get().db, await dispatch('outside', { email: 'x@y.z' }, OTHER_SHOP));
    expect([other.status, other.attempt, other.error.message]).toEqual(['failed', 1, notConfigured(OTHER_SHOP)]);
  });

  it('a saved config that lacks a required value names the missing fields', async () => {
    // saved before the definition gained its required apiKey field
    await upsertProviderConfig(
      get().db,
      'default',
      SHOP,
      'crm',
      t.runtime.secrets.encrypt({ baseUrl: 'https://crm.example' }, ownerOf('default', SHOP, 'crm')),
    );
    const run = await waitForRun(get().db, await dispatch('outside', { email: 'a@b.c' }));
    expect([run.status, run.attempt]).toEqual(['failed', 1]);
    expect(run.error.message).toBe(
      `Provider "crm" is not configured for shop ${SHOP} (app default) (required field without a saved value: apiKey): save its settings in the admin (Providers page) or with PUT /api/providers/crm`,
    );
    expect(methodCalls).toBe(0);
  });

  it('a saved config that cannot be decrypted and a global run fail at once too', async () => {
    await upsertProviderConfig(
      get().db,
      'default',
      SHOP,
      'crm',
      t.runtime.secrets.encrypt({ baseUrl: 'u', apiKey: 'k' }, ownerOf('default', OTHER_SHOP, 'crm')),
    );
    const run = await waitForRun(get().db, await dispatch('inStep', { email: 'a@b.c' }));
    expect([run.status, run.attempt, run.error.name]).toEqual(['failed', 1, 'ProviderNotConfiguredError']);
    expect(run.error.message).toBe(
      `Provider "crm" is not usable for shop ${SHOP} (app default): its saved config cannot be decrypted (was ENCRYPTION_KEY changed without keeping the old key in ENCRYPTION_KEY_PREVIOUS?); save its settings again in the admin (Providers page) or with PUT /api/providers/crm`,
    );
    const global = await waitForRun(get().db, await dispatch('outside', { email: 'a@b.c' }, null));
    expect([global.status, global.attempt, global.error.name]).toEqual(['failed', 1, 'ProviderNotConfiguredError']);
    expect(global.error.message).toMatch(/^Provider "crm" cannot be used without a shop \(app default, global run\)/);
    expect(methodCalls).toBe(0);
  });

  it('a flow may catch it (exported class, with provider, shop and reason) and go on', async () => {
    const run = await waitForRun(get().db, await dispatch('optional', {}));
    expect([run.status, run.attempt, run.output]).toEqual(['completed', 1, { skipped: 'crm', shop: SHOP, reason: 'not-configured' }]);
  });
});
