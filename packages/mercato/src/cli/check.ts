import { existsSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { findAppTomls, type ResolvedPlatform } from '../app/platform.ts';
import { tomlWarnings } from './toml-check.ts';
import { collectProblems, resolveStartup } from '../app/startup.ts';
import { ConfigError } from '../app/validate.ts';
import { type LoadedRoute, inspectRoutes } from '../routes/loader.ts';
import { applyDevDefaults } from './dev-defaults.ts';
import { type ModuleLoader, loadConfig } from './load-config.ts';
import type { MercatoInstance } from '../app/app.ts';
import type { CliIo, CliValues } from './io.ts';

/** `mercato check`: validate the config, the environment and the public routes, then print what the app defines. */
export async function runCheck(values: CliValues, io: CliIo): Promise<number> {
  const { instance, configPath, projectDir, loadModule, dispose } = await loadConfig(io.cwd, values.config);
  try {
    return await report(instance, configPath, projectDir, loadModule, io);
  } finally {
    dispose();
  }
}

async function report(
  instance: MercatoInstance<any, any>,
  configPath: string,
  projectDir: string,
  loadModule: ModuleLoader,
  io: CliIo,
): Promise<number> {
  const env = { ...io.env };
  // check judges the config as `mercato dev` would run it unless NODE_ENV says production
  if (env.NODE_ENV !== 'production') applyDevDefaults(env, instance.config.shopify);
  let platform: ResolvedPlatform | undefined;
  const problems = collectProblems([
    () => {
      platform = resolveStartup(instance.config.shopify, env, { projectDir, mode: 'check' }).platform;
    },
  ]);
  // the routes/ folder, as `mercato dev` and `mercato start` would load it (a clash, a file without auth, ...)
  const routes = await inspectRoutes(join(projectDir, 'routes'), loadModule);
  problems.push(...routes.problems);
  if (problems.length > 0) throw new ConfigError(problems);
  const c = instance.config;
  const names = (o: object) => Object.keys(o).join(', ') || '(none)';
  io.out(`✓ ${configPath} is valid`);
  for (const warning of appTomlWarnings(instance, projectDir, platform!)) io.err(`warning: ${warning}`);
  io.out(`  apps:       ${platform!.apps.map((a) => `${a.handle} (${a.appUrl ?? 'no app URL'})`).join(', ')} [${platform!.mode}-app mode]`);
  io.out(`  scopes:     ${platform!.scopes ?? '(none)'}`);
  io.out(`  flows:      ${names(c.flows)}`);
  io.out(`  providers:  ${names(c.providers)}`);
  io.out(`  crons:      ${c.crons.length === 0 ? '(none)' : c.crons.map((e) => `${e.flow}:${e.schedule}`).join(', ')}`);
  io.out(`  functions:  ${names(c.functions)}`);
  io.out(`  webhooks:   ${names(c.webhooks)}`);
  io.out(
    `  mcp:        ${c.mcp.enabled ? 'enabled' : 'disabled'}; tools: ${names(c.mcp.tools)}; resources: ${names(c.mcp.resources)}; permissions: ${names(c.mcp.permissions)}`,
  );
  io.out(`  routes:     ${routesLine(routes.routes)}`);
  io.out(
    `  pages:      ${Object.entries(c.pages)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`,
  );
  io.out(
    `  worker:     ${Object.entries(c.worker)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`,
  );
  io.out(
    `  retry:      ${Object.entries(c.retryPolicy)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`,
  );
  return 0;
}

/** The app TOML files the config uses (single-app: those found in the project folder; multi-app: `apps.*.toml`), checked. */
function appTomlWarnings(instance: MercatoInstance<any, any>, projectDir: string, platform: ResolvedPlatform): string[] {
  const shopify = instance.config.shopify ?? {};
  const files =
    shopify.apps === undefined
      ? findAppTomls(projectDir)
      : Object.values(shopify.apps)
          .map((app) => app.toml)
          .filter((t): t is string => typeof t === 'string' && t.trim() !== '');
  const handlerTopics = Object.keys(instance.config.webhooks);
  const warnings: string[] = [];
  for (const file of new Set(files)) {
    const absolute = resolve(projectDir, file);
    if (!existsSync(absolute)) continue; // a missing apps.*.toml is a configuration error, reported before
    const shown = relative(projectDir, absolute) || file;
    warnings.push(...tomlWarnings({ path: shown, text: readFileSync(absolute, 'utf8'), handlerTopics, apiVersion: platform.apiVersion }));
  }
  return warnings;
}

function routesLine(routes: LoadedRoute[]): string {
  if (routes.length === 0) return '(none)';
  return routes.map((r) => `${r.path} (${r.methods.join(', ')}; auth ${r.definition.auth === 'none' ? 'none' : 'function'})`).join(', ');
}
