/** Test scaffolding for http/: a hand-made platform, a captured pino logger and a started server. */
import type { ResolvedApp, ResolvedPlatform } from '../../src/app/platform.ts';
import type { PageKey, PageMode } from '../../src/app/types.ts';
import { DEFAULT_PAGES } from '../../src/app/defaults.ts';
import { type StartedHttpServer, type HttpAppOptions, createHttpApp, startHttpServer } from '../../src/http/server.ts';
import { signSessionToken } from '../../src/http/session-token.ts';
import type { HttpRuntime } from '../../src/http/types.ts';
import { type Logger, createLogger } from '../../src/logger.ts';
import { SHOP } from '../kit/index.ts';

export { SHOP };

export function makeApp(handle: string, apiKey: string, apiSecret: string): ResolvedApp {
  return { handle, apiKey, apiSecret, appUrl: null };
}

export function makePlatform(apps: ResolvedApp[], mode: 'single' | 'multi' = apps.length > 1 ? 'multi' : 'single'): ResolvedPlatform {
  return {
    mode,
    apps,
    scopes: null,
    apiVersion: '2026-10',
    byApiKey: (key) => apps.find((a) => a.apiKey === key),
    byHandle: (h) => apps.find((a) => a.handle === h),
  };
}

export const DEFAULT_APP = makeApp('default', 'key-default-0001', 'secret-default-0001');

/** A pino logger writing JSON lines into `lines` (parsed). */
export { capturingLogger } from '../kit/index.ts';

export interface TestServerOptions extends HttpAppOptions {
  platform?: ResolvedPlatform;
  pages?: Partial<Record<PageKey, PageMode>>;
  db?: HttpRuntime['db'];
  logger?: Logger;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<StartedHttpServer & { runtime: HttpRuntime }> {
  const runtime: HttpRuntime = {
    config: { pages: { ...DEFAULT_PAGES, ...options.pages } },
    platform: options.platform ?? makePlatform([DEFAULT_APP]),
    db: options.db ?? { ping: async () => true },
    logger: options.logger ?? createLogger({ level: 'silent' }),
    version: '9.9.9-test',
  };
  const app = createHttpApp(runtime, { groups: options.groups, extra: options.extra, rateLimits: options.rateLimits });
  const server = await startHttpServer(app, { port: 0, hostname: '127.0.0.1' });
  return { ...server, runtime };
}

export function tokenFor(app: ResolvedApp = DEFAULT_APP, shop = SHOP, extra: { ttlSeconds?: number; now?: number } = {}): string {
  return signSessionToken({ apiKey: app.apiKey, apiSecret: app.apiSecret, shop, ...extra });
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
