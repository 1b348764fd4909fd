/** The `retention` option: its validation (every problem with its path) and its resolution with the defaults. */
import { describe, expect, it } from 'vitest';
import { defineApp } from '../../src/app/app.ts';
import { ConfigError } from '../../src/app/validate.ts';
import { problemsAfter } from './validate-fixture.ts';

const DAY = 86_400_000;

describe('configuration validation: retention', () => {
  it('accepts durations, numbers of ms, false and the minimums', () => {
    expect(
      problemsAfter((c) => {
        c.retention = { runs: '14d', mcpAudit: false, webhookDeliveries: '2d', cronTicks: DAY, batchSize: 5000, interval: '15m' };
      }),
    ).toEqual([]);
  });

  it('refuses a non-object, unknown keys, bad durations, periods below their minimum, bad batch sizes and intervals', () => {
    expect(problemsAfter((c) => (c.retention = '30d'))).toEqual([
      `retention: must be an object like { runs: '30d', mcpAudit: '90d' } (got "30d")`,
    ]);
    const problems = problemsAfter((c) => {
      c.retention = {
        runs: '30 days',
        mcpAudit: -5,
        webhookDeliveries: '4h',
        cronTicks: '1h',
        batchSize: 0,
        interval: '10s',
        run: '1d',
      };
    });
    expect(problems).toEqual([
      expect.stringMatching(/^retention\.run: unknown retention option.*runs/),
      `retention.runs: must be a duration (ms or a string like 30d, 12h) or false to keep forever (got "30 days")`,
      `retention.mcpAudit: must be a duration (ms or a string like 30d, 12h) or false to keep forever (got -5)`,
      `retention.webhookDeliveries: must be at least 2d: a platform retry of a delivery must still find its record, or it is handled twice (got "4h")`,
      `retention.cronTicks: must be at least 1d: a scheduler needs recent tick rows to fire each tick exactly once (got "1h")`,
      `retention.batchSize: must be a positive integer of at most 100000 (got 0)`,
      `retention.interval: must be a duration from 1m to 7d (a string like 1h) (got "10s")`,
    ]);
    expect(problemsAfter((c) => (c.retention = { runs: true, batchSize: 1.5 }))).toEqual([
      `retention.runs: must be a duration (ms or a string like 30d, 12h) or false to keep forever (got true)`,
      `retention.batchSize: must be a positive integer of at most 100000 (got 1.5)`,
    ]);
  });

  it('defineConfig throws the ConfigError and resolves the defaults and the given periods in ms (false → kept forever)', () => {
    expect(() => defineApp().defineConfig({ flows: {}, retention: { cronTicks: '5m' } })).toThrow(ConfigError);
    expect(defineApp().defineConfig({ flows: {} }).config.retention).toEqual({
      runs: 30 * DAY,
      mcpAudit: 90 * DAY,
      webhookDeliveries: 7 * DAY,
      cronTicks: 7 * DAY,
      batchSize: 1000,
      intervalMs: 3_600_000,
    });
    expect(
      defineApp().defineConfig({ flows: {}, retention: { runs: false, mcpAudit: '12h', batchSize: 50, interval: '2h' } }).config.retention,
    ).toEqual({
      runs: null,
      mcpAudit: 12 * 3_600_000,
      webhookDeliveries: 7 * DAY,
      cronTicks: 7 * DAY,
      batchSize: 50,
      intervalMs: 2 * 3_600_000,
    });
  });
});
