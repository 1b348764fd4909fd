import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { PAGE_KEYS, type PageKey, type PageMode } from '../../src/app/types.ts';
import { PAGE_API_PREFIXES, isUnderPrefix } from '../../src/http/pages.ts';
import type { ApiEnv, ApiRouteGroup } from '../../src/http/types.ts';
import { bearer, startTestServer, tokenFor } from './helpers.ts';

/** A router that answers 200 on its prefix and everything below it. */
function echoGroup(prefix: string, page?: PageKey): ApiRouteGroup {
  const app = new Hono<ApiEnv>();
  const answer = (c: any) => c.json({ group: prefix, path: c.req.path });
  app.all('/', answer);
  app.all('/*', answer);
  return { prefix, page, app };
}

const SPEC_GROUPS = Object.values(PAGE_API_PREFIXES)
  .flat()
  .map((p) => echoGroup(p));

let server: Awaited<ReturnType<typeof startTestServer>> | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(pages: Partial<Record<PageKey, PageMode>>, groups: ApiRouteGroup[] = SPEC_GROUPS) {
  server = await startTestServer({ pages, groups });
  return server;
}

const get = (path: string, method = 'GET') => fetch(`${server!.url}${path}`, { method, headers: bearer(tokenFor()) });

describe('GET /api/pages', () => {
  it('reports each page mode', async () => {
    await start({ flows: 'visible', providers: 'hidden', crons: 'disabled', functions: 'visible', mcp: 'hidden' });
    const res = await get('/api/pages');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      pages: { flows: 'visible', providers: 'hidden', crons: 'disabled', functions: 'visible', mcp: 'hidden' },
    });
  });

  it('defaults every page to visible', async () => {
    await start({});
    expect(await (await get('/api/pages')).json()).toEqual({
      pages: { flows: 'visible', providers: 'visible', crons: 'visible', functions: 'visible', mcp: 'visible' },
    });
  });

  it('stays available when every page is disabled', async () => {
    const all = Object.fromEntries(PAGE_KEYS.map((k) => [k, 'disabled'])) as Record<PageKey, PageMode>;
    await start(all);
    const res = await get('/api/pages');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ pages: all });
    expect((await get('/api/flows')).status).toBe(404);
  });

  it('needs a session token', async () => {
    await start({});
    const res = await fetch(`${server!.url}/api/pages`);
    expect(res.status).toBe(401);
    expect(res.headers.get('X-Shopify-Retry-Invalid-Session-Request')).toBe('1');
  });
});

describe('page gating', () => {
  for (const key of PAGE_KEYS) {
    it(`a disabled ${key} page answers 404 on ${PAGE_API_PREFIXES[key].join(' and ')} and below`, async () => {
      await start({ [key]: 'disabled' });
      for (const prefix of PAGE_API_PREFIXES[key]) {
        for (const [path, method] of [
          [prefix, 'GET'],
          [`${prefix}/`, 'GET'],
          [`${prefix}/abc/def`, 'GET'],
          [`${prefix}/abc`, 'POST'],
          [`${prefix}/abc`, 'DELETE'],
        ] as const) {
          const res = await get(path, method);
          expect(res.status, `${method} ${path}`).toBe(404);
          expect(await res.json()).toEqual({ error: 'Not found' });
        }
      }
      // The other pages' groups still answer.
      for (const other of PAGE_KEYS.filter((k) => k !== key)) {
        for (const prefix of PAGE_API_PREFIXES[other]) {
          const res = await get(`${prefix}/x`);
          expect(res.status, prefix).toBe(200);
          expect(await res.json()).toEqual({ group: prefix, path: `${prefix}/x` });
        }
      }
    });
  }

  it('gates /api/runs with the flows page', async () => {
    await start({ flows: 'disabled' });
    expect((await get('/api/runs')).status).toBe(404);
    expect((await get('/api/runs/0b9c3f54-2f7e-4d1f-8a4f-1a7b7d0c9e11/logs')).status).toBe(404);
  });

  it('matches on path segments: /api/flowsX is not under /api/flows', async () => {
    await start({ flows: 'disabled' }, [...SPEC_GROUPS, echoGroup('/api/flowsX'), echoGroup('/api/runs-archive')]);
    expect((await get('/api/flowsX')).status).toBe(200);
    expect((await get('/api/flowsX/a')).status).toBe(200);
    expect((await get('/api/runs-archive')).status).toBe(200);
    expect((await get('/api/flows')).status).toBe(404);
  });

  it('gates the paths the router would decode to the prefix', async () => {
    await start({});
    expect((await get('/api/%66lows/x')).status).toBe(200);
    await server!.close();
    await start({ flows: 'disabled' });
    for (const path of ['/api/%66lows', '/api/%66lows/x', '/api/x/../flows', '/api/./runs/1']) {
      expect((await get(path)).status, path).toBe(404);
    }
  });

  it('hidden changes nothing', async () => {
    await start(Object.fromEntries(PAGE_KEYS.map((k) => [k, 'hidden'])));
    for (const prefix of Object.values(PAGE_API_PREFIXES).flat()) {
      expect((await get(prefix)).status, prefix).toBe(200);
      expect((await get(`${prefix}/a/b`)).status, prefix).toBe(200);
    }
  });

  it('gates a mounted group by its own page', async () => {
    await start({ crons: 'disabled' }, [echoGroup('/api/cron-history', 'crons'), echoGroup('/api/other')]);
    expect((await get('/api/cron-history/1')).status).toBe(404);
    expect((await get('/api/other/1')).status).toBe(200);
  });

  it('authenticates before gating', async () => {
    await start({ mcp: 'disabled' });
    const res = await fetch(`${server!.url}/api/mcp/tokens`);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'Missing session token' });
  });
});

describe('isUnderPrefix', () => {
  it('matches whole segments', () => {
    expect(isUnderPrefix('/api/flows', '/api/flows')).toBe(true);
    expect(isUnderPrefix('/api/flows/', '/api/flows')).toBe(true);
    expect(isUnderPrefix('/api/flows/a', '/api/flows')).toBe(true);
    expect(isUnderPrefix('/api/flowsX', '/api/flows')).toBe(false);
    expect(isUnderPrefix('/api/flow', '/api/flows')).toBe(false);
    expect(isUnderPrefix('/api', '/api/flows')).toBe(false);
  });
});
