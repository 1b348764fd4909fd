/**
 * Issue 20, point 3: service.flows.run takes `flowName` as an alias; service.runs.get / cancel / retry act on runs of the
 * token's shop with permissions of their own; every built-in tool declares an output schema and annotations, and its
 * results carry structuredContent that the official SDK client checks against that schema.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { BUILTIN_TOOLS } from '../../src/app/validate/mcp.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { OTHER_SHOP, waitForRun } from '../helpers/runtime.ts';
import { rejection } from '../kit/index.ts';
import { type McpTestServer, startMcpServer } from './helpers.ts';

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    noisy: app.defineFlow({
      name: 'noisy',
      input: z.object({ orders: z.number().int().min(1) }),
      concurrency: null, // the tests dispatch it back to back
      run: async (ctx, input) => {
        await ctx.step('fetch', async () => {
          for (let i = 1; i <= input.orders; i++) await ctx.log.info(`order ${1000 + i} fetched`);
        });
        await ctx.log.warn('all fetched');
        return { orders: input.orders };
      },
    }),
    // Waits until canceled (or 20 s): something to cancel.
    waiting: app.defineFlow({
      name: 'waiting',
      input: z.object({}),
      run: (ctx) =>
        new Promise((resolve) => {
          const timer = setTimeout(resolve, 20_000);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve(null);
          });
        }),
    }),
    // Fails its only attempt, then succeeds when retried.
    flaky: app.defineFlow({
      name: 'flaky',
      input: z.object({}),
      retryPolicy: { maxAttempts: 1 },
      run: async (ctx) => {
        const done = await ctx.step('first', () => 'ok');
        if (!failedOnce.has(ctx.runId)) {
          failedOnce.add(ctx.runId);
          throw new Error('the first try fails');
        }
        return { done };
      },
    }),
  },
});
const failedOnce = new Set<string>();

const RUN_PERMISSIONS = ['read_runs', 'cancel_runs', 'retry_runs'];

describeEngines('MCP run tools, output schemas and annotations', (get) => {
  let s: McpTestServer;
  let client: Client;
  let noRuns: Client;

  beforeAll(async () => {
    s = await startMcpServer(instance, get().db, { worker: true });
    const all = await s.createToken({
      name: 'runs',
      permissions: ['read_flows', 'run_flows', 'read_logs', 'read_crons', ...RUN_PERMISSIONS],
    });
    const flowsOnly = await s.createToken({ name: 'flows only', permissions: ['read_flows', 'run_flows'] });
    client = await s.connect(all.secret);
    noRuns = await s.connect(flowsOnly.secret);
    // the SDK client checks structuredContent against a tool's outputSchema once it has listed the tools
    await client.listTools();
  });
  afterAll(() => s?.close());

  const sc = (result: unknown) => (result as { structuredContent: any }).structuredContent;
  const run = async (args: Record<string, unknown>) => sc(await client.callTool({ name: 'service.flows.run', arguments: args }));

  it('service.flows.run accepts flowName as an alias of flow; both must agree; one is required', async () => {
    const byAlias = await run({ flowName: 'noisy', input: { orders: 2 } });
    expect(byAlias).toMatchObject({ status: 'pending', flow: 'noisy' });
    expect((await waitForRun(get().db, byAlias.runId)).status).toBe('completed');
    expect(await run({ flow: 'noisy', flowName: 'noisy', input: { orders: 1 } })).toMatchObject({ flow: 'noisy' });

    const differ = await rejection(
      client.callTool({ name: 'service.flows.run', arguments: { flow: 'noisy', flowName: 'flaky' } }),
      McpError,
    );
    expect(differ.code).toBe(-32602);
    expect(differ.message).toContain('/flowName must equal flow');
    const none = await rejection(client.callTool({ name: 'service.flows.run', arguments: { input: {} } }), McpError);
    expect(none.code).toBe(-32602);
    expect(none.message).toContain('/flow is required');
    expect((none.data as any).issues).toEqual([
      { path: '/flow', message: 'is required', expected: 'string, or flowName as an alias (required)', received: 'nothing' },
    ]);
    const unknown = await rejection(client.callTool({ name: 'service.flows.run', arguments: { flowName: 'nope' } }), McpError);
    expect((unknown.data as any).issues[0]).toMatchObject({ path: '/flowName', received: '"nope"' });
    expect((unknown.data as any).issues[0].expected).toContain('"noisy"');
  });

  it('service.runs.get returns the run, its steps and its newest log lines, for the token shop only', async () => {
    const { runId } = await run({ flow: 'noisy', input: { orders: 3 } });
    await waitForRun(get().db, runId);
    const got = sc(await client.callTool({ name: 'service.runs.get', arguments: { runId } }));
    expect(got.run).toMatchObject({ id: runId, flowName: 'noisy', status: 'completed', trigger: 'mcp', output: { orders: 3 } });
    expect(got.steps.map((step: any) => [step.name, step.status])).toEqual([['fetch', 'completed']]);
    expect(got.logs.map((l: any) => l.message)).toEqual(['all fetched', 'order 1003 fetched', 'order 1002 fetched', 'order 1001 fetched']);
    expect(got.logTotal).toBe(4);
    const two = sc(await client.callTool({ name: 'service.runs.get', arguments: { runId, logLines: 2 } }));
    expect(two.logs.map((l: any) => l.message)).toEqual(['all fetched', 'order 1003 fetched']);

    // a run of another shop is "not found", as is a malformed id
    const other = await s.t.runtime.dispatch({
      appHandle: 'default',
      shop: OTHER_SHOP,
      flowName: 'noisy',
      input: { orders: 1 },
      trigger: 'api',
    });
    const foreign = await rejection(client.callTool({ name: 'service.runs.get', arguments: { runId: other.runId } }), McpError);
    expect(foreign.code).toBe(-32602);
    expect(foreign.message).toContain('not found');
    expect((await rejection(client.callTool({ name: 'service.runs.get', arguments: { runId: 'x' } }), McpError)).message).toContain(
      'is not a run id',
    );
  });

  it('service.runs.cancel cancels an active run; a finished one is -32000 with its status', async () => {
    const { runId } = await run({ flow: 'waiting' });
    await waitForRun(get().db, runId, (r) => r.status === 'running');
    expect(sc(await client.callTool({ name: 'service.runs.cancel', arguments: { runId } }))).toEqual({
      runId,
      status: 'canceled',
      previousStatus: 'running',
    });
    expect((await waitForRun(get().db, runId)).status).toBe('canceled');
    const again = await rejection(client.callTool({ name: 'service.runs.cancel', arguments: { runId } }), McpError);
    expect(again.code).toBe(-32000);
    expect(again.data).toEqual({ status: 'canceled' });
  });

  it('service.runs.retry runs a failed run again (resume keeps completed steps); an active run is -32000', async () => {
    const { runId } = await run({ flow: 'flaky' });
    expect((await waitForRun(get().db, runId)).status).toBe('failed');
    const retried = sc(await client.callTool({ name: 'service.runs.retry', arguments: { runId } }));
    expect(retried).toMatchObject({ runId, status: 'pending', mode: 'resume', previousStatus: 'failed', deletedSteps: 0 });
    expect((await waitForRun(get().db, runId)).status).toBe('completed');

    const { runId: active } = await run({ flow: 'waiting' });
    const busy = await rejection(client.callTool({ name: 'service.runs.retry', arguments: { runId: active, mode: 'reset' } }), McpError);
    expect(busy.code).toBe(-32000);
    await client.callTool({ name: 'service.runs.cancel', arguments: { runId: active } });
    const bad = await rejection(client.callTool({ name: 'service.runs.retry', arguments: { runId: active, mode: 'again' } }), McpError);
    expect((bad.data as any).issues).toEqual([
      { path: '/mode', message: 'must be one of "resume", "reset"', expected: 'one of "resume", "reset"', received: '"again"' },
    ]);
  });

  it('the run tools need their own permissions: not listed without them, and -32003 when called', async () => {
    const names = (await noRuns.listTools()).tools.map((t) => t.name);
    for (const name of ['service.runs.get', 'service.runs.cancel', 'service.runs.retry']) expect(names).not.toContain(name);
    const runId = (await run({ flow: 'noisy', input: { orders: 1 } })).runId;
    for (const [name, permission] of [
      ['service.runs.get', 'read_runs'],
      ['service.runs.cancel', 'cancel_runs'],
      ['service.runs.retry', 'retry_runs'],
    ] as const) {
      const denied = await rejection(noRuns.callTool({ name, arguments: { runId } }), McpError);
      expect(denied.code).toBe(-32003);
      expect(denied.data).toMatchObject({ missingPermissions: [permission] });
    }
    const caps = (await s.api('/api/mcp/capabilities')).body;
    const perms = Object.fromEntries(caps.permissions.map((p: any) => [p.key, p]));
    for (const key of RUN_PERMISSIONS) expect(perms[key]).toMatchObject({ group: 'runs', core: true });
  });

  it('every built-in tool declares an output schema and annotations; results carry structuredContent', async () => {
    const everything = await s.createToken({
      name: 'all',
      permissions: ['read_logs', 'read_flows', 'run_flows', 'read_crons', 'manage_crons', 'platform_admin_graphql', ...RUN_PERMISSIONS],
    });
    const all = await s.connect(everything.secret);
    const tools = (await all.listTools()).tools.filter((t) => t.name.startsWith('service.'));
    expect(tools.map((t) => t.name).sort()).toEqual([...BUILTIN_TOOLS].sort());
    for (const tool of tools) {
      expect(tool.outputSchema, tool.name).toMatchObject({ type: 'object' });
      expect(Object.keys(tool.outputSchema!.properties ?? {}).length, tool.name).toBeGreaterThan(0);
      expect(typeof tool.annotations?.readOnlyHint, tool.name).toBe('boolean');
      expect(typeof tool.annotations?.openWorldHint, tool.name).toBe('boolean');
      if (tool.annotations!.readOnlyHint === false) {
        expect(typeof tool.annotations!.destructiveHint, tool.name).toBe('boolean');
        expect(typeof tool.annotations!.idempotentHint, tool.name).toBe('boolean');
      }
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName['service.runs.get']!.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
    expect(byName['service.runs.cancel']!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
    expect(byName['service.crons.set_enabled']!.annotations).toMatchObject({ destructiveHint: false, idempotentHint: true });

    // Results of several tools, checked by the SDK against the listed schemas (it throws on a mismatch).
    for (const name of ['service.shops.list', 'service.flows.list', 'service.crons.list']) {
      const result = await all.callTool({ name, arguments: {} });
      expect(result.structuredContent, name).toBeTypeOf('object');
      expect(JSON.parse((result.content as any)[0].text)).toEqual(result.structuredContent);
    }
  });
});
