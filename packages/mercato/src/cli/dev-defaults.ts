import type { PlatformConfig } from '../app/types.ts';

/** Development credentials used by `mercato dev` when none are set (single-app mode); see docs/environment.md. */
export const DEV_API_KEY = 'mercato-dev-api-key';
export const DEV_API_SECRET = 'mercato-dev-api-secret';

/** Fills missing single-app credentials with the documented development values. Returns the names it filled. */
export function applyDevDefaults(env: NodeJS.ProcessEnv, shopify: PlatformConfig): string[] {
  if (shopify.apps) return [];
  const filled: string[] = [];
  if (!env.PLATFORM_API_KEY) {
    env.PLATFORM_API_KEY = DEV_API_KEY;
    filled.push('PLATFORM_API_KEY');
  }
  if (!env.PLATFORM_API_SECRET) {
    env.PLATFORM_API_SECRET = DEV_API_SECRET;
    filled.push('PLATFORM_API_SECRET');
  }
  return filled;
}
