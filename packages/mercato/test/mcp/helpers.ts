/** MCP test plumbing: a runtime with the real HTTP app, token creation through /api/mcp, and the official SDK client. */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { MercatoInstance } from '../../src/app/app.ts';
import type { Database } from '../../src/db/engine.ts';
import { createHttpApp, startHttpServer } from '../../src/http/server.ts';
import { type McpDeps, createMcp } from '../../src/mcp/index.ts';
import { mcpDeps } from '../../src/mcp/wiring.ts';
import { createInstaller, installationMiddleware } from '../../src/platform/index.ts';
import { apiGroups } from '../../src/serve.ts';
import { FAST_WORKER, SHOP, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';

export interface McpTestServer {
  t: TestRuntime;
  url: string;
  /** fetch with a session token (admin API). */
  api(path: string, init?: { method?: string; json?: unknown; shop?: string }): Promise<{ status: number; body: any; headers: Headers }>;
  /** Creates a token through POST /api/mcp/tokens; returns its id and secret. */
  createToken(body: Record<string, unknown>, shop?: string): Promise<{ id: string; secret: string; token: any }>;
  /** A connected SDK client. */
  connect(secret: string): Promise<Client>;
  /** A raw POST to /mcp. */
  post(body: unknown, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/**
 * Starts a runtime and an HTTP server made of the regular API groups plus an MCP endpoint built from `mcpDeps(runtime)`
 * with `overrides` (a shorter time-out, integrations). Tokens created through /api/mcp work on it: they live in the database.
 */
export async function startMcpServer(
  instance: MercatoInstance<any, any>,
  db: Database,
  options: { overrides?: Partial<McpDeps>; env?: Record<string, string>; worker?: boolean } = {},
): Promise<McpTestServer> {
  const t = await startTestRuntime(instance, db, { env: options.env, worker: options.worker ? FAST_WORKER : undefined });
  const { runtime } = t;
  const mcp = createMcp({ ...mcpDeps(runtime), ...options.overrides });
  // As buildApp() composes it (first session token of a shop installs it), with this MCP instance mounted.
  const installer = createInstaller({
    db: runtime.db,
    secrets: runtime.secrets,
    logger: runtime.logger,
    platformOrigin: runtime.env.platformOrigin,
  });
  const app = createHttpApp(runtime, {
    groups: apiGroups(runtime),
    afterAuth: [installationMiddleware(installer)],
    extra: (a) => mcp.mount(a),
  });
  const server = await startHttpServer(app, { port: 0, hostname: '127.0.0.1' });
  t.runtime.onClose(() => server.close());
  const url = server.url;
  const clients: Client[] = [];

  const api: McpTestServer['api'] = async (path, init = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${t.token(init.shop ?? SHOP)}` };
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${url}${path}`, {
      method: init.method ?? 'GET',
      headers,
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
  };

  return {
    t,
    url,
    api,
    async createToken(body, shop) {
      const res = await api('/api/mcp/tokens', { method: 'POST', json: body, shop });
      if (res.status !== 201) throw new Error(`token create answered ${res.status}: ${JSON.stringify(res.body)}`);
      return { id: res.body.token.id, secret: res.body.secret, token: res.body.token };
    },
    async connect(secret) {
      const client = new Client({ name: 'mercato-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${secret}` } },
      });
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    post(body, headers = {}) {
      return fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    async close() {
      for (const client of clients) await client.close().catch(() => {});
      await t.close();
    },
  };
}

export const rpc = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method,
  params,
});
