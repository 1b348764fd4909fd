/**
 * The browser test harness itself: which console errors a journey may leave (only the failures it provokes), and when
 * the admin UI build counts as current (sources, build setup and the root lockfile).
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type SeenRequest, type Watched, unexpected, waitForQuiet } from './browser.ts';
import { BUILD_INPUTS, adminUiBuildIsCurrent } from './build.ts';

const failed = (status: number, url: string) =>
  `console: Failed to load resource: the server responded with a status of ${status} (Whatever) @ ${url}`;

describe('unexpected console errors', () => {
  const origin = 'http://localhost:4000';

  it('tolerates only the listed status on the listed path', () => {
    const errors = [failed(409, `${origin}/api/flows/importOrders/run`), failed(400, `${origin}/api/runs/1/logs?q=level%3Aloud&limit=50`)];
    expect(
      unexpected(errors, [
        { status: 409, path: '/api/flows/importOrders/run' },
        { status: 400, path: /^\/api\/runs\/[^/]+\/logs\?q=level%3Aloud/ },
      ]),
    ).toEqual([]);
    // Same path, another status; same status, another path: both are failures.
    expect(
      unexpected([failed(500, `${origin}/api/flows/importOrders/run`)], [{ status: 409, path: '/api/flows/importOrders/run' }]),
    ).toHaveLength(1);
    expect(unexpected([failed(409, `${origin}/api/flows/flaky/run`)], [{ status: 409, path: '/api/flows/importOrders/run' }])).toHaveLength(
      1,
    );
    // A string path is the whole path, not a prefix.
    expect(unexpected([failed(404, `${origin}/api/functions/x`)], [{ status: 404, path: '/api/functions' }])).toHaveLength(1);
  });

  it('never tolerates 4xx answers nobody listed, exceptions, or console errors of the app', () => {
    const errors = [
      failed(400, `${origin}/api/providers/crm`),
      failed(401, `${origin}/api/pages`),
      'exception: boom',
      'console: Warning: each child needs a key',
    ];
    expect(unexpected(errors)).toEqual(errors);
    expect(unexpected([failed(404, 'not a url')], [{ status: 404, path: /./ }])).toHaveLength(1);
  });
});

describe('waiting for a page to settle', () => {
  const origin = 'http://localhost:4000';
  const watched = (requests: SeenRequest[]) => ({ requests }) as unknown as Watched;
  const request = (path: string, start: number, end?: number): SeenRequest => ({
    method: 'GET',
    url: `${origin}${path}`,
    authorization: undefined,
    start,
    end,
  });

  it('ignores the long polls held open by the server, but not other requests in flight or just finished', async () => {
    const now = Date.now();
    const polls = [request('/api/runs/watch?since=1&timeout=25', now - 5000), request('/api/runs/abc/watch?since=2', now - 5000)];
    await waitForQuiet(watched([...polls, request('/api/home', now - 4000, now - 2000)]), 500, 1000);
    await expect(waitForQuiet(watched([...polls, request('/api/runs', now - 100)]), 500, 300)).rejects.toThrow(/did not settle/);
    // a request that ended 100 ms ago is not quiet yet; 500 ms later it is
    const started = Date.now();
    await waitForQuiet(watched([...polls, request('/api/runs/watcher-list', now - 300, Date.now() - 100)]), 500, 2000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
  });
});

describe('admin UI build freshness', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function fixture() {
    dir = mkdtempSync(join(tmpdir(), 'admin-ui-build-'));
    mkdirSync(join(dir, 'src'));
    mkdirSync(join(dir, 'dist'));
    for (const file of ['index.html', 'src/main.tsx', 'vite.config.ts', 'tsconfig.json', 'package.json', 'package-lock.json'])
      writeFileSync(join(dir, file), 'x');
    const old = new Date(Date.now() - 60_000);
    for (const file of ['index.html', 'src/main.tsx', 'src', 'vite.config.ts', 'tsconfig.json', 'package.json', 'package-lock.json'])
      utimesSync(join(dir, file), old, old);
    writeFileSync(join(dir, 'dist', 'index.html'), 'built');
    return { lockfile: join(dir, 'package-lock.json') };
  }
  const touch = (path: string) => utimesSync(path, new Date(Date.now() + 5_000), new Date(Date.now() + 5_000));

  it('is current when the build is newer than everything it is made from', () => {
    const { lockfile } = fixture();
    expect(adminUiBuildIsCurrent(dir, lockfile)).toBe(true);
    rmSync(join(dir, 'dist', 'index.html'));
    expect(adminUiBuildIsCurrent(dir, lockfile)).toBe(false);
  });

  it.each(['src/main.tsx', 'vite.config.ts', 'package.json', 'tsconfig.json'])('is stale after a change to %s', (file) => {
    const { lockfile } = fixture();
    expect(BUILD_INPUTS.some((input) => file === input || file.startsWith(`${input}/`))).toBe(true);
    touch(join(dir, file));
    expect(adminUiBuildIsCurrent(dir, lockfile)).toBe(false);
  });

  it('is stale after an npm install rewrote the root lockfile', () => {
    const { lockfile } = fixture();
    touch(lockfile);
    expect(adminUiBuildIsCurrent(dir, lockfile)).toBe(false);
  });
});
