/** `mercato dev` runs the platform simulator: PLATFORM_ORIGIN, the preview's shops, install and uninstall end to end. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../kit/index.ts';

const here = dirname(fileURLToPath(import.meta.url));
const BIN = resolve(here, '../../bin/mercato.js');
const MINIMAL = resolve(here, '../fixtures/minimal-app');
const DEMO = resolve(here, '../../../../examples/demo');
const dir = mkdtempSync(join(tmpdir(), 'mercato-dev-platform-'));
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function startDev(extraEnv: Record<string, string> = {}, cwd = MINIMAL) {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    MERCATO_DATA_DIR: join(dir, `db-${children.length}`),
    MERCATO_SIM_PORT: '0',
    ...extraEnv,
  };
  const child = spawn(process.execPath, [BIN, 'dev', '--port', '0', '--no-watch'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const ready = new Promise<string>((resolveReady, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/platform:\s+\S/.test(output) && /listening on/.test(output)) resolveReady(output);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`exited with ${code}:\n${output}`)));
  });
  return { child, ready, exited };
}

describe('mercato dev with the platform simulator', () => {
  it('points the runtime at the simulator: preview shops, installs the app on them at start-up by token exchange, app/uninstalled', async () => {
    const dev = startDev();
    const output = await dev.ready;
    const url = /listening on (http:\/\/\S+)/.exec(output)![1]!;
    const simUrl = /platform:\s+simulator at (http:\/\/\S+)/.exec(output)![1]!;

    const shops = (await (await fetch(`${url}/__mercato/preview/shops`)).json()) as { shops: string[] };
    expect(shops.shops).toEqual(['demo-1.myshopify.com', 'demo-2.myshopify.com']);

    // installed on both shops before the banner, one token exchange each, as a development store has the app installed
    const exchanged = [
      expect.objectContaining({ shop: 'demo-1.myshopify.com', status: 200, apiKey: 'mercato-dev-api-key' }),
      expect.objectContaining({ shop: 'demo-2.myshopify.com', status: 200, apiKey: 'mercato-dev-api-key' }),
    ];
    const before = (await (await fetch(`${simUrl}/__sim/state`)).json()) as any;
    expect(before.tokenExchanges).toEqual(exchanged);
    expect(before.installations).toEqual([
      expect.objectContaining({ shop: 'demo-1.myshopify.com', uninstalledAt: null }),
      expect.objectContaining({ shop: 'demo-2.myshopify.com', uninstalledAt: null }),
    ]);
    // the admin's first request finds the installation: no second exchange
    const minted = (await (
      await fetch(`${url}/__mercato/preview/session-token`, { method: 'POST', body: JSON.stringify({ shop: 'demo-2.myshopify.com' }) })
    ).json()) as { token: string };
    expect((await fetch(`${url}/api/pages`, { headers: { authorization: `Bearer ${minted.token}` } })).status).toBe(200);
    const state = (await (await fetch(`${simUrl}/__sim/state`)).json()) as any;
    expect(state.tokenExchanges).toEqual(exchanged);

    // the simulator delivers app/uninstalled to the dev server, which handles it in its in-process worker
    const uninstalled = (await (
      await fetch(`${simUrl}/__sim/uninstall`, { method: 'POST', body: JSON.stringify({ shop: 'demo-2.myshopify.com' }) })
    ).json()) as any;
    expect(uninstalled.delivery.status).toBe(200);
    const auth = { authorization: `Bearer ${minted.token}` };
    await expect
      .poll(
        async () => {
          const runs = (await (await fetch(`${url}/api/runs`, { headers: auth })).json()) as any;
          return runs.runs.some((r: any) => r.flowName === 'webhook:app/uninstalled' && r.status === 'completed');
        },
        { timeout: 10_000, interval: 50 },
      )
      .toBe(true);

    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
  });

  it('after a restart on the same database, ctx.admin works with the new simulator (the shops are installed again)', async () => {
    const env = { MERCATO_DATA_DIR: join(dir, 'db-restart') };
    for (const session of [1, 2]) {
      const dev = startDev(env, DEMO);
      const output = await dev.ready;
      const url = /listening on (http:\/\/\S+)/.exec(output)![1]!;
      const simUrl = /platform:\s+simulator at (http:\/\/\S+)/.exec(output)![1]!;
      // the webhook handler of the demo asks the Admin API for the shop's name with the stored offline token
      const delivered = await fetch(`${simUrl}/__sim/webhooks`, {
        method: 'POST',
        body: JSON.stringify({ shop: 'demo-1.myshopify.com', topic: 'orders/create', payload: { id: 1000 + session } }),
      });
      expect(delivered.status).toBe(200);
      const minted = (await (
        await fetch(`${url}/__mercato/preview/session-token`, { method: 'POST', body: JSON.stringify({ shop: 'demo-1.myshopify.com' }) })
      ).json()) as { token: string };
      const auth = { authorization: `Bearer ${minted.token}` };
      const runs = await eventually(
        async () => {
          const all = ((await (await fetch(`${url}/api/runs`, { headers: auth })).json()) as any).runs as any[];
          const list = all.filter((r) => r.flowName === 'webhook:orders/create');
          return list.length >= session && list.every((r) => r.status === 'completed' || r.status === 'failed') && list;
        },
        { timeout: 20_000, interval: 50 },
      );
      expect(
        runs.map((r) => r.status),
        `session ${session}`,
      ).toEqual(runs.map(() => 'completed'));
      dev.child.kill('SIGTERM');
      expect(await dev.exited).toBe(0);
    }
  }, 90_000); // two `mercato dev` starts in a row: up to a minute on a loaded 2-core machine

  it('does not start the simulator when PLATFORM_ORIGIN is set', async () => {
    const dev = startDev({ PLATFORM_ORIGIN: 'http://127.0.0.1:9' });
    const output = await dev.ready;
    expect(output).toMatch(/platform:\s+http:\/\/127\.0\.0\.1:9/);
    expect(output).not.toContain('simulator at');
    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
  });
});
