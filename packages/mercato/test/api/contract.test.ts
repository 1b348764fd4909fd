/**
 * The answers of the admin API over real HTTP have the keys of their type in src/api/types.ts (`mercato/api`): every
 * required key is present and no other key is sent. The key lists below are typed against the API types (`KeySpec`),
 * so they cannot drift from them. This covers what types.test-d.ts cannot: the answers routers build inline (watch,
 * home, pages, errors) and the rows whose type is only a claim about an SQL projection. Functions need the platform and
 * are checked by type only.
 */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import type * as Api from '../../src/api/types.ts';
import { defineApp } from '../../src/app/app.ts';
import { defineProvider } from '../../src/app/define.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { FAST_WORKER, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { json } from '../kit/index.ts';

/** Every key of T, marked as the type marks it: a list that must name each key, and nothing else. */
type KeySpec<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? 'optional' : 'required' };

function spec<T>(keys: KeySpec<T>): KeySpec<T> {
  return keys;
}

/** `value` is an object with every required key of the spec and no key the spec does not name. */
function expectShape<T>(value: unknown, keys: KeySpec<T>, what: string): void {
  expect(value, what).toBeTypeOf('object');
  expect(value, what).not.toBeNull();
  const sent = Object.keys(value as object);
  const all = Object.keys(keys);
  const required = all.filter((k) => (keys as Record<string, string>)[k] === 'required');
  expect({ what, missing: required.filter((k) => !sent.includes(k)), unexpected: sent.filter((k) => !all.includes(k)) }).toEqual({
    what,
    missing: [],
    unexpected: [],
  });
}

const RUN_ROW = spec<Api.RunRow>({
  id: 'required',
  flowName: 'required',
  status: 'required',
  attempt: 'required',
  trigger: 'required',
  appHandle: 'required',
  shop: 'required',
  parentRunId: 'required',
  createdAt: 'required',
  startedAt: 'required',
  finishedAt: 'required',
  updatedAt: 'required',
  availableAt: 'required',
  nextAttemptAt: 'required',
  waiting: 'required',
  errorSummary: 'required',
});
const RUN_DETAIL = spec<Api.RunDetail>({
  id: 'required',
  flowName: 'required',
  status: 'required',
  attempt: 'required',
  trigger: 'required',
  appHandle: 'required',
  shop: 'required',
  parentRunId: 'required',
  createdAt: 'required',
  startedAt: 'required',
  finishedAt: 'required',
  updatedAt: 'required',
  availableAt: 'required',
  nextAttemptAt: 'required',
  waiting: 'required',
  input: 'required',
  output: 'required',
  error: 'required',
  lostLeases: 'required',
  retryPolicy: 'required',
  steps: 'required',
});
const STEP_ROW = spec<Api.StepRow>({
  name: 'required',
  status: 'required',
  attempt: 'required',
  result: 'required',
  error: 'required',
  startedAt: 'required',
  finishedAt: 'required',
  durationMs: 'required',
  kind: 'required',
  wakeAt: 'required',
});
const RETRY_POLICY = spec<Api.RetryPolicy>({
  maxAttempts: 'required',
  initialIntervalMs: 'required',
  backoffCoefficient: 'required',
  maxIntervalMs: 'required',
});
const FLOW_INFO = spec<Api.FlowInfo>({
  name: 'required',
  description: 'required',
  inputSchema: 'required',
  crons: 'required',
  concurrency: 'required',
  shaping: 'required',
  timeout: 'required',
  retryPolicy: 'required',
});
const FLOW_CRON = spec<Api.FlowCron>({
  key: 'required',
  name: 'required',
  schedule: 'required',
  shops: 'required',
  timezone: 'required',
  input: 'required',
});
const LOG_ROW = spec<Api.LogRow>({
  id: 'required',
  level: 'required',
  message: 'required',
  data: 'required',
  step: 'required',
  attempt: 'required',
  createdAt: 'required',
  context: 'required',
  contextOf: 'optional',
});
const CRON = spec<Api.Cron>({
  key: 'required',
  name: 'required',
  flow: 'required',
  schedule: 'required',
  description: 'required',
  timezone: 'required',
  nextRunAt: 'required',
  shops: 'required',
  input: 'required',
  enabled: 'required',
  targeted: 'required',
  lastTick: 'required',
});
const PROVIDER = spec<Api.Provider>({
  name: 'required',
  description: 'required',
  fields: 'required',
  config: 'required',
  hasChecker: 'required',
  methods: 'required',
  lastCheckedAt: 'required',
  lastCheckOk: 'required',
  configured: 'required',
  status: 'required',
  configError: 'required',
});
const PROVIDER_FIELD = spec<Api.ProviderField>({
  name: 'required',
  type: 'required',
  label: 'required',
  required: 'required',
  description: 'optional',
  placeholder: 'optional',
  options: 'optional',
  hasValue: 'optional',
});
const MCP_TOKEN = spec<Api.McpToken>({
  id: 'required',
  name: 'required',
  permissions: 'required',
  status: 'required',
  expiresAt: 'required',
  expired: 'required',
  fingerprint: 'required',
  lastUsedAt: 'required',
  createdAt: 'required',
  updatedAt: 'required',
  revokedAt: 'required',
});
const MCP_CAPABILITIES = spec<Api.McpCapabilities>({
  enabled: 'required',
  crossShopAccess: 'required',
  permissions: 'required',
  tools: 'required',
  resources: 'required',
  riskLevels: 'required',
  expiryOptions: 'required',
  defaultExpiresInDays: 'required',
});
const ERROR_BODY = spec<Pick<Api.ApiErrorBody, 'error' | 'field' | 'issues'>>({ error: 'required', field: 'optional', issues: 'optional' });
/** A 409 of a run in the wrong state: the message and the run's status. */
const CONFLICT_BODY = spec<Required<Pick<Api.ApiErrorBody, 'error' | 'status'>>>({ error: 'required', status: 'required' });

