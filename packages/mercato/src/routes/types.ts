/** Public routes: files under the app's `routes/` folder, mounted under `/routes/*`. */
import type { DispatchResult, ProviderConnectors, ProvidersMap, RetryPolicy } from '../app/types.ts';

export const ROUTE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type RouteMethod = (typeof ROUTE_METHODS)[number];

export interface ShopContext<P extends ProvidersMap = ProvidersMap> {
  /** The normalised shop domain. */
  shop: string;
  /** The app the installation belongs to. */
  app: { handle: string; apiKey: string };
  /** Provider connectors of this tenant: methods without their config argument. The config itself is never exposed. */
  providers: ProviderConnectors<P>;
}

export type ForShop<P extends ProvidersMap = ProvidersMap> = (options: { shop: string; shopifyApp?: string }) => Promise<ShopContext<P>>;

export interface RouteDispatchOptions {
  flowName: string;
  input?: unknown;
  shop?: string | null;
  shopifyApp?: string;
  retryPolicy?: Partial<RetryPolicy>;
}

export interface RouteContext<Auth = unknown, P extends ProvidersMap = ProvidersMap> {
  /** Path parameters, e.g. `{ id }` for `orders/[id].ts`. */
  params: Record<string, string>;
  /** What the route's auth function returned (undefined for `auth: 'none'`). */
  auth: Auth;
  forShop: ForShop<P>;
  /** Dispatch a flow (trigger `route`). Only after the request is authenticated. */
  dispatchFlow(options: RouteDispatchOptions): Promise<DispatchResult>;
  requestId: string;
}

export type RouteAuth<Auth = unknown> =
  | 'none'
  | ((request: Request, ctx: { forShop: ForShop; params: Record<string, string> }) => Auth | Response | null | Promise<Auth | Response | null>);

export type RouteHandler<Auth = unknown> = (request: Request, ctx: RouteContext<Auth>) => Response | Promise<Response>;

export type RouteDefinition<Auth = unknown> = { auth: RouteAuth<Auth> } & Partial<Record<RouteMethod, RouteHandler<Auth>>>;

/** Gives a route file its types: `export default defineRoute({ auth: 'none', GET(request, ctx) { … } })`. */
export function defineRoute<Auth = unknown>(route: RouteDefinition<Auth>): RouteDefinition<Auth> {
  return route;
}
