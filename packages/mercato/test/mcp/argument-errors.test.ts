/**
 * Issue 20, point 1: invalid arguments stay -32602 (the spec's wire rule), but the message names each field and its rule
 * and `error.data.issues` carries every issue with `path`, `message`, `expected` and `received` — for custom tools (the
 * JSON Schema subset) and for a flow's input given to service.flows.run (its zod schema). Received values are in `data`
 * only: the message, which the audit record keeps, holds none.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { rejection } from '../kit/index.ts';
import { type McpTestServer, rpc, startMcpServer } from './helpers.ts';

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    invoice: app.defineFlow({
      name: 'invoice',
      input: z.object({ orderId: z.string(), copies: z.number().int().min(1), channel: z.enum(['email', 'print']) }).strict(),
      concurrency: null,
      run: () => null,
    }),
  },
  mcp: {
    tools: {
      'orders.find': {
        description: 'Finds orders',
        requiredPermissions: [],
        inputSchema: {
          type: 'object',
          properties: {
            query: { type: 'string' },
            limit: { type: 'integer', minimum: 1, maximum: 50 },
            status: { type: 'string', enum: ['open', 'closed'] },
            tags: { type: 'array', items: { type: 'string' } },
          },
          required: ['query'],
          additionalProperties: false,
        },
        run: () => ({ ok: true }),
      },
    },
  },
});

describeEngines('MCP argument errors a model can act on', (get) => {
  let s: McpTestServer;
  let tokenId: string;
  let secret: string;
  beforeAll(async () => {
    s = await startMcpServer(instance, get().db);
    ({ id: tokenId, secret } = await s.createToken({ name: 'args', permissions: ['run_flows'] }));
  });
  afterAll(() => s?.close());

  it('a custom tool: every issue with path, expected and received; the message names each field and rule', async () => {
    const client = await s.connect(secret);
    const error = await rejection(
      client.callTool({ name: 'orders.find', arguments: { limit: 'ten', status: 'lost-secret-value', tags: ['a', 7], color: 'red' } }),
      McpError,
    );
    expect(error.code).toBe(-32602);
    expect((error.data as any).issues).toEqual([
      { path: '/query', message: 'is required', expected: 'string (required)', received: 'nothing' },
      { path: '/limit', message: 'must be integer (got string)', expected: 'integer', received: 'string' },
      { path: '/status', message: 'must be one of "open", "closed"', expected: 'one of "open", "closed"', received: '"lost-secret-value"' },
      { path: '/tags/1', message: 'must be string (got integer)', expected: 'string', received: 'integer' },
      {
        path: '/color',
        message: 'is not an allowed property',
        expected: 'one of the properties query, limit, status, tags',
        received: 'property "color"',
      },
    ]);
    expect(error.message).toBe(
      'MCP error -32602: Invalid arguments for orders.find: /query is required (string); /limit must be integer (got string); ' +
        '/status must be one of "open", "closed"; /tags/1 must be string (got integer); ' +
        '/color is not an allowed property (expected one of the properties query, limit, status, tags)',
    );
    const [audit] = (await s.api(`/api/mcp/tokens/${tokenId}`)).body.audits;
    expect(audit).toMatchObject({ capability: 'orders.find', status: 'error' });
    expect(audit.error).not.toContain('lost-secret-value');

    const res = await s.post(rpc('tools/call', { name: 'orders.find', arguments: [1, 2] }), { authorization: `Bearer ${secret}` });
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ code: -32602, message: 'Invalid arguments for orders.find: arguments must be an object' });
    expect(body.error.data.issues).toEqual([{ path: '', message: 'must be object', expected: 'object', received: 'array' }]);
  });

  it("service.flows.run: the flow input's issues under /input, with what the flow's schema expects", async () => {
    const client = await s.connect(secret);
    const error = await rejection(
      client.callTool({ name: 'service.flows.run', arguments: { flow: 'invoice', input: { copies: 0, channel: 'fax', extra: true } } }),
      McpError,
    );
    expect(error.code).toBe(-32602);
    const issues = (error.data as any).issues as any[];
    expect(issues.map((i) => [i.path, i.expected, i.received])).toEqual([
      ['/input/orderId', 'string', 'nothing'],
      ['/input/copies', '>= 1', '0'],
      ['/input/channel', 'one of "email", "print"', '"fax"'],
      ['/input/extra', 'no such property', 'property "extra"'],
    ]);
    expect(issues[0].message).toBe('is required');
    expect(error.message).toContain('Invalid arguments for service.flows.run: /input/orderId is required (string); /input/copies ');
    // a valid input is dispatched
    const ok = await client.callTool({
      name: 'service.flows.run',
      arguments: { flow: 'invoice', input: { orderId: 'A1', copies: 2, channel: 'email' } },
    });
    expect(ok.structuredContent).toMatchObject({ status: 'pending', flow: 'invoice' });
  });
});
