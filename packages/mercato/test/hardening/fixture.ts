/**
 * What the HTTP hardening tests share: an app with every kind of endpoint (a flow, a webhook topic, an MCP tool, a custom
 * page with a loader and an action), webhook signing, MCP token creation over /api/mcp, and a raw HTTP client that
 * streams an endless chunked body until the server answers.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { defineWebhook } from '../../src/app/define.ts';
import { TEST_API_SECRET } from '../helpers/runtime.ts';
import { SHOP } from '../kit/index.ts';

const app = defineApp();
const report = app.defineCustomPage({
  title: 'Report',
  path: '/reports/daily',
  loaders: { summary: { input: z.object({ days: z.number().int() }), run: (_ctx, input) => ({ days: input.days }) } },
  actions: { touch: { run: () => ({ ok: true }) } },
});

export const instance = app.defineConfig({
  flows: {
    echo: app.defineFlow({
      name: 'echo',
      input: z.object({ text: z.string().optional() }),
      concurrency: null, // no worker runs in these tests: every dispatch stays pending, none may be refused for it
      run: (_ctx, input) => input,
    }),
  },
  webhooks: {
    'orders/create': defineWebhook({ topic: 'orders/create', handler: async () => {} }),
  },
  mcp: {
    permissions: { 'test:read_things': { label: 'Read things' } },
    tools: {
      'test.things': {
        description: 'Lists things',
        requiredPermissions: ['test:read_things'],
        inputSchema: { type: 'object', properties: {} },
        run: () => ({ things: [] }),
      },
    },
  },
  experimental: { customPages: true, pages: { report } },
});

/** Headers of a webhook delivery signed with the test app's secret. */
export function signedWebhook(body: string, topic = 'orders/create', shop = SHOP): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-shopify-hmac-sha256': createHmac('sha256', TEST_API_SECRET).update(body).digest('base64'),
    'x-shopify-topic': topic,
    'x-shopify-shop-domain': shop,
    'x-shopify-webhook-id': randomUUID(),
  };
}

/** Creates an MCP token through POST /api/mcp/tokens (with the session token given) and returns its secret. */
export async function createMcpToken(baseUrl: string, sessionToken: string, permissions: string[] = ['test:read_things']): Promise<string> {
  const res = await fetch(`${baseUrl}/api/mcp/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sessionToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `t-${randomUUID().slice(0, 8)}`, permissions }),
  });
  const body = (await res.json()) as { secret?: string };
  if (res.status !== 201 || !body.secret) throw new Error(`token create answered ${res.status}: ${JSON.stringify(body)}`);
  return body.secret;
}

/** An MCP JSON-RPC request body. */
export const rpc = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, params });

export interface FloodResult {
  /** 0 when the connection was reset before an answer arrived (see `reset`). */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** Bytes written when the answer's headers arrived (or the connection was reset). */
  sentAtAnswer: number;
  /**
   * The socket error (ECONNRESET, EPIPE) when the server closed the connection before its answer could be read: a server
   * that answers 413 and closes while the client is still sending may have its answer overtaken by the reset.
   */
  reset?: string;
}

/**
 * Sends `method url` with a chunked body of 'x' bytes, 64 KB at a time (respecting back-pressure), until the server
 * answers or `capBytes` are sent; then stops sending and reads the answer. A connection reset before an answer resolves
 * with status 0 and `reset`; any other failure rejects.
 */
export function flood(url: string, method: string, headers: Record<string, string>, capBytes: number): Promise<FloodResult> {
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    let answered = false;
    const req = httpRequest(url, { method, headers: { ...headers, 'transfer-encoding': 'chunked' } });
    req.on('response', (res) => {
      answered = true;
      const sentAtAnswer = sent;
      const parts: Buffer[] = [];
      res.on('data', (b: Buffer) => parts.push(b));
      res.on('error', reject);
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8'), sentAtAnswer });
        req.destroy();
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (answered) return;
      answered = true;
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE')
        resolve({ status: 0, headers: {}, body: '', sentAtAnswer: sent, reset: error.code });
      else reject(error);
    });
    const pump = () => {
      while (!answered && sent < capBytes) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}
