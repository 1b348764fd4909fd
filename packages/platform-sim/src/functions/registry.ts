/**
 * The functions each app has deployed (by handle and id), as `shopifyFunctions` lists them. On the platform they come
 * from the app's deployed extensions; in the simulator they are registered: `start({ apps: [{ functions }] })`,
 * `sim.addFunction(...)`, `POST /__sim/functions`, or `platform-sim --function HANDLE:API_TYPE`.
 */
import { createHash } from 'node:crypto';

/** The platform's `ShopifyFunction.apiType` values the simulator knows. */
export const FUNCTION_API_TYPES = [
  'discount',
  'product_discounts',
  'order_discounts',
  'shipping_discounts',
  'cart_transform',
  'delivery_customization',
  'payment_customization',
  'cart_checkout_validation',
  'fulfillment_constraints',
  'order_routing_location_rule',
  'pickup_point_delivery_option_generator',
  'local_pickup_delivery_option_generator',
] as const;
export type FunctionApiType = (typeof FUNCTION_API_TYPES)[number];

/** Which API types each kind of function instance accepts (else FUNCTION_DOES_NOT_IMPLEMENT). */
export const API_TYPES_OF = {
  discount: ['discount', 'product_discounts', 'order_discounts', 'shipping_discounts'],
  cartTransform: ['cart_transform'],
  deliveryCustomization: ['delivery_customization'],
  paymentCustomization: ['payment_customization'],
  validation: ['cart_checkout_validation'],
  fulfillmentConstraintRule: ['fulfillment_constraints'],
} as const satisfies Record<string, readonly FunctionApiType[]>;

export interface SimFunctionInput {
  /** The extension handle (`functionHandle` in mutations). */
  handle: string;
  apiType: FunctionApiType;
  title?: string;
  description?: string;
  /** Default: a UUID derived from the app's key and the handle (stable across restarts). */
  id?: string;
}

export interface SimFunction {
  id: string;
  handle: string;
  apiType: FunctionApiType;
  title: string;
  description: string | null;
  /** The owning app's API key (`appKey`). */
  apiKey: string;
}

const HANDLE_RE = /^[a-z0-9][a-z0-9_-]*$/;

/** A UUID-shaped id derived from the app and the handle. */
export function functionIdFor(apiKey: string, handle: string): string {
  const hex = createHash('sha256').update(`${apiKey}\0${handle}`).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export class FunctionRegistry {
  /** apiKey → handle → function. */
  private readonly byApp = new Map<string, Map<string, SimFunction>>();

  /** Adds or replaces (by handle) a function of the app. */
  register(apiKey: string, input: SimFunctionInput): SimFunction {
    if (typeof input?.handle !== 'string' || !HANDLE_RE.test(input.handle)) {
      throw new Error(`platform-sim: a function handle must match ${HANDLE_RE} (got ${JSON.stringify(input?.handle)})`);
    }
    if (!(FUNCTION_API_TYPES as readonly string[]).includes(input.apiType)) {
      throw new Error(
        `platform-sim: function apiType must be one of ${FUNCTION_API_TYPES.join(', ')} (got ${JSON.stringify(input.apiType)})`,
      );
    }
    const fn: SimFunction = {
      id: input.id ?? functionIdFor(apiKey, input.handle),
      handle: input.handle,
      apiType: input.apiType,
      title: input.title ?? input.handle,
      description: input.description ?? null,
      apiKey,
    };
    let fns = this.byApp.get(apiKey);
    if (!fns) this.byApp.set(apiKey, (fns = new Map()));
    fns.set(fn.handle, fn);
    return fn;
  }

  /** The app's functions in registration order. */
  of(apiKey: string): SimFunction[] {
    return [...(this.byApp.get(apiKey)?.values() ?? [])];
  }

  byId(apiKey: string, id: string): SimFunction | undefined {
    return this.of(apiKey).find((f) => f.id === id);
  }

  byHandle(apiKey: string, handle: string): SimFunction | undefined {
    return this.byApp.get(apiKey)?.get(handle);
  }

  all(): SimFunction[] {
    return [...this.byApp.values()].flatMap((m) => [...m.values()]);
  }
}
