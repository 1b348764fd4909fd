/**
 * Start-up validation: general behaviour, flows, worker, retry policies, pages, experimental, onError and unknown options.
 * Each rule has its own test that breaks one thing in an otherwise valid config and asserts the exact problem list.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { ConfigError, collectConfigProblems, validateConfig } from '../../src/app/validate.ts';
import { problemsAfter, validBase, validConfig } from './validate-fixture.ts';

function rule(name: string, change: (config: any, base: any) => void, expected: string[]): void {
  it(name, () => {
    expect(problemsAfter(change)).toEqual(expected);
  });
}

describe('configuration validation: general', () => {
  it('a config using every option validly has zero problems', () => {
    expect(collectConfigProblems(validBase(), validConfig())).toEqual([]);
    expect(() => validateConfig(validBase(), validConfig())).not.toThrow();
  });

  it('the smallest config ({ flows: {} } with an empty base) is valid', () => {
    expect(collectConfigProblems({}, { flows: {} })).toEqual([]);
  });

  it('reports several problems of different options together, in one ConfigError', () => {
    const config = validConfig();
    config.crons[2].flow = 'syncOrderz';
    config.worker.concurrency = 1.5;
    config.flows.sendDigest.name = 'digest';
    config.pages.mcp = 'off';
    const expected = [
      'flows.sendDigest.name: must equal its key "sendDigest" (got "digest")',
      'crons[2].flow: "syncOrderz" is not a registered flow',
      'pages.mcp: must be one of visible, hidden, disabled (got "off")',
      'worker.concurrency: must be a positive integer (got 1.5)',
    ];
    expect(collectConfigProblems(validBase(), config)).toEqual(expected);
    let error: unknown;
    try {
      validateConfig(validBase(), config);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual(expected);
    expect((error as ConfigError).message).toBe(
      `Invalid Mercato configuration (4 problems):\n${expected.map((p) => `  - ${p}`).join('\n')}`,
    );
  });

  it('defineConfig runs the validation and throws ConfigError with every problem', () => {
    const app = defineApp({ pages: { flows: 'gone' as any } });
    const flow = app.defineFlow({ name: 'a', input: z.object({}), run: () => 1 });
    expect(() => app.defineConfig({ flows: { a: flow }, worker: { leaseDurationMs: -1 } })).toThrowError(
      new ConfigError([
        'defineApp.pages.flows: must be one of visible, hidden, disabled (got "gone")',
        'worker.leaseDurationMs: must be a positive finite number (got -1)',
      ]),
    );
  });

  it('the demo app config (examples/demo) is valid', async () => {
    const demo = await import('../../../../examples/demo/service.config.ts');
    expect(demo.default.config.flows).toHaveProperty('syncOrders');
  });
});

describe('configuration validation: top level', () => {
  it('the configuration must be an object', () => {
    expect(collectConfigProblems({}, null as any)).toEqual(['defineConfig: the configuration must be an object (got null)']);
  });
  it('the base definition must be an object', () => {
    expect(collectConfigProblems('x' as any, { flows: {} })).toEqual(['defineApp: the base definition must be an object (got "x")']);
  });
  rule(
    'unknown option names the key and suggests the closest one',
    (c) => {
      c.cron = c.crons;
      delete c.crons;
    },
    [
      'cron: unknown option (did you mean "crons"?); allowed: flows, shopify, functions, mcp, webhooks, crons, experimental, pages, worker, retryPolicy, onError, rateLimits, metrics, retention',
    ],
  );
  rule(
    'unknown option without a close match',
    (c) => {
      c.database = 'pg';
    },
    [
      'database: unknown option; allowed: flows, shopify, functions, mcp, webhooks, crons, experimental, pages, worker, retryPolicy, onError, rateLimits, metrics, retention',
    ],
  );
  rule(
    'providers given to defineConfig instead of defineApp',
    (c, b) => {
      c.providers = b.providers;
    },
    ['providers: belongs in the base definition: defineApp({ providers }), not defineConfig'],
  );
  rule(
    'unknown option of the base definition',
    (_c, b) => {
      b.flows = {};
    },
    ['defineApp.flows: unknown option of the base definition (flows belongs in defineConfig); allowed: providers, pages'],
  );
});

describe('configuration validation: flows', () => {
  rule(
    'flows is required',
    (c) => {
      delete c.flows;
      c.crons = [];
    },
    ['flows: is required (an object of flow definitions; use {} when the app has none)'],
  );
  rule(
    'flows must be an object',
    (c) => {
      c.flows = [];
      c.crons = [];
    },
    ['flows: must be an object mapping keys to flow definitions (got an array)'],
  );
  rule(
    'a flow entry must be an object',
    (c) => {
      c.flows.sendDigest = 'sendDigest';
    },
    ['flows.sendDigest: must be a flow definition object (got "sendDigest")'],
  );
  rule(
    'a flow name must equal its key',
    (c) => {
      c.flows.syncOrders.name = 'x';
    },
    ['flows.syncOrders.name: must equal its key "syncOrders" (got "x")'],
  );
  rule(
    'a flow name must be a string',
    (c) => {
      delete c.flows.syncOrders.name;
    },
    ['flows.syncOrders.name: must be a string equal to its key "syncOrders" (got undefined)'],
  );
  rule(
    'a flow description must be a string',
    (c) => {
      c.flows.syncOrders.description = 42;
    },
    ['flows.syncOrders.description: must be a string (got 42)'],
  );
  rule(
    'a flow input must be a schema',
    (c) => {
      c.flows.sendDigest.input = { channel: 'string' };
    },
    ['flows.sendDigest.input: must be a schema (an object with safeParse, e.g. z.object({...})) (got an object)'],
  );
  rule(
    'a flow run must be a function',
    (c) => {
      c.flows.sendDigest.run = 'go';
    },
    ['flows.sendDigest.run: must be a function (got "go")'],
  );
  rule(
    'a flow timeout must be positive',
    (c) => {
      c.flows.syncOrders.timeout = 0;
    },
    ['flows.syncOrders.timeout: must be a positive finite number of milliseconds (got 0)'],
  );
  rule(
    'a flow timeout must be finite',
    (c) => {
      c.flows.syncOrders.timeout = Number.POSITIVE_INFINITY;
    },
    ['flows.syncOrders.timeout: must be a positive finite number of milliseconds (got Infinity)'],
  );
  rule(
    'a flow concurrency must be a positive integer or null',
    (c) => {
      c.flows.syncOrders.concurrency = 0;
      c.flows.sendDigest.concurrency = 2.5;
    },
    [
      'flows.syncOrders.concurrency: must be a positive integer, null for no limit, or { limit, key } (got 0)',
      'flows.sendDigest.concurrency: must be a positive integer, null for no limit, or { limit, key } (got 2.5)',
    ],
  );
  rule(
    'flow retry policy numbers must be positive (maxAttempts an integer)',
    (c) => {
      c.flows.syncOrders.retryPolicy = { maxAttempts: 0, initialIntervalMs: -5, backoffCoefficient: Number.NaN, maxIntervalMs: '1s' };
    },
    [
      'flows.syncOrders.retryPolicy.maxAttempts: must be a positive integer (got 0)',
      'flows.syncOrders.retryPolicy.initialIntervalMs: must be a positive finite number (got -5)',
      'flows.syncOrders.retryPolicy.backoffCoefficient: must be a positive finite number (got NaN)',
      'flows.syncOrders.retryPolicy.maxIntervalMs: must be a positive finite number (got "1s")',
    ],
  );
  rule(
    'flow retry policy rejects unknown fields',
    (c) => {
      c.flows.syncOrders.retryPolicy = { maxAttempt: 2 };
    },
    [
      'flows.syncOrders.retryPolicy.maxAttempt: unknown retry policy field (did you mean "maxAttempts"?); allowed: maxAttempts, initialIntervalMs, backoffCoefficient, maxIntervalMs',
    ],
  );
  rule(
    'flow retry policy must be an object',
    (c) => {
      c.flows.syncOrders.retryPolicy = 3;
    },
    [
      'flows.syncOrders.retryPolicy: must be an object with some of maxAttempts, initialIntervalMs, backoffCoefficient, maxIntervalMs (got 3)',
    ],
  );
});

describe('configuration validation: worker and retry policy', () => {
  rule(
    'worker must be an object',
    (c) => {
      c.worker = 4;
    },
    [
      'worker: must be an object with some of concurrency, pollIntervalMs, pollMaxIntervalMs, pollBackoffCoefficient, leaseDurationMs, prefetch (got 4)',
    ],
  );
  rule(
    'worker concurrency must be a positive integer',
    (c) => {
      c.worker.concurrency = 0;
    },
    ['worker.concurrency: must be a positive integer (got 0)'],
  );
  rule(
    'worker prefetch must be an integer from 0 to 1000',
    (c) => {
      c.worker.prefetch = 1.5;
    },
    ['worker.prefetch: must be an integer from 0 (off) to 1000 (got 1.5)'],
  );
  rule(
    'worker prefetch above 1000 is refused',
    (c) => {
      c.worker.prefetch = 5000;
    },
    ['worker.prefetch: must be an integer from 0 (off) to 1000 (got 5000)'],
  );
  rule(
    'worker numbers must be positive finite numbers',
    (c) => {
      c.worker = { pollIntervalMs: 0, pollMaxIntervalMs: -1, pollBackoffCoefficient: Number.POSITIVE_INFINITY, leaseDurationMs: '30s' };
    },
    [
      'worker.pollIntervalMs: must be a positive finite number (got 0)',
      'worker.pollMaxIntervalMs: must be a positive finite number (got -1)',
      'worker.pollBackoffCoefficient: must be a positive finite number (got Infinity)',
      'worker.leaseDurationMs: must be a positive finite number (got "30s")',
    ],
  );
  rule(
    'worker rejects unknown keys',
    (c) => {
      c.worker.concurency = 3;
    },
    [
      'worker.concurency: unknown worker option (did you mean "concurrency"?); allowed: concurrency, pollIntervalMs, pollMaxIntervalMs, pollBackoffCoefficient, leaseDurationMs, prefetch',
    ],
  );
  rule(
    'worker fields set to undefined are allowed (defaults apply)',
    (c) => {
      c.worker = { concurrency: undefined };
    },
    [],
  );
  rule(
    'retryPolicy numbers must be positive (maxAttempts an integer)',
    (c) => {
      c.retryPolicy = { maxAttempts: 2.5, initialIntervalMs: 0, backoffCoefficient: -2, maxIntervalMs: null };
    },
    [
      'retryPolicy.maxAttempts: must be a positive integer (got 2.5)',
      'retryPolicy.initialIntervalMs: must be a positive finite number (got 0)',
      'retryPolicy.backoffCoefficient: must be a positive finite number (got -2)',
      'retryPolicy.maxIntervalMs: must be a positive finite number (got null)',
    ],
  );
  rule(
    'retryPolicy rejects unknown keys',
    (c) => {
      c.retryPolicy.deadlineMs = 1000;
    },
    ['retryPolicy.deadlineMs: unknown retry policy field; allowed: maxAttempts, initialIntervalMs, backoffCoefficient, maxIntervalMs'],
  );
  rule(
    'retryPolicy must be an object',
    (c) => {
      c.retryPolicy = [3];
    },
    ['retryPolicy: must be an object with some of maxAttempts, initialIntervalMs, backoffCoefficient, maxIntervalMs (got an array)'],
  );
});

describe('configuration validation: pages, experimental, onError', () => {
  rule(
    'pages keys are the five pages',
    (c) => {
      c.pages.logs = 'hidden';
    },
    ['pages.logs: unknown page; allowed: flows, providers, crons, functions, mcp'],
  );
  rule(
    'pages values are visible, hidden or disabled',
    (c) => {
      c.pages.crons = 'off';
    },
    ['pages.crons: must be one of visible, hidden, disabled (got "off")'],
  );
  rule(
    'pages must be an object',
    (c) => {
      c.pages = 'hidden';
    },
    ['pages: must be an object mapping pages (flows, providers, crons, functions, mcp) to modes (got "hidden")'],
  );
  rule(
    'base pages keys are checked too',
    (_c, b) => {
      b.pages.function = 'hidden';
    },
    ['defineApp.pages.function: unknown page (did you mean "functions"?); allowed: flows, providers, crons, functions, mcp'],
  );
  rule(
    'base pages values are checked too',
    (_c, b) => {
      b.pages.functions = true;
    },
    ['defineApp.pages.functions: must be one of visible, hidden, disabled (got true)'],
  );
  rule(
    'experimental must be an object',
    (c) => {
      c.experimental = true;
    },
    ['experimental: must be an object (got true)'],
  );
  rule(
    'experimental.customPages must be a boolean',
    (c) => {
      c.experimental.customPages = 'yes';
    },
    ['experimental.customPages: must be a boolean (got "yes")'],
  );
  rule(
    'experimental rejects unknown keys',
    (c) => {
      c.experimental.customPage = true;
    },
    ['experimental.customPage: unknown experimental option (did you mean "customPages"?); allowed: customPages, pages'],
  );
  rule(
    'onError must be a function',
    (c) => {
      c.onError = 'log';
    },
    ['onError: must be a function (error, context?) (got "log")'],
  );
});

describe('configuration validation: metrics', () => {
  rule('metrics is an object', (c) => (c.metrics = 'secret'), ['metrics: must be an object { token? } (got a string)']);
  rule('known metrics keys only: token', (c) => (c.metrics = { tokn: 'x' }), [
    'metrics.tokn: unknown metrics option (did you mean "token"?); allowed: token',
  ]);
  rule('metrics.token is a non-empty string', (c) => (c.metrics = { token: '  ' }), ['metrics.token: must be a non-empty string (empty)']);
  rule('metrics.token is a string', (c) => (c.metrics = { token: 42 }), ['metrics.token: must be a non-empty string (got number)']);
  it('a token is accepted and resolved as given', () => {
    expect(problemsAfter((c) => (c.metrics = { token: 'abc' }))).toEqual([]);
    const app = defineApp();
    const instance = app.defineConfig({ flows: {}, metrics: { token: 'abc' } });
    expect(instance.config.metrics).toEqual({ token: 'abc' });
  });
});
