/** The adapter of each function type; null for the types the platform has no mutation for. */
import type { FunctionType } from '../../app/types.ts';
import { deliveryCustomizationAdapter, paymentCustomizationAdapter, validationAdapter } from './customization.ts';
import { discountAdapter } from './discount.ts';
import { cartTransformAdapter, fulfillmentConstraintAdapter } from './rules.ts';
import type { Adapter } from './types.ts';

export const ADAPTERS: Record<FunctionType, Adapter | null> = {
  discount: discountAdapter,
  cart_transform: cartTransformAdapter,
  delivery_customization: deliveryCustomizationAdapter,
  payment_customization: paymentCustomizationAdapter,
  checkout_validation: validationAdapter,
  fulfillment_constraint: fulfillmentConstraintAdapter,
  order_routing_location_rule: null,
  pickup_point_delivery_option_generator: null,
  local_pickup_delivery_option_generator: null,
};

export { modeOfId } from './discount.ts';
export type { Adapter, AdapterContext, DeployedFunction, MutationOutcome } from './types.ts';
