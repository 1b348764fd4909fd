/**
 * Start-up validation of the configuration. Every problem names its path; all are reported together.
 * The rules live in ./validate/; docs/configuration-validation.md lists each one with an example message.
 *
 * Paths start at the object given to `defineConfig({...})` (`crons[2].flow`, `worker.concurrency`). Options of the
 * base definition `defineApp({...})` use `providers.…` (only the base has providers) and `defineApp.pages.…`.
 */
import type { AppBase, AppConfigInput } from './types.ts';
import { checkCrons } from './validate/crons.ts';
import { checkFlows, checkRetryPolicy, checkWorker } from './validate/flows.ts';
import { checkMcp } from './validate/mcp.ts';
import { checkExperimental, checkOnError, checkPages, checkShopify, checkWebhooks } from './validate/options.ts';
import { checkFunctions, checkProviders } from './validate/providers.ts';
import { at, checkKnownKeys, got, isPlainObject, Problems } from './validate/util.ts';
import { checkMetrics, checkRateLimits } from './validate/rate-limits.ts';
import { checkRetention } from './validate/retention.ts';

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(
      `Invalid Mercato configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Options `defineConfig` accepts. */
export const CONFIG_KEYS = [
  'flows',
  'shopify',
  'functions',
  'mcp',
  'webhooks',
  'crons',
  'experimental',
  'pages',
  'worker',
  'retryPolicy',
  'onError',
  'rateLimits',
  'metrics',
  'retention',
] as const;
/** Options `defineApp` accepts. */
export const BASE_KEYS = ['providers', 'pages'] as const;

export function collectConfigProblems(base: AppBase<any>, config: AppConfigInput<any>): string[] {
  const problems = new Problems();
  const baseObj: Record<string, unknown> = isPlainObject(base) ? base : {};
  if (base !== undefined && !isPlainObject(base)) problems.add('defineApp', `the base definition must be an object ${got(base)}`);
  if (!isPlainObject(config)) {
    problems.add('defineConfig', `the configuration must be an object ${got(config)}`);
    checkBase(problems, baseObj);
    return problems.list;
  }

  for (const key of Object.keys(config)) {
    if (key === 'providers') problems.add('providers', 'belongs in the base definition: defineApp({ providers }), not defineConfig');
  }
  checkKnownKeys(problems, '', Object.fromEntries(Object.entries(config).filter(([key]) => key !== 'providers')), CONFIG_KEYS, 'option');
  checkFlows(problems, config.flows);
  checkBase(problems, baseObj);
  checkFunctions(problems, config.functions);
  checkCrons(problems, config.crons, config.flows);
  checkWebhooks(problems, config.webhooks);
  checkMcp(problems, config.mcp);
  checkShopify(problems, config.shopify);
  checkPages(problems, 'pages', config.pages);
  checkExperimental(problems, config.experimental);
  checkWorker(problems, config.worker);
  if (config.retryPolicy !== undefined) checkRetryPolicy(problems, 'retryPolicy', config.retryPolicy);
  checkOnError(problems, config.onError);
  checkRateLimits(problems, config.rateLimits);
  checkMetrics(problems, config.metrics);
  checkRetention(problems, config.retention);
  return problems.list;
}

function checkBase(problems: Problems, base: Record<string, unknown>): void {
  for (const key of Object.keys(base)) {
    if ((BASE_KEYS as readonly string[]).includes(key)) continue;
    const where = key === 'flows' || (CONFIG_KEYS as readonly string[]).includes(key) ? ` (${key} belongs in defineConfig)` : '';
    problems.add(at('defineApp', key), `unknown option of the base definition${where}; allowed: ${BASE_KEYS.join(', ')}`);
  }
  checkProviders(problems, base.providers);
  checkPages(problems, 'defineApp.pages', base.pages);
}

export function validateConfig(base: AppBase<any>, config: AppConfigInput<any>): void {
  const problems = collectConfigProblems(base, config);
  if (problems.length > 0) throw new ConfigError(problems);
}
