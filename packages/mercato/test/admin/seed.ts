/**
 * Realistic data for the accessibility and keyboard tests, made through the admin API of a running `mercato dev` with
 * a preview session token (the same API the UI uses): a completed run with steps and logs, a failed one, a saved
 * provider, an MCP token, a function instance. And `openAdmin`: the preview's shop choice, as a user makes it.
 */
import type { Page } from 'playwright-core';
import { SHOP } from '../kit/index.ts';

/** A preview session token for `shop`, to call the admin API from the test itself. */
export async function sessionToken(origin: string, shop = SHOP): Promise<string> {
  const res = await fetch(`${origin}/__mercato/preview/session-token`, { method: 'POST', body: JSON.stringify({ shop }) });
  return ((await res.json()) as { token: string }).token;
}

/** One admin API call; fails the caller on an unexpected status. */
export async function callApi(origin: string, method: string, path: string, body?: unknown, expected = [200, 201, 202]): Promise<any> {
  const res = await fetch(`${origin}${path}`, {
    method,
    headers: { authorization: `Bearer ${await sessionToken(origin)}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!expected.includes(res.status)) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return text ? JSON.parse(text) : null;
}

/** Starts a run and waits (up to 20 s) until it has finished; returns its id and final status. */
export async function runToEnd(origin: string, flow: string, input: unknown): Promise<{ id: string; status: string }> {
  const { runId } = (await callApi(origin, 'POST', `/api/flows/${flow}/run`, { input })) as { runId: string };
  const deadline = Date.now() + 20_000;
  for (;;) {
    const run = (await callApi(origin, 'GET', `/api/runs/${runId}`)) as { status: string };
    if (['completed', 'failed', 'canceled'].includes(run.status)) return { id: runId, status: run.status };
    if (Date.now() > deadline) throw new Error(`run ${runId} of ${flow} still ${run.status} after 20 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface Seeded {
  completedRunId: string;
  failedRunId: string;
  tokenId: string;
}

/** The data every page of the test app shows (test/fixtures/admin-ui-app). */
export async function seed(origin: string): Promise<Seeded> {
  const completed = await runToEnd(origin, 'importOrders', {
    since: '7d',
    channel: 'web',
    customer: { email: 'ada@example.com' },
    tags: ['vip'],
    delayMs: 0,
  });
  if (completed.status !== 'completed') throw new Error(`importOrders ended ${completed.status}`);
  const failed = await runToEnd(origin, 'flaky', {});
  if (failed.status !== 'failed') throw new Error(`flaky ended ${failed.status}`);
  await callApi(origin, 'PUT', '/api/providers/crm', {
    config: { baseUrl: 'https://crm.example', apiKey: 'wrong-key', region: 'eu', sandbox: true },
  });
  await callApi(origin, 'POST', '/api/providers/crm/check');
  const { token } = (await callApi(origin, 'POST', '/api/mcp/tokens', {
    name: 'Support assistant',
    permissions: ['read_flows', 'read_logs'],
    expiresInDays: 30,
  })) as { token: { id: string } };
  await callApi(origin, 'POST', '/api/functions/volume-discount/instances', {
    mode: 'automatic',
    title: 'Bulk 10',
    config: { minQuantity: 3, percentage: 10 },
  });
  return { completedRunId: completed.id, failedRunId: failed.id, tokenId: token.id };
}

/** Picks SHOP in the admin preview, as a user does, and lands on `path`. */
export async function openAdmin(page: Page, path = '/'): Promise<void> {
  await page.goto(`/__mercato/preview/?next=${encodeURIComponent(path)}`);
  await page.getByLabel('Shop').selectOption(SHOP);
  await page.getByRole('button', { name: 'Open the admin' }).click();
  await page.waitForURL((url) => url.pathname === path && !url.search.includes('preview-shop'));
}
