/** POST /mcp over raw HTTP: statuses, headers, body limit, JSON-RPC framing, Origin, the endpoint switch, client disconnect. */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { MAX_REQUEST_BYTES } from '../../src/mcp/rpc.ts';
import { instance, seen } from './app.ts';
import { type McpTestServer, rpc, startMcpServer } from './helpers.ts';

const V = '2025-11-25';
const APP_URL = 'https://mercato.example.com';

const disabledApp = defineApp();
const disabledInstance = disabledApp.defineConfig({
  flows: { noop: disabledApp.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) },
  mcp: { enabled: false },
});

const gatedApp = defineApp();
const gatedInstance = gatedApp.defineConfig({
  flows: { noop: gatedApp.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) },
  pages: { mcp: 'disabled' },
});

describeEngines('MCP endpoint over HTTP', (get) => {
  let s: McpTestServer;
  let secret: string;
  let tokenId: string;
  beforeAll(async () => {
    s = await startMcpServer(instance, get().db, { env: { HOST: APP_URL }, overrides: { timeoutMs: 5000 } });
    ({ secret, id: tokenId } = await s.createToken({ name: 'raw', permissions: ['test:read_orders'] }));
  });
  afterAll(() => s?.close());
  beforeEach(() => {
    seen.slowAborted.length = 0;
    seen.slowReason.length = 0;
  });

  const auth = () => ({ authorization: `Bearer ${secret}` });
  const expectHeader = (res: Response) => expect(res.headers.get('mcp-protocol-version')).toBe(V);
  const expectInvalid = async (res: Response, id: unknown = null) => {
    expect(res.status).toBe(400);
    expectHeader(res);
    const body = await res.json();
    expect(body).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32600 } });
    return body;
  };

  it('answers a request with JSON and the protocol header; initialize answers 2025-11-25 whatever the client asked', async () => {
    const res = await s.post(
      rpc('initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw', version: '0' } }, 'init-1'),
      auth(),
    );
    expect(res.status).toBe(200);
    expectHeader(res);
    expect(res.headers.get('content-type')).toContain('application/json');
    const body = await res.json();
    expect(body).toMatchObject({
      jsonrpc: '2.0',
      id: 'init-1',
      result: { protocolVersion: V, capabilities: { tools: {}, resources: {} }, serverInfo: { name: 'mercato' } },
    });
    expect(body.result.capabilities.tools.listChanged).toBeUndefined();
    expect(body.result.capabilities.resources.subscribe).toBeUndefined();
    const ping = await s.post(rpc('ping', {}, 7), { ...auth(), 'MCP-Protocol-Version': V });
    expect(await ping.json()).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
  });

  it('notifications and client responses get 202 with an empty body', async () => {
    for (const message of [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      { jsonrpc: '2.0', id: 4, result: {} },
    ]) {
      const res = await s.post(message, auth());
      expect(res.status, JSON.stringify(message)).toBe(202);
      expectHeader(res);
      expect(await res.text()).toBe('');
    }
  });

  it('GET and other methods answer 405 with Allow: POST', async () => {
    for (const method of ['GET', 'DELETE', 'PUT']) {
      const res = await fetch(`${s.url}/mcp`, { method, headers: auth() });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expectHeader(res);
    }
  });

  it('401 for a missing, malformed, unknown or invalid token, with a Bearer challenge', async () => {
    const id = secret.slice(4, 36);
    const wrongSecret = `mcp_${id}_${secret.slice(37, -1)}${secret.endsWith('x') ? 'y' : 'x'}`;
    for (const headers of [
      {} as Record<string, string>,
      { authorization: '' },
      { authorization: `Basic ${secret}` },
      { authorization: 'Bearer' },
      { authorization: 'Bearer mcp_short' },
      { authorization: `Bearer mcp_${'f'.repeat(32)}_${'Z'.repeat(43)}` },
      { authorization: `Bearer ${wrongSecret}` },
    ]) {
      const res = await s.post(rpc('ping'), headers);
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expectHeader(res);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
      expect(typeof (await res.json()).error).toBe('string');
    }
  });

  it('403 for a disabled token', async () => {
    const other = await s.createToken({ name: 'to disable' });
    await s.api(`/api/mcp/tokens/${other.id}`, { method: 'PATCH', json: { status: 'disabled' } });
    const res = await s.post(rpc('ping'), { authorization: `Bearer ${other.secret}` });
    expect(res.status).toBe(403);
    expectHeader(res);
    expect(await res.json()).toEqual({ error: 'MCP token is disabled' });
  });

  it('400 + -32600 for unparsable JSON, batches and malformed JSON-RPC messages', async () => {
    await expectInvalid(await s.post('{"jsonrpc": "2.0",', auth()));
    await expectInvalid(await s.post('', auth()));
    await expectInvalid(await s.post([rpc('ping', {}, 1), rpc('ping', {}, 2)], auth()));
    await expectInvalid(await s.post('"ping"', auth()));
    await expectInvalid(await s.post({ id: 3, method: 'ping' }, auth()), 3);
    await expectInvalid(await s.post({ jsonrpc: '1.0', id: 3, method: 'ping' }, auth()), 3);
    await expectInvalid(await s.post({ jsonrpc: '2.0', id: 'x', method: 5 }, auth()), 'x');
    await expectInvalid(await s.post({ jsonrpc: '2.0', id: 'x', method: 'ping', params: [1] }, auth()), 'x');
    await expectInvalid(await s.post({ jsonrpc: '2.0', id: null, method: 'ping' }, auth()));
    await expectInvalid(await s.post({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }, auth()));
  });

  it('accepts a missing protocol header, refuses an unsupported one with 400', async () => {
    expect((await s.post(rpc('ping'), auth())).status).toBe(200);
    expect((await s.post(rpc('ping'), { ...auth(), 'MCP-Protocol-Version': V })).status).toBe(200);
    for (const version of ['2025-06-18', '1900-01-01', 'nonsense']) {
      const body = await expectInvalid(await s.post(rpc('ping'), { ...auth(), 'MCP-Protocol-Version': version }));
      expect(body.error.message).toContain('MCP-Protocol-Version');
    }
  });

  it('403 for a foreign Origin; the app URL and loopback-to-loopback origins are accepted', async () => {
    for (const origin of [
      'https://evil.example.com',
      'null',
      'https://mercato.example.com.evil.io',
      'http://mercato.example.com',
      'not a url',
    ]) {
      const res = await s.post(rpc('ping'), { ...auth(), origin });
      expect(res.status, origin).toBe(403);
      expectHeader(res);
    }
    for (const origin of [APP_URL, 'http://localhost:6274', 'http://127.0.0.1:9999']) {
      expect((await s.post(rpc('ping'), { ...auth(), origin })).status, origin).toBe(200);
    }
  });

  it('413 over 1,000,000 bytes: by Content-Length before authentication, and counted while streaming a chunked body', async () => {
    const padded = (size: number) => {
      const base = JSON.stringify(rpc('ping'));
      return base.slice(0, -1) + ' '.repeat(size - base.length) + '}';
    };
    const exact = await s.post(padded(MAX_REQUEST_BYTES), auth());
    expect(exact.status).toBe(200);
    const over = await s.post(padded(MAX_REQUEST_BYTES + 1), {});
    expect(over.status).toBe(413);
    expectHeader(over);

    // A body that never ends: only a server counting bytes as they arrive can answer it.
    const chunk = new TextEncoder().encode(' '.repeat(64 * 1024));
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent > 50 * MAX_REQUEST_BYTES) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
        await new Promise((r) => setTimeout(r, 1));
      },
    });
    const res = await fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: endless,
      duplex: 'half',
    } as RequestInit).catch((e: Error) => e);
    if (res instanceof Error) throw res;
    expect(res.status).toBe(413);
    expectHeader(res);
    expect(sent).toBeLessThan(10 * MAX_REQUEST_BYTES);
  });

  it('a client disconnect aborts the tool signal and is audited as an error', async () => {
    const controller = new AbortController();
    const aborted = fetch(`${s.url}/mcp`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify(rpc('tools/call', { name: 'orders.slow', arguments: {} })),
      signal: controller.signal,
    }).catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 150));
    controller.abort();
    expect(await aborted).toBeInstanceOf(Error);
    const deadline = Date.now() + 3000;
    while (seen.slowReason.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(seen.slowReason[0]).toContain('client disconnected');
    let audit: any;
    while (!audit && Date.now() < deadline) {
      audit = (await s.api(`/api/mcp/tokens/${tokenId}`)).body.audits.find((a: any) => a.capability === 'orders.slow');
      if (!audit) await new Promise((r) => setTimeout(r, 20));
    }
    expect(audit).toMatchObject({ status: 'error' });
    expect(audit.error).toContain('client disconnected');
    expect(audit.durationMs).toBeLessThan(5000);
  });

  it('mcp.enabled false turns the endpoint off before any token work: 404 whatever the token', async () => {
    const off = await startMcpServer(disabledInstance, get().db);
    try {
      for (const headers of [{}, { authorization: 'Bearer garbage' }, { authorization: `Bearer ${secret}` }] as Record<string, string>[]) {
        const res = await off.post(rpc('ping'), headers);
        expect(res.status).toBe(404);
        expectHeader(res);
        expect(await res.json()).toEqual({ error: 'Not found' });
      }
      expect((await fetch(`${off.url}/mcp`)).status).toBe(404);
      // Token administration stays available.
      expect((await off.api('/api/mcp/capabilities')).body.enabled).toBe(false);
    } finally {
      await off.close();
    }
  });

  it('the mcp page gates /api/mcp only: a disabled page makes token administration 404, never the endpoint', async () => {
    const gated = await startMcpServer(gatedInstance, get().db);
    try {
      expect((await gated.api('/api/mcp/capabilities')).status).toBe(404);
      expect((await gated.api('/api/mcp/tokens', { method: 'POST', json: { name: 'x' } })).status).toBe(404);
      // A token made while the page was visible (same database) still works on /mcp.
      const res = await gated.post(rpc('ping'), auth());
      expect(res.status).toBe(200);
      expectHeader(res);
    } finally {
      await gated.close();
    }
  });
});
