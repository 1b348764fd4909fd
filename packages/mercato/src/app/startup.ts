/**
 * The start-up checks of the environment and the platform configuration, run together: `mercato dev`/`start`/`worker`
 * (createRuntime) and `mercato check` report every problem of both in one ConfigError (docs/environment.md).
 */
import { type RunMode, type RuntimeEnv, loadRuntimeEnv } from './env.ts';
import { type ResolvedPlatform, resolvePlatform } from './platform.ts';
import type { PlatformConfig } from './types.ts';
import { ConfigError } from './validate.ts';

/** Runs each step and gathers the problems of every ConfigError; any other error is thrown as is. */
export function collectProblems(steps: Array<() => void>): string[] {
  const problems: string[] = [];
  for (const step of steps) {
    try {
      step();
    } catch (error) {
      if (error instanceof ConfigError) problems.push(...error.problems);
      else throw error;
    }
  }
  return problems;
}

/** The validated environment and the resolved platform apps; throws one ConfigError listing the problems of both. */
export function resolveStartup(
  shopify: PlatformConfig | undefined,
  rawEnv: NodeJS.ProcessEnv,
  options: { projectDir: string; mode: RunMode },
): { env: RuntimeEnv; platform: ResolvedPlatform } {
  let env: RuntimeEnv | undefined;
  let platform: ResolvedPlatform | undefined;
  const problems = collectProblems([
    () => {
      env = loadRuntimeEnv(rawEnv, options);
    },
    () => {
      platform = resolvePlatform(shopify ?? {}, rawEnv, options.projectDir);
    },
  ]);
  if (problems.length > 0) throw new ConfigError(problems);
  return { env: env!, platform: platform! };
}
