/** The demo app's custom MCP tool and resource, reached by the SDK client with a token made through /api/mcp. */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import demo from '../../../../examples/demo/service.config.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { SHOP } from '../helpers/runtime.ts';
import { type McpTestServer, startMcpServer } from './helpers.ts';

describeEngines('the demo app over MCP', (get) => {
  let s: McpTestServer;
  beforeAll(async () => {
    s = await startMcpServer(demo, get().db);
  });
  afterAll(() => s?.close());

  it('lists, calls and reads the demo capabilities with demo:read_orders, and denies them without', async () => {
    const capabilities = (await s.api('/api/mcp/capabilities')).body;
    expect(capabilities.permissions.find((p: any) => p.key === 'demo:read_orders')).toMatchObject({
      label: 'Read demo orders',
      group: 'demo',
      riskLevel: 'low',
    });

    const granted = await s.connect((await s.createToken({ name: 'demo', permissions: ['demo:read_orders'] })).secret);
    expect((await granted.listTools()).tools.map((t) => t.name)).toContain('demo.orders.count');
    expect((await granted.listResources()).resources).toContainEqual(
      expect.objectContaining({ uri: 'demo://orders/summary', mimeType: 'text/markdown' }),
    );
    expect((await granted.callTool({ name: 'demo.orders.count' })).structuredContent).toEqual({ shop: SHOP, count: 2 });
    const read = await granted.readResource({ uri: 'demo://orders/summary' });
    expect(read.contents[0]).toMatchObject({
      uri: 'demo://orders/summary',
      mimeType: 'text/markdown',
      text: expect.stringContaining(`# Orders of ${SHOP}`),
    });

    const bare = await s.connect((await s.createToken({ name: 'no grants' })).secret);
    expect((await bare.listTools()).tools.map((t) => t.name)).toEqual(['service.shops.list']);
    expect((await bare.listResources()).resources.map((r) => r.uri)).toEqual(['service://permissions']);
    const denied = await bare.callTool({ name: 'demo.orders.count' }).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(McpError);
    expect((denied as McpError).code).toBe(-32003);
  });
});
