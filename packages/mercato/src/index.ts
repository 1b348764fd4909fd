/** Public API of the `mercato` package. */
export { defineApp, isMercatoInstance, type AppBuilder, type MercatoInstance } from './app/app.ts';
export {
  defineCron,
  defineCustomPage,
  defineFlow,
  defineFunction,
  defineMcpPermission,
  defineMcpResource,
  defineMcpTool,
  defineProvider,
  defineWebhook,
} from './app/define.ts';
export { ConfigError } from './app/validate.ts';
export { DEFAULT_PAGES, DEFAULT_RETRY_POLICY, DEFAULT_WORKER } from './app/defaults.ts';
export type * from './app/types.ts';
export { defineRoute } from './routes/types.ts';
export type {
  RouteContext,
  RouteDefinition,
  RouteAuth,
  RouteHandler,
  ShopContext,
  ForShop,
  AuthResult,
  RouteAuthFunction,
} from './routes/types.ts';
export { ShopNotInstalledError, InvalidShopError, FlowConcurrencyError, FlowNotFoundError, InvalidDispatchError } from './routes/errors.ts';
export { ProviderNotConfiguredError, type ProviderNotConfiguredReason } from './providers/errors.ts';
export { createRuntime, type Runtime, type CreateRuntimeOptions } from './runtime.ts';
export { MERCATO_VERSION } from './version.ts';
export { NonRetriableError, RetryAfterError } from './flows/errors.ts';
