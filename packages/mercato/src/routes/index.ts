/** Public routes: the loader and router, wired to their dependencies (dispatch with trigger `route`, forShop, connectors). */
import { join } from 'node:path';
import type { Hono } from 'hono';
import { type DispatchFn, dispatchFlowFor } from '../flows/dispatch.ts';
import { type InstallationLookup, createForShop } from './for-shop.ts';
import { type LoadedRoute, loadRoutes } from './loader.ts';
import type { ShopContext } from './types.ts';
import { type RoutesDeps, mountRoutes } from './router.ts';

export { defineRoute } from './types.ts';
export { DEFAULT_ROUTE_BODY_LIMIT } from './body-limit.ts';
export { FlowConcurrencyError, FlowNotFoundError, InvalidDispatchError, InvalidShopError, ShopNotInstalledError } from './errors.ts';
export type { InstallationLookup } from './for-shop.ts';

/** What public routes need: the logger, forShop's lookups, and the one dispatch door (trigger `route`). */
export interface RoutesWiring {
  logger: RoutesDeps['logger'];
  platform: Parameters<typeof createForShop>[0]['platform'];
  installations: InstallationLookup;
  connectorsFor: (appHandle: string, shop: string) => ShopContext['providers'];
  dispatch: DispatchFn;
  /** The process's bound of request bodies in flight (http/inflight.ts); unbounded when absent. */
  bodies?: RoutesDeps['bodies'];
}

export function routesDeps(w: RoutesWiring): RoutesDeps {
  return {
    logger: w.logger,
    forShop: createForShop({ platform: w.platform, installations: w.installations, connectors: w.connectorsFor }),
    dispatchFlow: (options, requestId) => dispatchFlowFor(w.dispatch, 'route', { requestId })(options),
    bodies: w.bodies,
  };
}

/** Loads `<projectDir>/routes` (fails start-up on a problem) and returns a function that mounts them. */
export async function prepareRoutes(
  w: RoutesWiring & { projectDir: string; loadModule?: (file: string) => Promise<Record<string, any>> },
): Promise<{ routes: LoadedRoute[]; mount(app: Hono<any>): void }> {
  const routes = await loadRoutes(join(w.projectDir, 'routes'), w.loadModule);
  const deps = routesDeps(w);
  return { routes, mount: (app) => mountRoutes(app, routes, deps) };
}
