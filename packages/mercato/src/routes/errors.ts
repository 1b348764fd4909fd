/**
 * The typed errors a public route may catch. `forShop` and `dispatchFlow` (ctx.dispatchFlow and the instance's
 * dispatchFlow) throw them; uncaught, every one of them is a logged generic 500 like any other thrown error
 * (docs/routes.md, "Errors"). Each keeps the status and message the admin API would answer with, so a route can
 * build its own Response from them: `Response.json({ error: e.message, existingRunId: e.existingRunId }, { status: 409 })`.
 */
import { BadRequestError, ConflictError, HttpError, NotFoundError } from '../http/errors.ts';

/** forShop: the shop has no active installation (of the named app). Status 404. */
export class ShopNotInstalledError extends NotFoundError {
  constructor(
    readonly shop: string,
    readonly shopifyApp?: string,
  ) {
    super(`Shop "${shop}" has no active installation${shopifyApp ? ` of app "${shopifyApp}"` : ''}`);
  }
}

/** forShop: the value is not a shop domain, names an unknown app, or the shop is installed for several apps and none is named. Status 400. */
export class InvalidShopError extends BadRequestError {
  constructor(
    message: string,
    readonly field: 'shop' | 'shopifyApp',
  ) {
    super(message, { field });
  }
}

/** dispatchFlow: the flow already has as many active runs for this shop as its concurrency allows. Status 409. */
export class FlowConcurrencyError extends ConflictError {
  constructor(
    message: string,
    readonly flowName: string,
    readonly existingRunId: string,
  ) {
    super(message, { existingRunId });
  }
}

/** dispatchFlow: no flow of that name is registered. Status 404. */
export class FlowNotFoundError extends NotFoundError {
  constructor(
    message: string,
    readonly flowName: string,
  ) {
    super(message);
  }
}

/** dispatchFlow: the input does not match the flow's schema, or the shop, app or retry policy is invalid. Status 400. */
export class InvalidDispatchError extends BadRequestError {
  /** Schema issues of the input (`{ path, message, code }`), when the input was rejected. */
  readonly issues?: unknown[];
  readonly field?: string;

  constructor(message: string, extra: Record<string, unknown>) {
    super(message, { extra });
    if (Array.isArray(extra.issues)) this.issues = extra.issues;
    if (typeof extra.field === 'string') this.field = extra.field;
  }
}

/** The dispatcher's HTTP errors as the typed errors above (any other error is returned unchanged). */
export function asDispatchError(error: unknown, flowName: string): unknown {
  if (!(error instanceof HttpError) || error instanceof FlowConcurrencyError || error instanceof FlowNotFoundError || error instanceof InvalidDispatchError) return error;
  let typed: HttpError | undefined;
  if (error instanceof ConflictError && typeof error.extra.existingRunId === 'string') typed = new FlowConcurrencyError(error.message, flowName, error.extra.existingRunId);
  else if (error instanceof NotFoundError) typed = new FlowNotFoundError(error.message, flowName);
  else if (error instanceof BadRequestError) typed = new InvalidDispatchError(error.message, error.extra);
  if (!typed) return error;
  typed.cause = error;
  return typed;
}
