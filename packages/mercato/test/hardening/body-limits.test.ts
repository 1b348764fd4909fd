/**
 * Every endpoint that can take a body has a limit: the test walks the route table of the app `mercato dev` serves (API
 * groups, MCP, webhooks, the dev preview, the admin UI, the catch-all) and sends an endless chunked body to every route
 * that accepts POST, PUT, PATCH or DELETE (every method for `ALL` routes and middleware), with valid credentials where
 * the path needs them. Each must answer 413 `{ error }` after reading at most its limit, or 404/405 without reading the
 * body; the process's memory stays bounded. /routes/* is left out: its limits belong to routes/ (per route).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { MAX_API_BODY_BYTES, MAX_OTHER_BODY_BYTES, startHttpServer } from '../../src/http/server.ts';
import { MAX_REQUEST_BYTES } from '../../src/mcp/rpc.ts';
import { MAX_WEBHOOK_BODY_BYTES } from '../../src/platform/webhooks.ts';
import { buildApp } from '../../src/serve.ts';
import { type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { createMcpToken, flood, instance, signedWebhook } from './fixture.ts';

const BODY_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** What the client sends at most; a server that read it all would have no limit worth the name. */
const CAP = 64 * 1024 * 1024;
/** Bytes the client may have written beyond the limit before the answer reaches it (socket buffers both ways). */
const SLACK = 12 * 1024 * 1024;
const SOME_ID = '3f0c1f0e-1111-4111-8111-111111111111';

/** The limit a path is documented to have (docs/security.md, "Body limits"). */
function limitOf(path: string): number {
  if (path === '/api' || path.startsWith('/api/')) return MAX_API_BODY_BYTES;
  if (path === '/mcp') return MAX_REQUEST_BYTES;
  if (path === '/webhooks' || path.startsWith('/webhooks/')) return MAX_WEBHOOK_BODY_BYTES;
  return MAX_OTHER_BODY_BYTES;
}

/** A concrete path for a route pattern: parameters become an id, wildcards a segment. */
function concrete(pattern: string): string {
  const path = pattern
    .replace(/:[A-Za-z0-9_]+(\{[^}]*\})?\??/g, SOME_ID)
    .replace(/\*/g, 'x')
    .replace(/\/+$/, '');
  return path === '' ? '/x' : path;
}

describeEngines('body limits on every route of the app', (get) => {
  let t: TestRuntime;
  let url: string;
  let mcpSecret: string;
  const cases: Array<{ method: string; path: string; pattern: string }> = [];

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db);
    const app = buildApp(t.runtime, { preview: true });
    const server = await startHttpServer(app, { port: 0, hostname: '127.0.0.1' });
    t.runtime.onClose(() => server.close());
    url = server.url;
    mcpSecret = await createMcpToken(url, t.token());
    const seen = new Set<string>();
    for (const route of app.routes) {
      if (route.path === '/routes' || route.path.startsWith('/routes/')) continue;
      const methods = route.method === 'ALL' ? BODY_METHODS : BODY_METHODS.filter((m) => m === route.method);
      for (const method of methods) {
        const path = concrete(route.path);
        const key = `${method} ${path}`;
        if (seen.has(key)) continue;
        seen.add(key);
        cases.push({ method, path, pattern: route.path });
      }
    }
  }, 60_000);
  afterAll(() => t?.close());

  const credentials = (path: string): Record<string, string> => {
    if (path.startsWith('/api/')) return { authorization: `Bearer ${t.token()}` };
    if (path === '/mcp') return { authorization: `Bearer ${mcpSecret}` };
    // a delivery's headers in their right form (the signature is of another body): without them the body is never read
    if (path === '/webhooks') return signedWebhook('{}');
    return {};
  };

  it('the walk covers the endpoints that take bodies', () => {
    const keys = cases.map((c) => `${c.method} ${c.pattern}`);
    for (const expected of [
      'POST /api/flows/:name/run',
      'POST /api/runs/bulk-delete',
      'POST /api/mcp/tokens',
      'PATCH /api/mcp/tokens/:id',
      'PUT /api/mcp/tokens/:id/permissions',
      'POST /api/pages/custom/:page/_rpc/:kind/:name',
      'POST /mcp',
      'POST /webhooks',
      'POST /__mercato/preview/session-token',
    ]) {
      expect(keys, expected).toContain(expected);
    }
    expect(cases.length).toBeGreaterThan(30);
  });

  it('an endless chunked body gets 413 within its limit (or 404/405 unread) on every route, and memory stays bounded', async () => {
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const answers: Record<string, number> = {};
    for (const { method, path, pattern } of cases) {
      const what = `${method} ${path} (${pattern})`;
      const res = await flood(`${url}${path}`, method, { 'content-type': 'application/json', ...credentials(path) }, CAP);
      answers[res.reset ?? res.status] = (answers[res.reset ?? res.status] ?? 0) + 1;
      if (res.reset) {
        // The server closed the connection before its 413 reached the client: allowed only once the limit was sent.
        expect(res.sentAtAnswer, `${what}: ${res.reset} after ${res.sentAtAnswer} bytes`).toBeGreaterThan(limitOf(path));
        expect(res.sentAtAnswer, `${what}: ${res.reset} after ${res.sentAtAnswer} bytes`).toBeLessThan(limitOf(path) + SLACK);
        continue;
      }
      expect([413, 404, 405], `${what}: ${res.status} ${res.body.slice(0, 200)}`).toContain(res.status);
      expect(res.sentAtAnswer, `${what}: answered after ${res.sentAtAnswer} bytes`).toBeLessThan(limitOf(path) + SLACK);
      const body = JSON.parse(res.body) as { error?: unknown };
      expect(typeof body.error, what).toBe('string');
      if (res.status === 413) expect(body.error, what).toMatch(/at most \d+ bytes/);
      peak = Math.max(peak, process.memoryUsage().rss);
    }
    // Every route that reads a body says 413; only routes that take no body (or no such method) may say 404/405.
    expect(answers[413]).toBeGreaterThan(20);
    expect((answers.ECONNRESET ?? 0) + (answers.EPIPE ?? 0), 'resets instead of answers').toBeLessThanOrEqual(3);
    const growthMb = (peak - rssBefore) / 1024 / 1024;
    console.log(`body limits: ${cases.length} routes × methods, answers ${JSON.stringify(answers)}, RSS growth ${growthMb.toFixed(1)} MB`);
    expect(growthMb).toBeLessThan(200);
  }, 180_000);

  it('a body within the limit still works where one is expected (the limit is not a blanket refusal)', async () => {
    const run = await fetch(`${url}/api/flows/echo/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { text: 'y'.repeat(500_000) } }),
    });
    expect(run.status).toBe(202);
    const preview = await fetch(`${url}/__mercato/preview/session-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ shop: 'demo-1.myshopify.com' }),
    });
    expect(preview.status).toBe(200);
  });
});