const crm = defineProvider({
  name: 'crm',
  description: 'A CRM',
  ui: {
    fields: {
      baseUrl: { type: 'text', label: 'Base URL', placeholder: 'https://crm.example' },
      apiKey: { type: 'password', label: 'API key' },
    },
  },
  checker: async () => true,
  methods: { ping: async () => 'pong' },
});

const app = defineApp({ providers: { crm } });
const instance = app.defineConfig({
  flows: {
    greet: app.defineFlow({
      name: 'greet',
      description: 'Says hello',
      input: z.object({ name: z.string() }),
      concurrency: null,
      run: async (ctx, input) => {
        const text = await ctx.step('compose', () => `hello ${input.name}`);
        ctx.log.info('composed', { text });
        return text;
      },
    }),
    nap: app.defineFlow({
      name: 'nap',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) => {
        await ctx.sleep('nap', '1h');
      },
    }),
    boom: app.defineFlow({
      name: 'boom',
      input: z.object({}),
      concurrency: null,
      retryPolicy: { maxAttempts: 1 },
      run: async () => {
        throw new Error('kaput');
      },
    }),
  },
  crons: [{ schedule: '0 3 * * *', flow: 'boom', input: {}, shops: 'all' }],
  worker: FAST_WORKER,
});

describeEngines('the /api answers have the keys of mercato/api', (get) => {
  let t: TestRuntime;
  const call = async (path: string, init?: Parameters<TestRuntime['api']>[1]) => json(await t.api(path, init));

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true, http: true });
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(async () => {
    await get().reset();
  });

  it('flows, runs, steps, watch, home and logs', async () => {
    const flows = await call('/api/flows');
    expect(flows.status).toBe(200);
    expectShape<Api.FlowListResponse>(flows.body, { flows: 'required' }, 'GET /api/flows');
    for (const flow of flows.body.flows) {
      expectShape(flow, FLOW_INFO, 'FlowInfo');
      expectShape(flow.retryPolicy, RETRY_POLICY, 'FlowInfo.retryPolicy');
      for (const cron of flow.crons) expectShape(cron, FLOW_CRON, 'FlowCron');
    }

    const dispatched = await call('/api/flows/greet/run', {
      method: 'POST',
      json: { input: { name: 'Ada' } } satisfies Api.RunFlowRequest,
    });
    expect(dispatched.status).toBe(202);
    expectShape<Api.DispatchResponse>(
      dispatched.body,
      { runId: 'required', status: 'required', joined: 'optional' },
      'POST /api/flows/:name/run',
    );
    const id = dispatched.body.runId as string;
    await waitForRun(get().db, id);
    const failed = (await call('/api/flows/boom/run', { method: 'POST', json: { input: {} } })).body.runId as string;
    await waitForRun(get().db, failed);

    const list = await call('/api/runs');
    expectShape<Api.RunListResponse>(
      list.body,
      { runs: 'required', total: 'required', limit: 'required', offset: 'required' },
      'GET /api/runs',
    );
    expect(list.body.runs).toHaveLength(2);
    for (const run of list.body.runs) expectShape(run, RUN_ROW, 'RunRow');
    expectShape<Api.RunListResponse>(
      (await call('/api/flows/greet/runs')).body,
      { runs: 'required', total: 'required', limit: 'required', offset: 'required' },
      'GET /api/flows/:name/runs',
    );

    const detail = await call(`/api/runs/${id}`);
    expectShape(detail.body, RUN_DETAIL, 'GET /api/runs/:id');
    expectShape(detail.body.retryPolicy, RETRY_POLICY, 'RunDetail.retryPolicy');
    expect(detail.body.steps).toHaveLength(1);
    expectShape(detail.body.steps[0], STEP_ROW, 'StepRow');
    const failedDetail = await call(`/api/runs/${failed}`);
    expectShape<Api.RunError>(failedDetail.body.error, { name: 'required', message: 'required', stack: 'optional' }, 'RunDetail.error');

    const changed = await call(`/api/runs/${id}/watch?timeout=0`);
    expectShape<Extract<Api.WatchResponse, { changed: true }>>(
      changed.body,
      { changed: 'required', version: 'required', run: 'required', lastLogId: 'required' },
      'watch, changed',
    );
    expectShape(changed.body.run, RUN_DETAIL, 'watch run');
    const unchanged = await call(`/api/runs/${id}/watch?timeout=0&since=${encodeURIComponent(changed.body.version)}`);
    expect(unchanged.body.changed).toBe(false);
    expectShape<Extract<Api.WatchResponse, { changed: false }>>(
      unchanged.body,
      { changed: 'required', version: 'required' },
      'watch, unchanged',
    );

    const runsWatch = await call('/api/runs/watch?timeout=0');
    expectShape<Api.RunsWatchResponse>(runsWatch.body, { changed: 'required', version: 'required' }, 'GET /api/runs/watch');
    const runsUnchanged = await call(`/api/runs/watch?timeout=0&since=${encodeURIComponent(runsWatch.body.version)}`);
    expect(runsUnchanged.body).toEqual({ changed: false, version: runsWatch.body.version });

    const home = await call('/api/home');
    expectShape<Api.HomeSummary>(
      home.body,
      { since: 'required', counts: 'required', total: 'required', retrying: 'required', recentFailures: 'required' },
      'GET /api/home',
    );
    expectShape<Api.HomeSummary['counts']>(
      home.body.counts,
      { pending: 'required', running: 'required', sleeping: 'required', completed: 'required', failed: 'required', canceled: 'required' },
      'HomeSummary.counts',
    );
    expect(home.body.recentFailures).toHaveLength(1);
    expectShape<Api.RecentFailure>(
      home.body.recentFailures[0],
      { id: 'required', flowName: 'required', createdAt: 'required', finishedAt: 'required', errorSummary: 'required' },
      'RecentFailure',
    );

    const runStats = await call('/api/stats/runs?range=7d');
    expectShape<Api.RunStatsResponse>(
      runStats.body,
      {
        range: 'required',
        bucketMinutes: 'required',
        since: 'required',
        until: 'required',
        buckets: 'required',
        counts: 'required',
        total: 'required',
        failureRate: 'required',
      },
      'GET /api/stats/runs',
    );
    expectShape<Api.RunStatsBucket>(
      runStats.body.buckets[0],
      { start: 'required', counts: 'required', total: 'required' },
      'RunStatsBucket',
    );
    const flowStats = await call('/api/stats/flows');
    expectShape<Api.FlowStatsResponse>(
      flowStats.body,
      { since: 'required', until: 'required', bucketMinutes: 'required', flows: 'required' },
      'GET /api/stats/flows',
    );
    expect(flowStats.body.flows.length).toBeGreaterThan(0);
    for (const row of flowStats.body.flows) {
      expectShape<Api.FlowStatsRow>(
        row,
        {
          flowName: 'required',
          runs: 'required',
          completed: 'required',
          failed: 'required',
          successRate: 'required',
          p50Ms: 'required',
          p95Ms: 'required',
          hourly: 'required',
        },
        'FlowStatsRow',
      );
    }

    const logs = await call(`/api/runs/${id}/logs`);
    expectShape<Api.LogSearchResponse>(
      logs.body,
      { logs: 'required', total: 'required', totalExact: 'required', limit: 'required', offset: 'required', nextBefore: 'required' },
      'GET /api/runs/:id/logs',
    );
    expect(logs.body.logs.length).toBeGreaterThan(0);
    for (const line of logs.body.logs) expectShape(line, LOG_ROW, 'LogRow');

    const retried = await call(`/api/runs/${failed}/retry?mode=reset`, { method: 'POST' });
    expect(retried.status).toBe(202);
    expectShape<Api.RetryRunResponse>(
      retried.body,
      { runId: 'required', status: 'required', mode: 'required', previousStatus: 'required', deletedSteps: 'required' },
      'retry',
    );
    await waitForRun(get().db, failed);
    const napping = (await call('/api/flows/nap/run', { method: 'POST', json: { input: {} } })).body.runId as string;
    await waitForRun(get().db, napping, (r) => r.status === 'sleeping');
    // a sleep is told apart from a step, with its wake time (the run page's waterfall draws it), as the run's waiting says
    const napDetail = (await call(`/api/runs/${napping}`)).body as Api.RunDetail;
    expectShape(napDetail.steps[0], STEP_ROW, 'StepRow of a sleep');
    expect(napDetail.steps[0]).toMatchObject({ name: 'nap', kind: 'sleep', status: 'sleeping' });
    expect(new Date(napDetail.steps[0]!.wakeAt!).getTime()).toBe(new Date(napDetail.waiting!.until!).getTime());
    expect(detail.body.steps[0]).toMatchObject({ kind: 'step', wakeAt: null });
    const canceled = await call(`/api/runs/${napping}/cancel`, { method: 'POST' });
    expect(canceled.status).toBe(200);
    expectShape<Api.CancelRunResponse>(canceled.body, { runId: 'required', status: 'required', previousStatus: 'required' }, 'cancel');
    const conflict = await call(`/api/runs/${id}/cancel`, { method: 'POST' });
    expect(conflict.status).toBe(409);
    expectShape(conflict.body, CONFLICT_BODY, '409 cancel of a finished run');
    const deleted = await call(`/api/runs/${failed}`, { method: 'DELETE' });
    expectShape<Api.DeleteRunResponse>(deleted.body, { ok: 'required', runId: 'required' }, 'DELETE /api/runs/:id');
    const bulk = await call('/api/runs/bulk-delete', { method: 'POST', json: { ids: [id] } satisfies Api.BulkDeleteRequest });
    expectShape<Api.BulkDeleteResponse>(bulk.body, { deleted: 'required', skipped: 'required' }, 'bulk delete');
  });

  it('crons, providers, MCP tokens, pages and errors', async () => {
    const crons = await call('/api/crons');
    expectShape<Api.CronListResponse>(crons.body, { crons: 'required' }, 'GET /api/crons');
    expect(crons.body.crons).toHaveLength(1);
    expectShape(crons.body.crons[0], CRON, 'Cron');
    const toggled = await call('/api/crons/toggle', {
      method: 'POST',
      json: { key: crons.body.crons[0].key, enabled: false } satisfies Api.CronToggleRequest,
    });
    expectShape<Api.CronToggleResponse>(toggled.body, { ok: 'required', key: 'required', enabled: 'required' }, 'POST /api/crons/toggle');

    const providers = await call('/api/providers');
    expectShape<Api.ProviderListResponse>(providers.body, { providers: 'required' }, 'GET /api/providers');
    expectShape(providers.body.providers[0], PROVIDER, 'Provider');
    for (const field of providers.body.providers[0].fields) expectShape(field, PROVIDER_FIELD, 'ProviderField');
    const saved = await call('/api/providers/crm', {
      method: 'PUT',
      json: { config: { baseUrl: 'https://crm.example', apiKey: 'k' } } satisfies Api.SaveProviderRequest,
    });
    expectShape<Api.SaveProviderResponse>(saved.body, { ok: 'required', provider: 'required' }, 'PUT /api/providers/:name');
    expectShape(saved.body.provider, PROVIDER, 'SaveProviderResponse.provider');
    const checked = await call('/api/providers/crm/check', { method: 'POST' });
    expectShape<Api.ProviderCheckResponse>(checked.body, { ok: 'required', lastCheckedAt: 'required' }, 'POST /api/providers/:name/check');

    const caps = await call('/api/mcp/capabilities');
    expectShape(caps.body, MCP_CAPABILITIES, 'GET /api/mcp/capabilities');
    expectShape<Api.McpPermission>(
      caps.body.permissions[0],
      {
        key: 'required',
        label: 'required',
        group: 'required',
        riskLevel: 'required',
        description: 'required',
        core: 'required',
        reserved: 'required',
      },
      'McpPermission',
    );
    expectShape<Api.McpTool>(
      caps.body.tools[0],
      {
        name: 'required',
        title: 'required',
        description: 'required',
        requiredPermissions: 'required',
        riskLevel: 'required',
        builtIn: 'required',
      },
      'McpTool',
    );
    expectShape<Api.McpResource>(
      caps.body.resources[0],
      {
        uri: 'required',
        name: 'required',
        description: 'required',
        mimeType: 'required',
        requiredPermissions: 'required',
        builtIn: 'required',
      },
      'McpResource',
    );
    expectShape<Api.ExpiryOption>(
      caps.body.expiryOptions[0],
      { label: 'required', expiresInDays: 'required', default: 'required' },
      'ExpiryOption',
    );
    const created = await call('/api/mcp/tokens', { method: 'POST', json: { name: 'contract' } satisfies Api.CreateMcpTokenRequest });
    expect(created.status).toBe(201);
    expectShape<Api.McpTokenSecretResponse>(created.body, { token: 'required', secret: 'required' }, 'POST /api/mcp/tokens');
    expectShape(created.body.token, MCP_TOKEN, 'McpToken');
    const tokenId = created.body.token.id as string;
    const tokens = await call('/api/mcp/tokens');
    expectShape<Api.McpTokenListResponse>(tokens.body, { tokens: 'required' }, 'GET /api/mcp/tokens');
    expectShape(tokens.body.tokens[0], MCP_TOKEN, 'McpToken in a list');
    const detail = await call(`/api/mcp/tokens/${tokenId}`);
    expectShape(detail.body, { ...MCP_TOKEN, audits: 'required' } satisfies KeySpec<Api.McpTokenDetail>, 'GET /api/mcp/tokens/:id');
    const perms = await call(`/api/mcp/tokens/${tokenId}/permissions`, {
      method: 'PUT',
      json: { permissions: [] } satisfies Api.SetMcpPermissionsRequest,
    });
    expectShape<Api.SetMcpPermissionsResponse>(
      perms.body,
      { ok: 'required', permissions: 'required' },
      'PUT /api/mcp/tokens/:id/permissions',
    );
    const patched = await call(`/api/mcp/tokens/${tokenId}`, {
      method: 'PATCH',
      json: { status: 'disabled' } satisfies Api.PatchMcpTokenRequest,
    });
    expectShape<Api.OkResponse>(patched.body, { ok: 'required' }, 'PATCH /api/mcp/tokens/:id');
    const rotated = await call(`/api/mcp/tokens/${tokenId}/rotate`, { method: 'POST' });
    expectShape<Api.McpTokenSecretResponse>(rotated.body, { token: 'required', secret: 'required' }, 'POST /api/mcp/tokens/:id/rotate');
    const revoked = await call(`/api/mcp/tokens/${tokenId}/revoke`, { method: 'POST' });
    expectShape<Api.OkResponse>(revoked.body, { ok: 'required' }, 'POST /api/mcp/tokens/:id/revoke');

    const pages = await call('/api/pages');
    expectShape<Api.PagesResponse>(pages.body, { pages: 'required' }, 'GET /api/pages');
    expectShape<Api.PagesResponse['pages']>(
      pages.body.pages,
      { flows: 'required', providers: 'required', crons: 'required', functions: 'required', mcp: 'required' },
      'PagesResponse.pages',
    );

    const bad = await call('/api/runs?limit=0');
    expect(bad.status).toBe(400);
    expectShape(bad.body, ERROR_BODY, '400');
    const invalid = await call('/api/flows/greet/run', { method: 'POST', json: { input: { name: 1 } } });
    expect(invalid.status).toBe(400);
    expectShape(invalid.body, ERROR_BODY, '400 with issues');
    for (const issue of invalid.body.issues)
      expectShape<Api.InputIssue>(issue, { path: 'required', message: 'required', code: 'required' }, 'InputIssue');
    expectShape(await t.api('/api/nothing').then((r) => r.json()), ERROR_BODY, '404');
  });
});
