/** Start-up validation of every number that ends up in a Node.js timer (which fires after 1 ms beyond 2^31 − 1 ms). */
import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, retryDelayMs } from '../../src/flows/policy.ts';
import { problemsAfter } from './validate-fixture.ts';

const TOO_LONG = `must be at most 2147483647 ms (about 24.8 days; Node.js fires a longer timer after 1 ms)`;

function rule(name: string, change: (config: any) => void, expected: string[]): void {
  it(name, () => {
    expect(problemsAfter(change)).toEqual(expected);
  });
}

describe('configuration validation: timer limits', () => {
  rule(
    '2^31 − 1 ms is accepted everywhere',
    (c) => {
      c.flows.syncOrders.timeout = MAX_TIMER_MS;
      c.flows.syncOrders.retryPolicy = { initialIntervalMs: MAX_TIMER_MS, maxIntervalMs: MAX_TIMER_MS, backoffCoefficient: 1e6 };
      c.retryPolicy = { initialIntervalMs: MAX_TIMER_MS, maxIntervalMs: MAX_TIMER_MS };
      c.worker = {
        pollIntervalMs: MAX_TIMER_MS,
        pollMaxIntervalMs: MAX_TIMER_MS,
        leaseDurationMs: MAX_TIMER_MS,
        pollBackoffCoefficient: 1e6,
      };
    },
    [],
  );
  rule(
    'a flow timeout over 2^31 − 1 ms is refused',
    (c) => {
      c.flows.syncOrders.timeout = MAX_TIMER_MS + 1;
    },
    [`flows.syncOrders.timeout: ${TOO_LONG} (got 2147483648)`],
  );
  rule(
    'a flow timeout of Infinity is refused',
    (c) => {
      c.flows.syncOrders.timeout = Number.POSITIVE_INFINITY;
    },
    ['flows.syncOrders.timeout: must be a positive finite number of milliseconds (got Infinity)'],
  );
  rule(
    'retry intervals over 2^31 − 1 ms are refused at flow and app level',
    (c) => {
      c.flows.syncOrders.retryPolicy = { initialIntervalMs: 1e12 };
      c.retryPolicy = { maxIntervalMs: 2 ** 32, initialIntervalMs: Number.POSITIVE_INFINITY };
    },
    [
      `retryPolicy.initialIntervalMs: must be a positive finite number (got Infinity)`,
      `retryPolicy.maxIntervalMs: ${TOO_LONG} (got 4294967296)`,
      `flows.syncOrders.retryPolicy.initialIntervalMs: ${TOO_LONG} (got 1000000000000)`,
    ].sort(),
  );
  rule(
    'worker intervals and the lease over 2^31 − 1 ms are refused',
    (c) => {
      c.worker = { pollIntervalMs: 2 ** 31, pollMaxIntervalMs: 1e15, leaseDurationMs: Number.POSITIVE_INFINITY };
    },
    [
      `worker.pollIntervalMs: ${TOO_LONG} (got 2147483648)`,
      `worker.pollMaxIntervalMs: ${TOO_LONG} (got 1000000000000000)`,
      'worker.leaseDurationMs: must be a positive finite number (got Infinity)',
    ],
  );

  it('a retry delay never exceeds maxIntervalMs or 2^31 − 1 ms, however large the coefficient', () => {
    const policy = { maxAttempts: 500, initialIntervalMs: 1000, backoffCoefficient: 1e6, maxIntervalMs: 60_000 };
    expect([1, 2, 3, 400].map((n) => retryDelayMs(policy, n))).toEqual([1000, 60_000, 60_000, 60_000]);
    expect(retryDelayMs({ ...policy, maxIntervalMs: Number.MAX_VALUE }, 400)).toBe(MAX_TIMER_MS);
  });
});
