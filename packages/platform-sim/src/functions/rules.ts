/**
 * Cart transforms (`cartTransformCreate` / `cartTransformDelete`, query `cartTransforms`) and fulfillment constraint
 * rules (`fulfillmentConstraintRuleCreate` / `fulfillmentConstraintRuleDelete`, query `fulfillmentConstraintRules`).
 * Neither has an update of its configuration: on the platform a function has at most one of each per shop
 * (FUNCTION_ALREADY_REGISTERED), so changing one means deleting and creating it again.
 */
import type { TypeDef } from '../graphql/execute.ts';
import type { AdminContext } from '../schema.ts';
import {
  INPUT_ENUMS,
  PAGE_ARGS,
  type PageArgs,
  appIdOf,
  checkInput,
  connectionTypes,
  err,
  ownedBy,
  paginate,
  resolveFunction,
  userErrorType,
} from './common.ts';
import { metafieldFields } from './core-schema.ts';
import { shopifyFunctionOf } from './customizations.ts';
import { type SimUserError, checkMetafieldInputs } from './metafields.ts';
import type { CartTransformRecord, FulfillmentConstraintRuleRecord } from './store.ts';

/** The platform's limit of fulfillment constraint rules per shop. */
export const MAX_FULFILLMENT_CONSTRAINT_RULES = 10;

const fnCodes = {
  missing: 'MISSING_FUNCTION_IDENTIFIER',
  multiple: 'MULTIPLE_FUNCTION_IDENTIFIERS',
  notFound: 'FUNCTION_NOT_FOUND',
  notImplemented: 'FUNCTION_DOES_NOT_IMPLEMENT',
};

function cartTransformCreate(_r: unknown, args: Record<string, any>, ctx: AdminContext) {
  checkInput('blockOnFailure', 'Boolean', args.blockOnFailure);
  checkInput('metafields', '[MetafieldInput!]', args.metafields);
  const errors: SimUserError[] = [];
  const resolved = resolveFunction(ctx, args, 'cartTransform', [], fnCodes);
  const store = ctx.state.functions;
  if ('error' in resolved) errors.push(resolved.error);
  else if (store.list('cartTransform', ctx.shop.domain).some((t) => t.functionId === resolved.fn.id)) {
    errors.push(
      err(
        [args.functionHandle ? 'functionHandle' : 'functionId'],
        'Could not enable cart transform because it is already registered',
        'FUNCTION_ALREADY_REGISTERED',
      ),
    );
  }
  const mf = checkMetafieldInputs(
    args.metafields,
    appIdOf(ctx),
    ['metafields'],
    () => undefined,
    () => 'INVALID_METAFIELDS',
  );
  errors.push(...mf.errors);
  if (errors.length > 0 || 'error' in resolved) return { cartTransform: null, userErrors: errors };
  const record: CartTransformRecord = {
    ...store.base('CartTransform', ctx.app.apiKey, ctx.shop.domain, resolved.fn.id),
    kind: 'cartTransform',
    blockOnFailure: args.blockOnFailure === true,
  };
  store.setMetafields(record, mf.entries);
  return { cartTransform: store.add(record), userErrors: [] };
}

function cartTransformDelete(_r: unknown, args: Record<string, any>, ctx: AdminContext) {
  const record = ctx.state.functions.find(args.id, ctx.shop.domain, 'cartTransform');
  if (!record || !ownedBy(record, ctx))
    return { deletedId: null, userErrors: [err(['id'], `Could not find cart transform with id: ${String(args.id)}`, 'NOT_FOUND')] };
  ctx.state.functions.remove(record.gid);
  return { deletedId: record.gid, userErrors: [] };
}

function ruleCreate(_r: unknown, args: Record<string, any>, ctx: AdminContext) {
  checkInput('deliveryMethodTypes', '[DeliveryMethodType!]!', args.deliveryMethodTypes);
  checkInput('metafields', '[MetafieldInput!]', args.metafields);
  const errors: SimUserError[] = [];
  const resolved = resolveFunction(ctx, args, 'fulfillmentConstraintRule', [], fnCodes);
  const store = ctx.state.functions;
  const rules = store.list('fulfillmentConstraintRule', ctx.shop.domain);
  if ('error' in resolved) errors.push(resolved.error);
  else if (rules.some((r) => r.functionId === resolved.fn.id)) {
    errors.push(
      err(
        [args.functionHandle ? 'functionHandle' : 'functionId'],
        'A fulfillment constraint rule already exists for the provided function.',
        'FUNCTION_ALREADY_REGISTERED',
      ),
    );
  } else if (rules.length >= MAX_FULFILLMENT_CONSTRAINT_RULES) {
    errors.push(
      err(
        null,
        `Maximum number of fulfillment constraint rules reached. Limit is ${MAX_FULFILLMENT_CONSTRAINT_RULES}.`,
        'MAXIMUM_FULFILLMENT_CONSTRAINT_RULES_REACHED',
      ),
    );
  }
  const types = (Array.isArray(args.deliveryMethodTypes) ? args.deliveryMethodTypes : [args.deliveryMethodTypes]) as string[];
  const mf = checkMetafieldInputs(
    args.metafields,
    appIdOf(ctx),
    ['metafields'],
    () => undefined,
    () => 'INPUT_INVALID',
  );
  errors.push(...mf.errors);
  if (errors.length > 0 || 'error' in resolved) return { fulfillmentConstraintRule: null, userErrors: errors };
  const record: FulfillmentConstraintRuleRecord = {
    ...store.base('FulfillmentConstraintRule', ctx.app.apiKey, ctx.shop.domain, resolved.fn.id),
    kind: 'fulfillmentConstraintRule',
    deliveryMethodTypes: [...new Set(types)],
  };
  store.setMetafields(record, mf.entries);
  return { fulfillmentConstraintRule: store.add(record), userErrors: [] };
}

