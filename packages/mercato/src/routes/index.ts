/** Public routes wired to a runtime: dispatch with trigger `route`, forShop over installations, connectors. */
import { join } from 'node:path';
import type { Hono } from 'hono';
import { createConnectors } from '../providers/service.ts';
import { type Runtime, resolveAppHandle } from '../runtime.ts';
import { asDispatchError } from './errors.ts';
import { type InstallationLookup, createForShop } from './for-shop.ts';
import { type LoadedRoute, loadRoutes } from './loader.ts';
import { type RoutesDeps, mountRoutes } from './router.ts';

export { defineRoute } from './types.ts';
export { FlowConcurrencyError, FlowNotFoundError, InvalidDispatchError, InvalidShopError, ShopNotInstalledError } from './errors.ts';
export type { InstallationLookup } from './for-shop.ts';

export function routesDeps(runtime: Runtime, installations: InstallationLookup): RoutesDeps {
  return {
    logger: runtime.logger,
    forShop: createForShop({
      platform: runtime.platform,
      installations,
      connectors: (appHandle, shop) => createConnectors({ db: runtime.db, secrets: runtime.secrets, providers: runtime.config.providers }, appHandle, shop) as any,
    }),
    dispatchFlow: async (o) => {
      try {
        return await runtime.dispatch({ appHandle: resolveAppHandle(runtime.platform, o.shopifyApp), shop: o.shop ?? null, flowName: o.flowName, input: o.input, trigger: 'route', retryPolicy: o.retryPolicy });
      } catch (error) {
        throw asDispatchError(error, o.flowName);
      }
    },
  };
}

/** Loads `<projectDir>/routes` (fails start-up on a problem) and returns a function that mounts them. */
export async function prepareRoutes(runtime: Runtime, installations: InstallationLookup): Promise<{ routes: LoadedRoute[]; mount(app: Hono<any>): void }> {
  const routes = await loadRoutes(join(runtime.projectDir, 'routes'), runtime.loadModule);
  const deps = routesDeps(runtime, installations);
  return { routes, mount: (app) => mountRoutes(app, routes, deps) };
}
