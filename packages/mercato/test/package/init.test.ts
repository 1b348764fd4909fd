/**
 * `mercato init <dir>` then `npm install && npm run dev` serves the app with the simulator and the admin preview, all
 * outside the workspace and from the packed package: `npx mercato init` runs the installed tarball's CLI (`--prefix`:
 * where `npx` would have put the package from the registry) with `--mercato file:<tarball>`, the scaffold's
 * `npm install` installs that tarball, and what the scaffold's README promises (its route, its flow, its webhook, its
 * scripts) is done as written there. The unit tests of `init` itself are test/cli/init.test.ts.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Background,
  childEnv,
  cleanUp,
  describeResult,
  type InstalledPackage,
  installedPackage,
  MERCATO_PKG,
  npmInstall,
  parseCurl,
  previewToken,
  run,
  runFlowViaApi,
  scratchDir,
  sendCurl,
  startBackground,
  waitForRunEnd,
} from '../helpers/package.ts';

let installed: InstalledPackage;
let work: string;
let app: string;
let server: Background | undefined;
let base: string;
let simUrl: string;

const env = childEnv({ MERCATO_SIM_PORT: '0' });
const mercatoInit = (args: string[], cwd: string) =>
  run('npx', ['--no-install', '--prefix', installed.dir, 'mercato', 'init', ...args], { cwd, env, timeoutMs: 60_000 });

beforeAll(async () => {
  installed = await installedPackage();
  work = scratchDir('init');
  app = join(work, 'my-shop');
}, 900_000);

afterAll(cleanUp, 30_000);

/** The commands of the README's ```sh blocks that start with `curl`. */
function readmeCurls(): string[] {
  const readme = readFileSync(join(app, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^ *```sh\n([\s\S]*?)^ *```$/gm)].map((m) => m[1]!.replace(/^ +/gm, ''));
  return blocks.flatMap((block) => block.replace(/\\\n/g, ' ').split('\n')).filter((line) => line.startsWith('curl '));
}

