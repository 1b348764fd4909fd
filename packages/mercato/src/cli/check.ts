import { loadRuntimeEnv } from '../app/env.ts';
import { resolvePlatform } from '../app/platform.ts';
import { ConfigError } from '../app/validate.ts';
import { applyDevDefaults } from './dev-defaults.ts';
import { loadConfig } from './load-config.ts';
import type { CliIo, CliValues } from './main.ts';

/** `mercato check`: validate the config and the environment, then print what the app defines. */
export async function runCheck(values: CliValues, io: CliIo): Promise<number> {
  const { instance, configPath, projectDir } = await loadConfig(io.cwd, values.config);
  const env = { ...io.env };
  // check judges the config as `mercato dev` would run it unless NODE_ENV says production
  if (env.NODE_ENV !== 'production') applyDevDefaults(env, instance.config.shopify);
  const problems: string[] = [];
  let platform: ReturnType<typeof resolvePlatform> | undefined;
  for (const step of [
    () => loadRuntimeEnv(env, { projectDir, mode: 'check' }),
    () => {
      platform = resolvePlatform(instance.config.shopify, env, projectDir);
    },
  ]) {
    try {
      step();
    } catch (error) {
      if (error instanceof ConfigError) problems.push(...error.problems);
      else throw error;
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const c = instance.config;
  const names = (o: object) => Object.keys(o).join(', ') || '(none)';
  io.out(`✓ ${configPath} is valid`);
  io.out(`  apps:       ${platform!.apps.map((a) => `${a.handle} (${a.appUrl ?? 'no app URL'})`).join(', ')} [${platform!.mode}-app mode]`);
  io.out(`  scopes:     ${platform!.scopes ?? '(none)'}`);
  io.out(`  flows:      ${names(c.flows)}`);
  io.out(`  providers:  ${names(c.providers)}`);
  io.out(`  crons:      ${c.crons.length === 0 ? '(none)' : c.crons.map((e) => `${e.flow}:${e.schedule}`).join(', ')}`);
  io.out(`  functions:  ${names(c.functions)}`);
  io.out(`  webhooks:   ${names(c.webhooks)}`);
  io.out(`  mcp:        ${c.mcp.enabled ? 'enabled' : 'disabled'}; tools: ${names(c.mcp.tools)}; resources: ${names(c.mcp.resources)}; permissions: ${names(c.mcp.permissions)}`);
  io.out(`  pages:      ${Object.entries(c.pages).map(([k, v]) => `${k}=${v}`).join(', ')}`);
  io.out(`  worker:     ${Object.entries(c.worker).map(([k, v]) => `${k}=${v}`).join(', ')}`);
  io.out(`  retry:      ${Object.entries(c.retryPolicy).map(([k, v]) => `${k}=${v}`).join(', ')}`);
  return 0;
}
