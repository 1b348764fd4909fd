/** The demo app's public routes, served by serve() from examples/demo/routes, as `mercato dev` serves them. */
import { createHmac } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../src/db/testing.ts';
import { saveInstallation } from '../../src/platform/store.ts';
import { silentLogger } from '../../src/logger.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { serve } from '../../src/serve.ts';
import { waitForRun } from '../helpers/runtime.ts';
import { signSessionToken } from '../../src/http/session-token.ts';
import { startWorker } from '../../src/serve.ts';
import { SHOP } from '../kit/index.ts';

const DEMO = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../examples/demo');
let test: TestDatabase;
let runtime: Runtime;
let url: string;

beforeAll(async () => {
  test = await createTestDatabase('pglite');
  const instance = (await import(`${DEMO}/service.config.ts`)).default;
  runtime = await createRuntime({
    instance,
    projectDir: DEMO,
    mode: 'test',
    db: test.db,
    logger: silentLogger(),
    env: { NODE_ENV: 'test', PLATFORM_API_KEY: 'k', PLATFORM_API_SECRET: 's' },
  });
  await startWorker(runtime);
  await saveInstallation(test.db.query, runtime.secrets, { appHandle: 'default', shop: SHOP, accessToken: 'shpat_test', scopes: null });
  url = (await serve(runtime, { port: 0, hostname: '127.0.0.1' })).url;
});
afterAll(async () => {
  await runtime?.close();
  await test?.drop();
});

const sign = (body: string) => createHmac('sha256', 'demo-route-secret').update(body).digest('hex');

it('the HMAC-authenticated route dispatches a flow and answers 202 with the dispatch result', async () => {
  const body = JSON.stringify({ shop: SHOP, orderId: 1001 });
  const res = await fetch(`${url}/routes/order-events`, { method: 'POST', body, headers: { 'x-demo-signature': sign(body) } });
  expect(res.status).toBe(202);
  const result = (await res.json()) as { runId: string; status: string };
  expect(result.status).toBe('pending');
  expect((await waitForRun(test.db, result.runId)).status).toBe('completed');
  expect(
    (await fetch(`${url}/routes/order-events`, { method: 'POST', body, headers: { 'x-demo-signature': sign('tampered') } })).status,
  ).toBe(401);
  const other = JSON.stringify({ shop: 'demo-2.myshopify.com', orderId: 1 });
  // not installed: forShop throws ShopNotInstalledError in auth, which the demo route turns into its own 404
  const notInstalled = await fetch(`${url}/routes/order-events`, {
    method: 'POST',
    body: other,
    headers: { 'x-demo-signature': sign(other) },
  });
  expect(notInstalled.status).toBe(404);
  expect(await notInstalled.json()).toEqual({ error: 'Shop "demo-2.myshopify.com" has not installed the app' });
});

it('the parameterised route and the fake CRM the demo provider talks to', async () => {
  expect(await (await fetch(`${url}/routes/orders/42`)).json()).toMatchObject({ orderId: '42' });
  expect((await fetch(`${url}/routes/fake-crm/ping`)).status).toBe(401);
  const ping = await fetch(`${url}/routes/fake-crm/ping`, { headers: { 'x-api-key': 'demo-crm-key' } });
  expect(ping.status).toBe(200);
  expect((await fetch(`${url}/routes/_fake-crm-data`)).status).not.toBe(200);
});

it('the demo crm provider checks and looks customers up through the fake CRM over HTTP', async () => {
  const token = signSessionToken({ apiKey: 'k', apiSecret: 's', shop: SHOP });
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const saved = await fetch(`${url}/api/providers/crm`, {
    method: 'PUT',
    headers,
    body: JSON.stringify({ config: { baseUrl: `${url}/routes/fake-crm`, apiKey: 'wrong-key', region: 'eu' } }),
  });
  expect(saved.status).toBe(200);
  expect(await (await fetch(`${url}/api/providers/crm/check`, { method: 'POST', headers })).json()).toMatchObject({ ok: false });
  await fetch(`${url}/api/providers/crm`, {
    method: 'PUT',
    headers,
    body: JSON.stringify({ config: { baseUrl: `${url}/routes/fake-crm`, apiKey: 'demo-crm-key', region: 'eu' } }),
  });
  expect(await (await fetch(`${url}/api/providers/crm/check`, { method: 'POST', headers })).json()).toMatchObject({ ok: true });
  const run = await fetch(`${url}/api/flows/lookupCustomer/run`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ input: { email: 'ada@example.com' } }),
  });
  const { runId } = (await run.json()) as { runId: string };
  expect((await waitForRun(test.db, runId)).output).toEqual({ customer: { id: 'c_1', email: 'ada@example.com', name: 'Ada Lovelace' } });
});
