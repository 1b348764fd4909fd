import { describe, expect, it } from 'vitest';
import { createPreviewRouter } from '../../src/dev/preview.ts';
import { verifySessionToken } from '../../src/http/session-token.ts';

const app = { handle: 'default', apiKey: 'key', apiSecret: 'secret', appUrl: null };
const platform = {
  mode: 'single' as const,
  apps: [app],
  scopes: null,
  apiVersion: '2026-10',
  byApiKey: (k: string) => (k === 'key' ? app : undefined),
  byHandle: (h: string) => (h === 'default' ? app : undefined),
};

describe('admin preview', () => {
  it('mints a session token the admin API accepts for the chosen shop', async () => {
    const router = createPreviewRouter({ platform, shops: () => ['demo-1.myshopify.com'], isProduction: () => false });
    const res = await router.request('/session-token', { method: 'POST', body: JSON.stringify({ shop: 'demo-2.myshopify.com' }) });
    expect(res.status).toBe(200);
    const { token } = (await res.json()) as { token: string };
    const verified = await verifySessionToken(token, platform);
    expect(verified).toMatchObject({ ok: true, tenant: { appHandle: 'default', shop: 'demo-2.myshopify.com' } });
  });

  it('refuses every request whenever NODE_ENV becomes production', async () => {
    let production = false;
    const router = createPreviewRouter({ platform, shops: () => [], isProduction: () => production });
    expect((await router.request('/shops')).status).toBe(200);
    production = true;
    for (const [path, method] of [
      ['/shops', 'GET'],
      ['/session-token', 'POST'],
      ['/', 'GET'],
    ]) {
      const res = await router.request(path, { method, body: method === 'POST' ? '{"shop":"a.myshopify.com"}' : undefined });
      expect(res.status).toBe(403);
    }
  });

  it('rejects a shop that is not a shop domain and an unknown app', async () => {
    const router = createPreviewRouter({ platform, shops: () => [], isProduction: () => false });
    expect((await router.request('/session-token', { method: 'POST', body: '{"shop":"evil.com"}' })).status).toBe(400);
    expect((await router.request('/session-token', { method: 'POST', body: '{"shop":"a.myshopify.com","app":"nope"}' })).status).toBe(400);
    expect((await router.request('/session-token', { method: 'POST', body: 'not json' })).status).toBe(400);
  });
});
