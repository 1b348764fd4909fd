/**
 * The platform of `mercato dev`: unless PLATFORM_ORIGIN is set, the platform simulator (packages/platform-sim) starts
 * on a fixed port (DEFAULT_SIM_PORT, `--sim-port`, MERCATO_SIM_PORT; its URLs stay valid across restarts) with the two demo shops, PLATFORM_ORIGIN points at it, it learns the apps' keys and secrets and
 * their function handles (as if deployed), and it delivers webhooks to this server. The admin preview lists its shops.
 * See docs/platform.md and docs/functions.md.
 */
import type { FunctionApiType, PlatformSim } from 'platform-sim';
import type { ResolvedPlatform } from '../app/platform.ts';
import type { FunctionDefinition } from '../app/types.ts';
import { API_TYPES } from '../functions/kinds.ts';
import { DEV_SHOPS } from './preview.ts';

export interface DevPlatform {
  url: string;
  /** The simulated shops (the admin preview's shop list). */
  shops(): string[];
  /** Registers the runtime's apps (and each app's functions) and makes webhooks go to `appUrl` (this server). */
  attach(platform: Pick<ResolvedPlatform, 'apps' | 'scopes'>, appUrl: string, functions?: Record<string, FunctionDefinition>): void;
  close(): Promise<void>;
}

/** The simulator's port in `mercato dev` unless `--sim-port` or MERCATO_SIM_PORT says otherwise. */
export const DEFAULT_SIM_PORT = 3001;

export class SimulatorPortError extends Error {
  constructor(readonly port: number) {
    super(
      `the platform simulator cannot listen on port ${port}: it is in use (another mercato dev?). Stop that process, or pick another port with --sim-port <n> or MERCATO_SIM_PORT`,
    );
    this.name = 'SimulatorPortError';
  }
}

/** Starts the simulator and sets `env.PLATFORM_ORIGIN`; undefined when the user set PLATFORM_ORIGIN (or in production). */
export async function startDevPlatform(env: NodeJS.ProcessEnv, options: { port?: number } = {}): Promise<DevPlatform | undefined> {
  if (env.PLATFORM_ORIGIN?.trim() || env.NODE_ENV === 'production') return undefined;
  const { start } = await import('platform-sim');
  const port = options.port ?? DEFAULT_SIM_PORT;
  let sim: PlatformSim;
  try {
    sim = await start({ port, hostname: '127.0.0.1', shops: DEV_SHOPS });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new SimulatorPortError(port);
    throw error;
  }
  env.PLATFORM_ORIGIN = sim.url;
  return {
    url: sim.url,
    shops: () => [...sim.state.shops.keys()],
    attach(platform, appUrl, functions = {}) {
      const deployed = Object.values(functions).map((f) => ({
        handle: f.handle,
        apiType: API_TYPES[f.type][0] as FunctionApiType,
        title: f.title,
      }));
      for (const app of platform.apps)
        sim.addApp({ apiKey: app.apiKey, apiSecret: app.apiSecret, appUrl, scopes: platform.scopes ?? undefined, functions: deployed });
    },
    close: () => sim.close(),
  };
}
