/**
 * The simulator's own control API under `/__sim` (not part of the platform's API): lets a developer running the CLI
 * look at what happened and trigger webhooks, redeliveries and uninstalls with curl.
 */
import { Hono } from 'hono';
import type { SimState } from './state.ts';
import { deliverWebhook, redeliverWebhook } from './webhooks.ts';

export const CONTROL_PREFIX = '/__sim';

export interface ControlActions {
  uninstall(options: { apiKey?: string; shop: string }): Promise<unknown>;
}

function mask(token: string): string {
  return `${token.slice(0, 8)}…${token.slice(-4)}`;
}

export function summary(state: SimState) {
  return {
    apps: [...state.apps.values()].map((a) => ({ apiKey: a.apiKey, appUrl: a.appUrl, scopes: a.scopes })),
    shops: [...state.shops.values()],
    bucket: state.bucketConfig,
    apiVersions: state.apiVersions,
    installations: [...state.installations.values()].map((i) => ({ ...i, accessToken: i.accessToken ? mask(i.accessToken) : null })),
    tokenExchanges: state.tokenExchanges,
    graphqlCalls: state.graphqlCalls.slice(-200),
    throttledCount: state.throttledCount,
    webhookDeliveries: state.webhookDeliveries.slice(-200).map(({ body, ...d }) => ({ ...d, bytes: Buffer.byteLength(body) })),
    functions: state.functions.registry.all(),
    functionInstances: state.functions.counts(),
  };
}

export function controlRouter(state: SimState, actions: ControlActions): Hono {
  const app = new Hono();
  app.onError((error, c) => c.json({ error: error.message }, 400));
  const body = async (c: { req: { json(): Promise<unknown> } }) => {
    const value = await c.req.json().catch(() => undefined);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('Body must be a JSON object');
    return value as Record<string, any>;
  };
  app.get('/state', (c) => c.json(summary(state)));
  app.get('/shops', (c) => c.json({ shops: [...state.shops.values()] }));
  app.get('/functions', (c) => c.json({ functions: state.functions.registry.all(), instances: [...state.functions.instances.values()] }));
  app.post('/functions', async (c) => {
    const b = await body(c);
    const fn = state.functions.registry.register(state.app(b.apiKey).apiKey, {
      handle: b.handle,
      apiType: b.apiType,
      title: b.title,
      description: b.description,
      id: b.id,
    });
    return c.json({ function: fn });
  });
  app.post('/webhooks', async (c) => {
    const b = await body(c);
    if (typeof b.shop !== 'string' || typeof b.topic !== 'string') throw new Error('shop and topic are required');
    const delivery = await deliverWebhook(state, {
      apiKey: b.apiKey,
      shop: b.shop,
      topic: b.topic,
      payload: b.payload ?? {},
      apiVersion: b.apiVersion,
    });
    return c.json({ delivery: { ...delivery, body: undefined } });
  });
  app.post('/webhooks/:id/redeliver', async (c) => {
    const delivery = await redeliverWebhook(state, c.req.param('id'));
    return c.json({ delivery: { ...delivery, body: undefined } });
  });
  app.post('/uninstall', async (c) => {
    const b = await body(c);
    if (typeof b.shop !== 'string') throw new Error('shop is required');
    return c.json(await actions.uninstall({ apiKey: b.apiKey, shop: b.shop }));
  });
  return app;
}
