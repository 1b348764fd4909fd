/** The contract of public routes (files under the app's `routes/` folder, mounted under `/routes/*`): part of the app contract; routes/ implements it. */
import type { DispatchResult, ProviderConnectors, ProvidersMap, RetryPolicy } from './types.ts';

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
  /** Dispatch a flow (trigger `route`). Only after the request is authenticated. Throws the typed errors of docs/routes.md. */
  dispatchFlow(options: RouteDispatchOptions): Promise<DispatchResult>;
  requestId: string;
}

/**
 * What an auth function may return: `null` (→ 401), a `Response` (sent as is) or any other value (→ `ctx.auth`).
 * `undefined` is excluded from the type (a forgotten `return` does not compile); at run time it would reach the
 * handler as `ctx.auth`, like any other value that is not null or a Response (docs/routes.md).
 */
export type AuthResult<Auth extends {}> = (Auth & NotThenable) | Response | null;

/** Keeps a Promise from counting as the auth value itself (so `async () => {}` does not compile either). */
type NotThenable = { then?: never };

export type RouteAuthFunction<Auth extends {} = {}, P extends ProvidersMap = ProvidersMap> = (
  request: Request,
  ctx: { forShop: ForShop<P>; params: Record<string, string> },
) => AuthResult<Auth> | Promise<AuthResult<Auth>>;

export type RouteAuth<Auth extends {} = {}, P extends ProvidersMap = ProvidersMap> = 'none' | RouteAuthFunction<Auth, P>;

export type RouteHandler<Auth = unknown, P extends ProvidersMap = ProvidersMap> = (
  request: Request,
  ctx: RouteContext<Auth, P>,
) => Response | Promise<Response>;

export type RouteDefinition<Auth extends {} = {}, P extends ProvidersMap = ProvidersMap> = {
  auth: RouteAuth<Auth, P>;
  /**
   * Largest request body, in bytes (default 1,000,000). A longer body is answered 413 `{ error }`: by its
   * Content-Length before the auth step, or as soon as a read passes the limit (chunked bodies are counted while read).
   */
  bodyLimit?: number;
} & Partial<Record<RouteMethod, RouteHandler<Auth, P>>>;

/**
 * Gives a route file its types: `export default defineRoute({ auth: 'none', GET(request, ctx) { … } })`. For provider
 * connectors typed by your app's providers, use `app.defineRoute` (the builder of defineApp) or the `defineRoute` of
 * the configured instance that service.config.ts exports.
 */
export function defineRoute<Auth extends {} = {}, P extends ProvidersMap = ProvidersMap>(
  route: RouteDefinition<Auth, P>,
): RouteDefinition<Auth, P> {
  return route;
}
