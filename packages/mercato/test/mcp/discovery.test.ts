/**
 * Issue 20, point 2: the OAuth discovery documents MCP clients probe (RFC 9728 / RFC 8414, with or without a path suffix)
 * and any path below /mcp answer a JSON 404 on the full server (admin UI mounted), never the admin UI's HTML with 200.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resolveAdminUiDir } from '../../src/admin/assets.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { startHttpServer } from '../../src/http/server.ts';
import { buildApp } from '../../src/serve.ts';
import { type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { instance } from './app.ts';

const hasBuild = existsSync(`${resolveAdminUiDir()}/index.html`);

const PATHS = [
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/mcp',
  '/.well-known/oauth-authorization-server',
  '/.well-known/oauth-authorization-server/mcp',
  '/.well-known/openid-configuration',
  '/.well-known/openid-configuration/mcp',
  '/.well-known/anything-else',
  '/mcp/foo',
  '/mcp/x/y',
  '/mcp/',
];

describeEngines('MCP discovery paths on the full server', (get) => {
  let t: TestRuntime;
  let url: string;
  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db);
    const server = await startHttpServer(buildApp(t.runtime), { port: 0, hostname: '127.0.0.1' });
    t.runtime.onClose(() => server.close());
    url = server.url;
  });
  afterAll(() => t?.close());

  it.skipIf(!hasBuild)('the admin UI answers HTML for its own client-side routes (what the paths below must not get)', async () => {
    const res = await fetch(`${url}/runs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
  });

  it('OAuth discovery documents and paths below /mcp answer a JSON 404 for every method', async () => {
    for (const path of PATHS) {
      for (const method of ['GET', 'POST']) {
        const res = await fetch(`${url}${path}`, { method, headers: { accept: 'application/json, text/html' } });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.headers.get('content-type'), `${method} ${path}`).toContain('application/json');
        const body = (await res.json()) as { error: string; message?: string };
        expect(body.error, `${method} ${path}`).toBe('Not found');
      }
    }
    const oauth = (await (await fetch(`${url}/.well-known/oauth-protected-resource/mcp`)).json()) as { message: string };
    expect(oauth.message).toContain('does not use OAuth');
    const below = await fetch(`${url}/mcp/foo`);
    expect(below.headers.get('mcp-protocol-version')).toBe('2025-11-25');
    // /mcp itself is still the endpoint
    expect((await fetch(`${url}/mcp`, { method: 'POST' })).status).toBe(401);
  });
});