describe('mercato init <dir>, npm install, npm run dev: outside the workspace, from the tarball', () => {
  it('`npx mercato init my-shop --mercato file:<tarball>` writes the app and prints the next steps', async () => {
    const r = await mercatoInit(['my-shop', '--mercato', `file:${installed.tarball}`], work);
    expect(r.code, describeResult(r)).toBe(0);
    expect(r.stdout).toContain('Created a Mercato app in my-shop:');
    expect(r.stdout).toContain('Next steps:\n  cd my-shop\n  npm install\n  npm run dev\n');
    expect(r.stderr).toBe('');
    const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
    expect(pkg.name).toBe('my-shop');
    expect(pkg.dependencies).toEqual({ mercato: `file:${installed.tarball}`, zod: MERCATO_PKG.dependencies.zod });
    expect(existsSync(join(app, '.gitignore'))).toBe(true);
  });

  it('`npm install` in the app installs the tarball and the tools its scripts use', async () => {
    await npmInstall(app);
    const nm = join(app, 'node_modules');
    expect(JSON.parse(readFileSync(join(nm, 'mercato', 'package.json'), 'utf8')).version).toBe(MERCATO_PKG.version);
    for (const bin of ['mercato', 'tsx', 'tsc']) expect(existsSync(join(nm, '.bin', bin)), bin).toBe(true);
  }, 300_000);

  it('`npm run dev -- --port 0` prints the banner naming the simulator and the admin preview; the preview page answers', async () => {
    server = startBackground('npm', ['run', 'dev', '--', '--port', '0'], { cwd: app, env });
    const listening = await server.waitFor(/^mercato dev \S+ — listening on (http:\/\/localhost:\d+) \(ready in \d+ ms\)$/m, 90_000);
    base = listening[1]!;
    await server.waitFor(/^watching .* for changes \(Ctrl-C to stop\)$/m, 30_000);
    const out = server.stdout();
    expect(out).toContain(`  admin preview: ${base}/__mercato/preview/  (pick a shop; development only)`);
    const sim =
      /^ {2}platform: {6}simulator at (http:\/\/127\.0\.0\.1:\d+) \(shops demo-1\.myshopify\.com, demo-2\.myshopify\.com; webhooks → http:\/\/127\.0\.0\.1:(\d+)\/webhooks\)$/m.exec(
        out,
      );
    expect(sim, out).not.toBeNull();
    simUrl = sim![1]!;
    expect(`http://localhost:${sim![2]}`).toBe(base);
    expect(out).toContain(`  database:      embedded PGlite at ${join(app, '.mercato', 'db')}`);
    expect(out).toMatch(/^ {2}worker: {8}in-process; crons: 1$/m);
    expect(server.stderr()).toBe('');

    const page = await fetch(`${base}/__mercato/preview/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Mercato admin preview</title>');
    const shops = (await (await fetch(`${base}/__mercato/preview/shops`)).json()) as { shops: string[] };
    expect(shops.shops).toEqual(['demo-1.myshopify.com', 'demo-2.myshopify.com']);
    expect((await fetch(`${base}/`)).headers.get('content-type')).toMatch(/text\/html/);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it("the scaffold's flow runs from the admin preview, its route and its webhook work as its README says", async () => {
    // as the admin UI does once a shop is picked in the preview (which also installs the app on the shop)
    const token = await previewToken(base, 'demo-1.myshopify.com');
    const flows = (await (await fetch(`${base}/api/flows`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      flows: { name: string }[];
    };
    expect(flows.flows.map((f) => f.name)).toEqual(['syncOrders']);
    const byHand = await runFlowViaApi(base, token, 'syncOrders', {});
    expect(byHand).toMatchObject({ status: 'completed', output: { orders: 2, large: 1, total: 222 } });

    const curls = readmeCurls();
    expect(curls).toHaveLength(2);
    // the public route: `curl -X POST http://localhost:3000/routes/sync -H 'authorization: Bearer dev-sync-token' -d …`
    const routeCall = parseCurl(curls.find((c) => c.includes('/routes/sync'))!);
    expect(routeCall.url).toBe('http://localhost:3000/routes/sync');
    const routed = await sendCurl({ ...routeCall, url: routeCall.url.replace('http://localhost:3000', base) });
    expect(routed.status, routed.text).toBe(202);
    const { runId } = JSON.parse(routed.text) as { runId: string };
    const viaRoute = await waitForRunEnd(base, token, runId);
    expect(viaRoute).toMatchObject({ status: 'completed', shop: 'demo-1.myshopify.com', output: { orders: 2, large: 1, total: 222 } });
    expect((await sendCurl({ ...routeCall, url: `${base}/routes/sync`, headers: { authorization: 'Bearer wrong' } })).status).toBe(401);

    // the webhook: the simulator delivers orders/create, signed, and the handler runs (it calls the shop's Admin API)
    const hookLine = curls.find((c) => c.includes('<simulator URL>/__sim/webhooks'))!;
    expect(hookLine).toBeDefined();
    const delivered = await sendCurl(parseCurl(hookLine.replace('<simulator URL>', simUrl)));
    expect(delivered.status, delivered.text).toBe(200);
    const headers = { authorization: `Bearer ${token}` };
    let hookRun: { id: string; status: string } | undefined;
    await expect
      .poll(
        async () => {
          const list = (await (
            await fetch(`${base}/api/runs?search=${encodeURIComponent('webhook:orders/create')}`, { headers })
          ).json()) as { runs: { id: string; status: string }[] };
          hookRun = list.runs[0];
          return hookRun?.status;
        },
        { timeout: 20_000, interval: 200 },
      )
      .toBe('completed');
    expect(server!.stdout()).toContain('orders/create');
  });

  it('`npm run check`, `npm test` and `npm run typecheck` pass in the app', async () => {
    const check = await run('npm', ['run', 'check'], { cwd: app, env, timeoutMs: 60_000 });
    expect(check.code, describeResult(check)).toBe(0);
    expect(check.stdout).toContain(`${join(app, 'service.config.ts')} is valid`);
    expect(check.stdout).toMatch(/routes:\s+\/routes\/sync \(POST; auth function\)/);
    const test = await run('npm', ['test'], { cwd: app, env, timeoutMs: 120_000 });
    expect(test.code, describeResult(test)).toBe(0);
    // node:test's summary: `# pass 4` from the TAP reporter (Node 20's default when not on a terminal), `ℹ pass 4` from spec (Node 24's)
    expect(test.stdout).toMatch(/^(?:#|ℹ) pass 4$/m);
    expect(test.stdout).toMatch(/^(?:#|ℹ) fail 0$/m);
    const typecheck = await run('npm', ['run', 'typecheck'], { cwd: app, env, timeoutMs: 120_000 });
    expect(typecheck.code, describeResult(typecheck)).toBe(0);
  }, 180_000);

  it('Ctrl-C stops `npm run dev`', async () => {
    const exit = await server!.stop('SIGINT');
    expect(server!.stdout()).toContain('mercato dev: SIGINT received, shutting down…');
    expect(exit.signal === 'SIGINT' || exit.code === 0 || exit.code === 130, JSON.stringify(exit)).toBe(true);
  });

  it('a directory that is not empty is refused (exit 1, a clear message, nothing written) unless --force', async () => {
    const occupied = join(work, 'occupied');
    mkdirSync(occupied);
    writeFileSync(join(occupied, 'notes.txt'), 'mine\n');
    const refused = await mercatoInit(['occupied'], work);
    expect(refused.code, describeResult(refused)).toBe(1);
    expect(refused.stderr).toContain(`mercato init: the directory "occupied" (${occupied}) is not empty (it contains notes.txt).`);
    expect(refused.stderr).toContain('Pass --force to create the app in it anyway');
    expect(refused.stdout).toBe('');
    expect(existsSync(join(occupied, 'package.json'))).toBe(false);

    const forced = await mercatoInit(['occupied', '--force', '--mercato', `file:${installed.tarball}`], work);
    expect(forced.code, describeResult(forced)).toBe(0);
    expect(readFileSync(join(occupied, 'notes.txt'), 'utf8')).toBe('mine\n');
    expect(existsSync(join(occupied, 'service.config.ts'))).toBe(true);
  });
});
