import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp, isMercatoInstance } from '../../src/app/app.ts';
import { defineFlow } from '../../src/app/define.ts';

const noop = defineFlow({ name: 'noop', input: z.object({}), run: () => null });

describe('configuration defaults', () => {
  it('fills every option of the spec table with its default', () => {
    const instance = defineApp().defineConfig({ flows: {} });
    expect(isMercatoInstance(instance)).toBe(true);
    const c = instance.config;
    expect(c.providers).toEqual({});
    expect(c.flows).toEqual({});
    expect(c.shopify).toEqual({});
    expect(c.functions).toEqual({});
    expect(c.mcp).toEqual({ enabled: true, crossShopAccess: false, permissions: {}, tools: {}, resources: {} });
    expect(c.webhooks).toEqual({});
    expect(c.crons).toEqual([]);
    expect(c.experimental).toEqual({ customPages: false, pages: {} });
    expect(c.pages).toEqual({ flows: 'visible', providers: 'visible', crons: 'visible', functions: 'visible', mcp: 'visible' });
    expect(c.worker).toEqual({
      concurrency: 5,
      pollIntervalMs: 1000,
      pollMaxIntervalMs: 5000,
      pollBackoffCoefficient: 1.5,
      leaseDurationMs: 10000,
      prefetch: 100, // ours (claiming ahead, docs/flows.md); the spec's table has the five above
    });
    expect(c.retryPolicy).toEqual({ maxAttempts: 3, initialIntervalMs: 1000, backoffCoefficient: 2, maxIntervalMs: 60000 });
    expect(c.onError).toBeUndefined();
  });

  it('merges partial worker and retry settings field by field', () => {
    const c = defineApp().defineConfig({ flows: { noop }, worker: { concurrency: 2 }, retryPolicy: { maxAttempts: 7 } }).config;
    expect(c.worker).toMatchObject({ concurrency: 2, pollIntervalMs: 1000, leaseDurationMs: 10000 });
    expect(c.retryPolicy).toMatchObject({ maxAttempts: 7, initialIntervalMs: 1000 });
  });

  it('takes page defaults from the base definition and lets the config override them', () => {
    const app = defineApp({ pages: { mcp: 'hidden', crons: 'disabled' } });
    expect(app.defineConfig({ flows: {} }).config.pages).toMatchObject({ mcp: 'hidden', crons: 'disabled', flows: 'visible' });
    expect(app.defineConfig({ flows: {}, pages: { crons: 'visible' } }).config.pages).toMatchObject({ mcp: 'hidden', crons: 'visible' });
  });

  it('dispatchFlow rejects clearly when no runtime is running', async () => {
    const instance = defineApp().defineConfig({ flows: { noop } });
    await expect(instance.dispatchFlow({ flowName: 'noop', input: {} })).rejects.toThrow(/runtime is not running/);
  });
});