function ruleDelete(_r: unknown, args: Record<string, any>, ctx: AdminContext) {
  const record = ctx.state.functions.find(args.id, ctx.shop.domain, 'fulfillmentConstraintRule');
  if (!record || !ownedBy(record, ctx))
    return { success: null, userErrors: [err(['id'], 'Could not find fulfillment constraint rule for provided id.', 'NOT_FOUND')] };
  ctx.state.functions.remove(record.gid);
  return { success: true, userErrors: [] };
}

export function ruleTypes(): Record<string, TypeDef> {
  return {
    QueryRoot: {
      kind: 'object',
      fields: {
        cartTransforms: {
          type: 'CartTransformConnection!',
          args: PAGE_ARGS,
          resolve: (_r, args, ctx: AdminContext) =>
            paginate(ctx.state.functions.list('cartTransform', ctx.shop.domain, ctx.app.apiKey), args as PageArgs, (t) => t.gid),
        },
        fulfillmentConstraintRules: {
          type: '[FulfillmentConstraintRule!]!',
          resolve: (_r, _a, ctx: AdminContext) => ctx.state.functions.list('fulfillmentConstraintRule', ctx.shop.domain, ctx.app.apiKey),
        },
      },
    },
    Mutation: {
      kind: 'object',
      fields: {
        cartTransformCreate: {
          type: 'CartTransformCreatePayload',
          args: { functionId: 'String', functionHandle: 'String', blockOnFailure: 'Boolean', metafields: '[MetafieldInput!]' },
          resolve: cartTransformCreate,
        },
        cartTransformDelete: { type: 'CartTransformDeletePayload', args: { id: 'ID!' }, resolve: cartTransformDelete },
        fulfillmentConstraintRuleCreate: {
          type: 'FulfillmentConstraintRuleCreatePayload',
          args: {
            functionId: 'String',
            functionHandle: 'String',
            deliveryMethodTypes: '[DeliveryMethodType!]!',
            metafields: '[MetafieldInput!]',
          },
          resolve: ruleCreate,
        },
        fulfillmentConstraintRuleDelete: { type: 'FulfillmentConstraintRuleDeletePayload', args: { id: 'ID!' }, resolve: ruleDelete },
      },
    },
    CartTransform: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (r: CartTransformRecord) => r.gid },
        functionId: { type: 'String!' },
        blockOnFailure: { type: 'Boolean!' },
        ...metafieldFields(),
      },
    },
    ...connectionTypes('CartTransform'),
    CartTransformCreatePayload: {
      kind: 'object',
      fields: { cartTransform: { type: 'CartTransform' }, userErrors: { type: '[CartTransformCreateUserError!]!' } },
    },
    CartTransformDeletePayload: {
      kind: 'object',
      fields: { deletedId: { type: 'ID' }, userErrors: { type: '[CartTransformDeleteUserError!]!' } },
    },
    CartTransformCreateUserError: userErrorType('CartTransformCreateUserErrorCode'),
    CartTransformCreateUserErrorCode: {
      kind: 'enum',
      values: [
        'FUNCTION_ALREADY_REGISTERED',
        'FUNCTION_DOES_NOT_IMPLEMENT',
        'FUNCTION_NOT_FOUND',
        'INPUT_INVALID',
        'INVALID_METAFIELDS',
        'MISSING_FUNCTION_IDENTIFIER',
        'MULTIPLE_FUNCTION_IDENTIFIERS',
      ],
    },
    CartTransformDeleteUserError: userErrorType('CartTransformDeleteUserErrorCode'),
    CartTransformDeleteUserErrorCode: { kind: 'enum', values: ['NOT_FOUND', 'UNAUTHORIZED_APP_SCOPE'] },
    FulfillmentConstraintRule: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (r: FulfillmentConstraintRuleRecord) => r.gid },
        deliveryMethodTypes: { type: '[DeliveryMethodType!]!' },
        function: { type: 'ShopifyFunction!', resolve: shopifyFunctionOf },
        ...metafieldFields(),
      },
    },
    DeliveryMethodType: { kind: 'enum', values: INPUT_ENUMS.DeliveryMethodType! },
    FulfillmentConstraintRuleCreatePayload: {
      kind: 'object',
      fields: {
        fulfillmentConstraintRule: { type: 'FulfillmentConstraintRule' },
        userErrors: { type: '[FulfillmentConstraintRuleCreateUserError!]!' },
      },
    },
    FulfillmentConstraintRuleDeletePayload: {
      kind: 'object',
      fields: { success: { type: 'Boolean' }, userErrors: { type: '[FulfillmentConstraintRuleDeleteUserError!]!' } },
    },
    FulfillmentConstraintRuleCreateUserError: userErrorType('FulfillmentConstraintRuleCreateUserErrorCode'),
    FulfillmentConstraintRuleCreateUserErrorCode: {
      kind: 'enum',
      values: [
        'FUNCTION_ALREADY_REGISTERED',
        'FUNCTION_DOES_NOT_IMPLEMENT',
        'FUNCTION_NOT_FOUND',
        'INPUT_INVALID',
        'MAXIMUM_FULFILLMENT_CONSTRAINT_RULES_REACHED',
        'MISSING_FUNCTION_IDENTIFIER',
        'MULTIPLE_FUNCTION_IDENTIFIERS',
      ],
    },
    FulfillmentConstraintRuleDeleteUserError: userErrorType('FulfillmentConstraintRuleDeleteUserErrorCode'),
    FulfillmentConstraintRuleDeleteUserErrorCode: { kind: 'enum', values: ['NOT_FOUND', 'UNAUTHORIZED_APP_SCOPE'] },
  };
}
