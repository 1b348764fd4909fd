/**
 * What each function type offers: the platform API types its functions implement, which operations the platform has
 * a mutation for, and its owner fields (the fields of the instance itself, beside the configuration) with the
 * metadata the admin UI renders forms from. docs/functions.md lists them.
 */
import type { DiscountMode, FunctionDefinition, FunctionType } from '../app/types.ts';

export type OwnerFieldType = 'text' | 'datetime' | 'number' | 'checkbox' | 'select' | 'multiselect';

export interface OwnerFieldSpec {
  /** Dotted name (`combinesWith.orderDiscounts`); `path` is the same as an array (the `field` of userErrors). */
  name: string;
  path: string[];
  type: OwnerFieldType;
  label: string;
  description?: string;
  /** The platform refuses a create without it (checked there, answered as userErrors). */
  required: boolean;
  /** `null` is accepted and clears the value (`endsAt`, `usageLimit`). */
  nullable: boolean;
  /** Used on create when the body omits the field (`"now"` for a date-time means the time of the request). */
  default?: unknown;
  options?: Array<{ label: string; value: string }>;
  /** Discounts: the modes the field belongs to. */
  modes?: DiscountMode[];
  /** Can be given on create only (an update refuses a different value). */
  createOnly?: boolean;
}

export interface TypeSupport {
  create: boolean;
  /** `mutation`: updated in place; `recreate`: deleted and created again (the platform has no update). */
  update: 'mutation' | 'recreate' | false;
  delete: boolean;
}

export const DELIVERY_METHOD_TYPES = ['SHIPPING', 'LOCAL', 'PICK_UP', 'PICKUP_POINT', 'RETAIL', 'NONE'] as const;

/** The `ShopifyFunction.apiType` values a definition of each type may be deployed as. */
export const API_TYPES: Record<FunctionType, readonly string[]> = {
  discount: ['discount', 'product_discounts', 'order_discounts', 'shipping_discounts'],
  cart_transform: ['cart_transform'],
  delivery_customization: ['delivery_customization'],
  payment_customization: ['payment_customization'],
  checkout_validation: ['cart_checkout_validation'],
  fulfillment_constraint: ['fulfillment_constraints'],
  order_routing_location_rule: ['order_routing_location_rule'],
  pickup_point_delivery_option_generator: ['pickup_point_delivery_option_generator'],
  local_pickup_delivery_option_generator: ['local_pickup_delivery_option_generator'],
};

const NONE: TypeSupport = { create: false, update: false, delete: false };
export const SUPPORT: Record<FunctionType, TypeSupport> = {
  discount: { create: true, update: 'mutation', delete: true },
  cart_transform: { create: true, update: 'recreate', delete: true },
  delivery_customization: { create: true, update: 'mutation', delete: true },
  payment_customization: { create: true, update: 'mutation', delete: true },
  checkout_validation: { create: true, update: 'mutation', delete: true },
  fulfillment_constraint: { create: true, update: 'recreate', delete: true },
  order_routing_location_rule: NONE,
  pickup_point_delivery_option_generator: NONE,
  local_pickup_delivery_option_generator: NONE,
};

export const isManageable = (type: FunctionType) => SUPPORT[type].create;

function field(name: string, type: OwnerFieldType, label: string, extra: Partial<OwnerFieldSpec> = {}): OwnerFieldSpec {
  return { name, path: name.split('.'), type, label, required: false, nullable: false, ...extra };
}

const title = (required: boolean, fallback?: string) =>
  field(
    'title',
    'text',
    'Title',
    required ? { required } : { default: fallback, description: 'Default: the definition’s title, else the deployed function’s' },
  );
const enabled = field('enabled', 'checkbox', 'Enabled', { default: true });
const blockOnFailure = field('blockOnFailure', 'checkbox', 'Block checkout when the function fails', { default: false });

/** The modes a discount definition allows (default automatic only). */
export function discountModesOf(def: FunctionDefinition): DiscountMode[] {
  return def.type === 'discount' ? [...(def.discountModes ?? ['automatic'])] : [];
}

/** The owner fields of a definition, in form order. */
export function ownerFieldsOf(def: FunctionDefinition): OwnerFieldSpec[] {
  switch (def.type) {
    case 'discount': {
      const modes = discountModesOf(def);
      const code = modes.includes('code') ? (['code'] as DiscountMode[]) : null;
      return [
        field('mode', 'select', 'Discount mode', {
          required: modes.length > 1,
          default: modes.length === 1 ? modes[0] : undefined,
          createOnly: true,
          options: modes.map((m) => ({ label: m === 'automatic' ? 'Automatic' : 'Code', value: m })),
        }),
        title(true),
        ...(code
          ? [
              field('code', 'text', 'Discount code', { required: true, modes: code }),
              field('usageLimit', 'number', 'Usage limit', {
                nullable: true,
                default: null,
                modes: code,
                description: 'Total uses allowed (an integer of at least 1); empty for no limit',
              }),
              field('appliesOncePerCustomer', 'checkbox', 'Once per customer', { default: false, modes: code }),
            ]
          : []),
        field('startsAt', 'datetime', 'Starts at', { default: 'now' }),
        field('endsAt', 'datetime', 'Ends at', { nullable: true, default: null, description: 'Empty for no end' }),
        field('combinesWith.orderDiscounts', 'checkbox', 'Combines with order discounts', { default: false }),
        field('combinesWith.productDiscounts', 'checkbox', 'Combines with product discounts', { default: false }),
        field('combinesWith.shippingDiscounts', 'checkbox', 'Combines with shipping discounts', { default: false }),
      ];
    }
    case 'cart_transform':
      return [blockOnFailure];
    case 'delivery_customization':
    case 'payment_customization':
      return [title(true), enabled];
    case 'checkout_validation':
      return [title(false, def.title), enabled, blockOnFailure];
    case 'fulfillment_constraint':
      return [
        field('deliveryMethodTypes', 'multiselect', 'Delivery methods', {
          default: ['SHIPPING'],
          options: DELIVERY_METHOD_TYPES.map((v) => ({
            label: v
              .replace('_', ' ')
              .toLowerCase()
              .replace(/^./, (c) => c.toUpperCase()),
            value: v,
          })),
          description: 'The delivery methods the constraint applies to',
        }),
      ];
    default:
      return [];
  }
}
