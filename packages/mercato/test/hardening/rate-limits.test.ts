/**
 * Optional rate limits (docs/security.md, "Rate limits"): the token bucket (exact figures on a driven clock, and a
 * fast-check property: in any window no more than burst + rate × window requests pass), the `rateLimits` option's
 * validation, then over real HTTP the per-shop limit of /api and the per-token limit of POST /mcp: 429 JSON with
 * Retry-After, other shops and tokens unaffected, failed authentication not counted.
 */
import fc from 'fast-check';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRateLimits } from '../../src/app/validate/rate-limits.ts';
import { Problems } from '../../src/app/validate/util.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { MAX_BUCKETS, TokenBuckets, resolveRateLimits } from '../../src/http/rate-limit.ts';
import type { ApiEnv } from '../../src/http/types.ts';
import { OTHER_SHOP, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { bearer, startTestServer, tokenFor } from '../http/helpers.ts';
import { createMcpToken, instance, rpc } from './fixture.ts';
import { defineApp } from '../../src/app/app.ts';

describe('token bucket', () => {
  it('lets `burst` requests through at once, then one per 60/requestsPerMinute seconds, and says when to come back', () => {
    let now = 0;
    const buckets = new TokenBuckets({ requestsPerMinute: 30, burst: 3 }, () => now);
    expect([1, 2, 3].map(() => buckets.take('k').ok)).toEqual([true, true, true]);
    expect(buckets.take('k')).toEqual({ ok: false, retryAfterSeconds: 2 }); // one token per 2 s
    now = 1000;
    expect(buckets.take('k')).toEqual({ ok: false, retryAfterSeconds: 1 });
    now = 2000;
    expect(buckets.take('k').ok).toBe(true);
    expect(buckets.take('k').ok).toBe(false);
    expect(buckets.take('other').ok).toBe(true); // keys are independent
    now = 1_000_000;
    expect([1, 2, 3, 4].map(() => buckets.take('k').ok)).toEqual([true, true, true, false]); // never more than burst saved up
  });

  it('property: in every window, at most burst + rate × window requests pass; a rejected caller that waits Retry-After gets in', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 600 }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 300 }),
        (rpm, burst, gaps) => {
          let now = 0;
          const buckets = new TokenBuckets({ requestsPerMinute: rpm, burst }, () => now);
          const passed: number[] = [];
          for (const gap of gaps) {
            now += gap;
            if (buckets.take('k').ok) passed.push(now);
          }
          for (let i = 0; i < passed.length; i++) {
            for (let j = i; j < passed.length; j++) {
              const window = passed[j]! - passed[i]!;
              expect(j - i + 1).toBeLessThanOrEqual(burst + (rpm * window) / 60_000 + 1e-9);
            }
          }
          // after a refusal, waiting the advertised seconds is enough
          for (let k = 0; k < burst; k++) buckets.take('k');
          const refused = buckets.take('k');
          if (!refused.ok) {
            now += refused.retryAfterSeconds * 1000;
            expect(buckets.take('k').ok).toBe(true);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps at most maxKeys buckets, dropping full ones first', () => {
    let now = 0;
    const buckets = new TokenBuckets({ requestsPerMinute: 60, burst: 2 }, () => now, 100);
    for (let i = 0; i < 1000; i++) {
      buckets.take(`key-${i}`);
      now += 10;
      expect(buckets.size).toBeLessThanOrEqual(100);
    }
    expect(MAX_BUCKETS).toBeGreaterThanOrEqual(10_000);
  });

  it('off unless configured', () => {
    expect(resolveRateLimits(undefined)).toEqual({});
    expect(resolveRateLimits({ mcp: { perToken: false }, api: {} })).toEqual({});
    expect(resolveRateLimits({ api: { perShop: { requestsPerMinute: 5 } } })).toEqual({ apiPerShop: { requestsPerMinute: 5 } });
  });
});

