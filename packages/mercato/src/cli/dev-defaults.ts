import type { PlatformConfig } from '../app/types.ts';

/** Development credentials used by `mercato dev` when none are set (single-app mode); see docs/environment.md. */
export const DEV_API_KEY = 'mercato-dev-api-key';
export const DEV_API_SECRET = 'mercato-dev-api-secret';

/** Fills missing single-app credentials with the documented development values. Returns the names it filled. */
export function applyDevDefaults(env: NodeJS.ProcessEnv, shopify: PlatformConfig): string[] {
  if (shopify.apps) return [];
  const filled: string[] = [];
  // either name counts as set (the platform CLI sets SHOPIFY_API_KEY and SHOPIFY_API_SECRET)
  if (!env.PLATFORM_API_KEY?.trim() && !env.SHOPIFY_API_KEY?.trim()) {
    env.PLATFORM_API_KEY = DEV_API_KEY;
    filled.push('PLATFORM_API_KEY');
  }
  if (!env.PLATFORM_API_SECRET?.trim() && !env.SHOPIFY_API_SECRET?.trim()) {
    env.PLATFORM_API_SECRET = DEV_API_SECRET;
    filled.push('PLATFORM_API_SECRET');
  }
  return filled;
}

/**
 * The platform CLI's variables when `mercato dev` runs under `shopify app dev` (the CLI sets SHOPIFY_API_KEY and
 * SHOPIFY_API_SECRET for its web process) and PLATFORM_ORIGIN is unset: dev then talks to the real platform and starts
 * no simulator. Null otherwise.
 */
export function platformCliVariables(env: NodeJS.ProcessEnv): string[] | null {
  if (env.PLATFORM_ORIGIN?.trim()) return null;
  if (!env.SHOPIFY_API_KEY?.trim() || !env.SHOPIFY_API_SECRET?.trim()) return null;
  return ['SHOPIFY_API_KEY', 'SHOPIFY_API_SECRET', 'SCOPES', 'SHOPIFY_APP_URL', 'HOST', 'BACKEND_PORT', 'PORT'].filter((n) =>
    env[n]?.trim(),
  );
}
