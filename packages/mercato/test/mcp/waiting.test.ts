/**
 * Runs say why they wait, over MCP with the official SDK client (which checks every result against the tool's
 * outputSchema once it has listed the tools): service.runs.get and service://runs/recent carry `waiting`;
 * service.flows.run answers `joined: true` when a debounced dispatch joins the waiting run, and takes `priority`
 * (-100..100), a wrong one being an invalid-arguments error (-32602) like every argument problem.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { InvalidDispatchError } from '../../src/flows/errors.ts';
import { SHOP, waitForRun } from '../helpers/runtime.ts';
import { rejection } from '../kit/index.ts';
import { type McpTestServer, startMcpServer } from './helpers.ts';

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    // one start per hour for the shop: a second run waits, rate-limited, for an hour
    throttled: app.defineFlow({
      name: 'throttled',
      input: z.object({}),
      concurrency: null,
      rateLimit: { limit: 1, period: '1h' },
      run: () => 'ok',
    }),
    // starts an hour after the last dispatch of its key
    debounced: app.defineFlow({
      name: 'debounced',
      input: z.object({ productId: z.number() }),
      concurrency: null,
      debounce: { period: '1h', key: (input) => String(input.productId) },
      run: () => 'ok',
    }),
    quick: app.defineFlow({ name: 'quick', input: z.object({}), concurrency: null, run: () => 'ok' }),
  },
});

describeEngines('MCP: runs say why they wait', (get) => {
  let s: McpTestServer;
  let client: Client;

  beforeAll(async () => {
    s = await startMcpServer(instance, get().db, { worker: true });
    const token = await s.createToken({ name: 'waiting', permissions: ['read_flows', 'run_flows', 'read_runs'] });
    client = await s.connect(token.secret);
    // listed once, the SDK client checks structuredContent against each tool's outputSchema
    await client.listTools();
  });
  afterAll(() => s?.close());

  const sc = (result: unknown) => (result as { structuredContent: any }).structuredContent;
  const flowsRun = async (args: Record<string, unknown>) => sc(await client.callTool({ name: 'service.flows.run', arguments: args }));
  const getRun = async (runId: string) => sc(await client.callTool({ name: 'service.runs.get', arguments: { runId, logLines: 0 } }));

  it('service.runs.get returns why a rate-limited run waits; service://runs/recent too; a finished run has waiting null', async () => {
    const first = await flowsRun({ flow: 'throttled' });
    expect((await waitForRun(get().db, first.runId)).status).toBe('completed');
    const second = await flowsRun({ flow: 'throttled' });
    let got: any;
    await expect
      .poll(
        async () => {
          got = await getRun(second.runId);
          return got.run.waiting?.reason;
        },
        { timeout: 10_000, interval: 50 },
      )
      .toBe('rate_limited');
    const waiting = got.run.waiting;
    expect(waiting).toMatchObject({ reason: 'rate_limited', heldBy: null, ahead: null, until: expect.any(String) });
    expect(new Date(waiting.until).getTime() - Date.now()).toBeGreaterThan(55 * 60_000);
    expect(waiting.key).toBe(SHOP); // the default key is the shop
    expect(waiting.message).toMatch(/^rate-limited until \S+ \(key ".+"\)$/);
    // the text content says the same as the structured one
    const result = await client.callTool({ name: 'service.runs.get', arguments: { runId: second.runId, logLines: 0 } });
    expect(JSON.parse((result.content as any)[0].text).run.waiting.reason).toBe('rate_limited');

    expect((await getRun(first.runId)).run.waiting).toBeNull();

    const recent = JSON.parse(((await client.readResource({ uri: 'service://runs/recent' })).contents[0] as { text: string }).text);
    const row = recent.runs.find((r: any) => r.id === second.runId);
    expect(row.waiting).toMatchObject({ reason: 'rate_limited', key: SHOP, message: expect.stringContaining('rate-limited until') });
    expect(recent.runs.find((r: any) => r.id === first.runId).waiting).toBeNull();
  });

  it('service.flows.run answers joined: true when a debounced dispatch joins the waiting run, which says it is debounced', async () => {
    const first = await flowsRun({ flow: 'debounced', input: { productId: 7 } });
    expect(first.joined).toBeUndefined();
    const second = await flowsRun({ flow: 'debounced', input: { productId: 7 } });
    expect(second).toEqual({ runId: first.runId, status: 'pending', joined: true, flow: 'debounced', shop: SHOP });
    const got = await getRun(first.runId);
    expect(got.run.waiting).toMatchObject({ reason: 'debounced', key: '7', heldBy: null, until: expect.any(String) });
    expect(got.run.waiting.message).toContain('debounced until');
  });

  it('service.flows.run takes a priority from -100 to 100; another is -32602 with the /priority issue', async () => {
    const { runId } = await flowsRun({ flow: 'quick', priority: 42 });
    const [row] = await get().db.query<{ priority: number }>(sql`select priority from runs where id = ${runId}::uuid`);
    expect(Number(row!.priority)).toBe(42);
    await waitForRun(get().db, runId);

    for (const priority of [101, -101, 1.5, 'high']) {
      const error = await rejection(client.callTool({ name: 'service.flows.run', arguments: { flow: 'quick', priority } }), McpError);
      expect(error.code, String(priority)).toBe(-32602);
      expect((error.data as any).issues[0].path, String(priority)).toBe('/priority');
    }
  });

  it("the dispatcher's priority refusal is an invalid-arguments error too", async () => {
    const refusing = await startMcpServer(instance, get().db, {
      overrides: {
        dispatch: () => {
          throw new InvalidDispatchError('priority: must be an integer from -100 to 100 (higher runs first)', { field: 'priority' });
        },
      },
    });
    try {
      const token = await refusing.createToken({ name: 'refused', permissions: ['run_flows'] });
      const c = await refusing.connect(token.secret);
      const error = await rejection(c.callTool({ name: 'service.flows.run', arguments: { flow: 'quick', priority: 3 } }), McpError);
      expect(error.code).toBe(-32602);
      expect(error.message).toContain('Invalid arguments for service.flows.run');
      expect((error.data as any).issues).toEqual([
        {
          path: '/priority',
          message: 'must be an integer from -100 to 100 (higher runs first)',
          expected: 'integer from -100 to 100',
          received: '3',
        },
      ]);
    } finally {
      await refusing.close();
    }
  });
});