describe('the rateLimits option', () => {
  const problems = (value: unknown) => {
    const p = new Problems();
    checkRateLimits(p, value);
    return p.list;
  };

  it('accepts buckets and false, and reports every bad value with its path', () => {
    expect(problems(undefined)).toEqual([]);
    expect(problems({ mcp: { perToken: { requestsPerMinute: 120, burst: 20 } }, api: { perShop: false } })).toEqual([]);
    expect(problems('fast')).toEqual(['rateLimits: must be an object with mcp and/or api (got "fast")']);
    expect(problems({ mpc: {} })).toEqual(['rateLimits.mpc: unknown rateLimits option; allowed: mcp, api']);
    expect(problems({ api: { perToken: false } })[0]).toMatch(/^rateLimits\.api\.perToken: unknown rateLimits\.api option/);
    expect(problems({ mcp: { perToken: true } })).toEqual([
      'rateLimits.mcp.perToken: must be false (off) or { requestsPerMinute, burst? } (got true)',
    ]);
    expect(problems({ api: { perShop: { requestsPerMinute: 0, burst: 1.5 } } })).toEqual([
      'rateLimits.api.perShop.requestsPerMinute: must be a positive integer of at most 1000000 (got 0)',
      'rateLimits.api.perShop.burst: must be a positive integer of at most 1000000 (got 1.5)',
    ]);
    expect(problems({ api: { perShop: { burst: 5 } } })).toEqual([
      'rateLimits.api.perShop.requestsPerMinute: must be a positive integer of at most 1000000 (got undefined)',
    ]);
  });
});

describe('per shop on /api over HTTP', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  let reads = 0;
  beforeAll(async () => {
    const group = new Hono<ApiEnv>();
    group.get('/ping', (c) => c.json({ ok: true }));
    group.post('/echo', async (c) => {
      reads++;
      return c.json({ length: (await c.req.text()).length });
    });
    server = await startTestServer({
      groups: [{ prefix: '/api/test', app: group }],
      rateLimits: { api: { perShop: { requestsPerMinute: 20, burst: 3 } } },
    });
  });
  afterAll(() => server?.close());
  const call = (path: string, token: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, { ...init, headers: { ...bearer(token), ...(init.headers as Record<string, string>) } });

  it('the fourth request of a shop within 3 s is a 429 with Retry-After; another shop is unaffected; bad tokens are not counted', async () => {
    for (let i = 0; i < 5; i++) expect((await call('/api/test/ping', 'not-a-token')).status).toBe(401);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await call('/api/test/ping', tokenFor())).status);
    expect(statuses).toEqual([200, 200, 200]);
    const limited = await call('/api/test/echo', tokenFor(), { method: 'POST', body: 'x'.repeat(1000) });
    expect(limited.status).toBe(429);
    // one request every 3 s: the wait is 1 to 3 whole seconds, depending on how long the first three took
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3);
    expect(await limited.json()).toEqual({
      retryAfterSeconds: retryAfter,
      error: 'Rate limit exceeded: this shop may make 20 requests per minute to the admin API; retry later',
    });
    expect(reads).toBe(0); // refused before the body was read
    expect((await call('/api/test/ping', tokenFor(undefined, OTHER_SHOP))).status).toBe(200);
    await new Promise((r) => setTimeout(r, retryAfter * 1000));
    expect((await call('/api/test/ping', tokenFor())).status).toBe(200);
  });
});

describeEngines('per MCP token on POST /mcp over HTTP', (get) => {
  let t: TestRuntime;
  let url: string;
  beforeAll(async () => {
    // the option as an app sets it: defineConfig validates it, the real app (buildApp) hands it to the MCP endpoint
    const limited = defineApp().defineConfig({
      ...(Object.fromEntries(Object.entries(instance.config).filter(([key]) => key !== 'providers' && key !== 'retention')) as Omit<
        typeof instance.config,
        'retention'
      >),
      rateLimits: { mcp: { perToken: { requestsPerMinute: 20, burst: 2 } } },
    });
    t = await startTestRuntime(limited, get().db, { http: true, env: { PLATFORM_ORIGIN: 'http://127.0.0.1:9' } });
    url = t.url!;
  });
  afterAll(() => t?.close());
  const post = (secret: string) =>
    fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: rpc('ping'),
    });

  it('a token over its burst gets 429 with Retry-After and the protocol header; another token of the same shop is unaffected', async () => {
    const a = await createMcpToken(url, t.token());
    const b = await createMcpToken(url, t.token());
    expect((await post('mcp_invalid')).status).toBe(401);
    expect([(await post(a)).status, (await post(a)).status]).toEqual([200, 200]);
    const limited = await post(a);
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(3);
    expect(limited.headers.get('mcp-protocol-version')).toBe('2025-11-25');
    expect(await limited.json()).toEqual({
      retryAfterSeconds: retryAfter,
      error: 'Rate limit exceeded: this token may make 20 requests per minute; retry later',
    });
    expect((await post(b)).status).toBe(200);
    await new Promise((r) => setTimeout(r, retryAfter * 1000));
    expect((await post(a)).status).toBe(200);
  });
});
