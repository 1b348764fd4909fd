/**
 * Cart transforms (`cartTransforms`, `cartTransformCreate`, `cartTransformDelete`) and fulfillment constraint rules
 * (`fulfillmentConstraintRules`, `fulfillmentConstraintRuleCreate`, `fulfillmentConstraintRuleDelete`). Their
 * mutations take top-level arguments, and neither has an update of the configuration: the service deletes and creates
 * them again (adapters without `update`).
 */
import type { OwnerValues } from '../input.ts';
import { CONFIG_SELECTION, type FunctionInstance, MAX_INSTANCES, configMetafields, readConfig } from '../instance.ts';
import {
  type Adapter,
  type AdapterContext,
  type MutationOutcome,
  PAGE_INFO,
  USER_ERRORS,
  collectPages,
  functionArg,
  mutate,
  runsFunction,
} from './types.ts';

/** `$functionId: String` or `$functionHandle: String` and its argument, whichever the context sends. */
function functionVariable(ctx: AdapterContext) {
  const arg = functionArg(ctx);
  const name = 'functionId' in arg ? 'functionId' : 'functionHandle';
  return { declaration: `$${name}: String!`, argument: `${name}: $${name}`, variables: arg as Record<string, string> };
}

const CART_SELECTION = `id functionId blockOnFailure ${CONFIG_SELECTION}`;
const CART_LIST = `query MercatoCartTransforms($after: String) { cartTransforms(first: 50, after: $after) { nodes { ${CART_SELECTION} } ${PAGE_INFO} } }`;
const CART_READ = `query MercatoCartTransform($id: ID!) { node(id: $id) { __typename ... on CartTransform { ${CART_SELECTION} } } }`;

function cartInstance(ctx: AdapterContext, raw: Record<string, any>): FunctionInstance {
  return {
    id: raw.id,
    handle: ctx.def.handle,
    type: 'cart_transform',
    functionId: raw.functionId ?? null,
    owner: { blockOnFailure: raw.blockOnFailure === true },
    status: null,
    ...readConfig(raw.config),
  };
}

export const cartTransformAdapter: Adapter = {
  inputArgs: [],

  async list(ctx) {
    if (!ctx.fn) return [];
    return collectPages(
      async (after) => (await ctx.client.request(CART_LIST, { variables: { after }, signal: ctx.signal })).cartTransforms,
      (raw: Record<string, any>) => (runsFunction(ctx, raw.functionId) ? cartInstance(ctx, raw) : null),
    );
  },

  async read(ctx, id) {
    const { node } = await ctx.client.request(CART_READ, { variables: { id }, signal: ctx.signal });
    return node?.__typename === 'CartTransform' && runsFunction(ctx, node.functionId) ? cartInstance(ctx, node) : null;
  },

  async create(ctx, owner: OwnerValues, config): Promise<MutationOutcome> {
    const fn = functionVariable(ctx);
    const document = `mutation MercatoCartTransformCreate(${fn.declaration}, $blockOnFailure: Boolean, $metafields: [MetafieldInput!]) {
      cartTransformCreate(${fn.argument}, blockOnFailure: $blockOnFailure, metafields: $metafields) { cartTransform { ${CART_SELECTION} } ${USER_ERRORS} } }`;
    const { payload, userErrors } = await mutate(ctx, 'cartTransformCreate', document, {
      ...fn.variables,
      blockOnFailure: owner.blockOnFailure === true,
      metafields: configMetafields(config),
    });
    const raw = payload.cartTransform;
    return {
      mutation: 'cartTransformCreate',
      payload,
      instance: raw && userErrors.length === 0 ? cartInstance(ctx, raw) : null,
      userErrors,
    };
  },

  async remove(ctx, current): Promise<MutationOutcome> {
    const document = `mutation MercatoCartTransformDelete($id: ID!) { cartTransformDelete(id: $id) { deletedId ${USER_ERRORS} } }`;
    const { payload, userErrors } = await mutate(ctx, 'cartTransformDelete', document, { id: current.id });
    return { mutation: 'cartTransformDelete', payload, instance: null, userErrors };
  },
};

const RULE_SELECTION = `id deliveryMethodTypes function { id handle } ${CONFIG_SELECTION}`;
const RULE_LIST = `query MercatoFulfillmentConstraintRules { fulfillmentConstraintRules { ${RULE_SELECTION} } }`;
const RULE_READ = `query MercatoFulfillmentConstraintRule($id: ID!) { node(id: $id) { __typename ... on FulfillmentConstraintRule { ${RULE_SELECTION} } } }`;

function ruleInstance(ctx: AdapterContext, raw: Record<string, any>): FunctionInstance {
  return {
    id: raw.id,
    handle: ctx.def.handle,
    type: 'fulfillment_constraint',
    functionId: raw.function?.id ?? null,
    owner: { deliveryMethodTypes: [...(raw.deliveryMethodTypes ?? [])] },
    status: null,
    ...readConfig(raw.config),
  };
}

export const fulfillmentConstraintAdapter: Adapter = {
  inputArgs: [],

  async list(ctx) {
    const { fulfillmentConstraintRules } = await ctx.client.request(RULE_LIST, { signal: ctx.signal });
    return (fulfillmentConstraintRules as Array<Record<string, any>>)
      .filter((raw) => runsFunction(ctx, raw.function?.id, raw.function?.handle))
      .slice(0, MAX_INSTANCES)
      .map((raw) => ruleInstance(ctx, raw));
  },

  async read(ctx, id) {
    const { node } = await ctx.client.request(RULE_READ, { variables: { id }, signal: ctx.signal });
    return node?.__typename === 'FulfillmentConstraintRule' && runsFunction(ctx, node.function?.id, node.function?.handle)
      ? ruleInstance(ctx, node)
      : null;
  },

  async create(ctx, owner: OwnerValues, config): Promise<MutationOutcome> {
    const fn = functionVariable(ctx);
    const document = `mutation MercatoFulfillmentConstraintRuleCreate(${fn.declaration}, $deliveryMethodTypes: [DeliveryMethodType!]!, $metafields: [MetafieldInput!]) {
      fulfillmentConstraintRuleCreate(${fn.argument}, deliveryMethodTypes: $deliveryMethodTypes, metafields: $metafields) { fulfillmentConstraintRule { ${RULE_SELECTION} } ${USER_ERRORS} } }`;
    const variables = {
      ...fn.variables,
      deliveryMethodTypes: owner.deliveryMethodTypes ?? ['SHIPPING'],
      metafields: configMetafields(config),
    };
    const { payload, userErrors } = await mutate(ctx, 'fulfillmentConstraintRuleCreate', document, variables);
    const raw = payload.fulfillmentConstraintRule;
    return {
      mutation: 'fulfillmentConstraintRuleCreate',
      payload,
      instance: raw && userErrors.length === 0 ? ruleInstance(ctx, raw) : null,
      userErrors,
    };
  },

  async remove(ctx, current): Promise<MutationOutcome> {
    const document = `mutation MercatoFulfillmentConstraintRuleDelete($id: ID!) { fulfillmentConstraintRuleDelete(id: $id) { success ${USER_ERRORS} } }`;
    const { payload, userErrors } = await mutate(ctx, 'fulfillmentConstraintRuleDelete', document, { id: current.id });
    return { mutation: 'fulfillmentConstraintRuleDelete', payload, instance: null, userErrors };
  },
};
