/**
 * The typed errors a public route may catch. `forShop` and `dispatchFlow` (ctx.dispatchFlow and the instance's
 * dispatchFlow) throw them; uncaught, every one of them is a logged generic 500 like any other thrown error
 * (docs/routes.md, "Errors"). They are domain errors (src/errors.ts): no HTTP status; docs/routes.md lists what the
 * admin API answers for each, so a route can build its own Response:
 * `Response.json({ error: e.message, existingRunId: e.existingRunId }, { status: 409 })`.
 */
import { InvalidInputError, NotFoundError } from '../errors.ts';

/** forShop: the shop has no active installation (of the named app) (404 over HTTP). */
export class ShopNotInstalledError extends NotFoundError {
  constructor(
    readonly shop: string,
    readonly shopifyApp?: string,
  ) {
    super(`Shop "${shop}" has no active installation${shopifyApp ? ` of app "${shopifyApp}"` : ''}`);
  }
}

/** forShop: the value is not a shop domain, names an unknown app, or the shop is installed for several apps and none is named (400 over HTTP). */
export class InvalidShopError extends InvalidInputError {
  declare readonly field: 'shop' | 'shopifyApp';
  constructor(message: string, field: 'shop' | 'shopifyApp') {
    super(message, { field });
  }
}

// The dispatch errors live with the dispatcher; re-exported here for the route contract (docs/routes.md, "Errors").
export { FlowConcurrencyError, FlowNotFoundError, InvalidDispatchError } from '../flows/errors.ts';
