/**
 * Platform functions in the simulator: the functions each app has deployed and their instances per shop (app
 * discounts, cart transforms, delivery and payment customizations, checkout validations, fulfillment constraint
 * rules) with app-owned metafields. See docs/platform.md ("Function instances").
 */
import type { Schema } from '../graphql/execute.ts';
import { type AdminContext, extendSchema } from '../schema.ts';
import { coreTypes } from './core-schema.ts';
import { customizationTypes } from './customizations.ts';
import { discountTypes } from './discounts.ts';
import { ruleTypes } from './rules.ts';

/** Adds the function-instance types, queries and mutations (and the `Mutation` root) to the admin schema. */
export function addFunctionSchema(schema: Schema): Schema {
  for (const types of [coreTypes(), discountTypes(), ...customizationTypes(), ruleTypes()]) {
    const mutations = types.Mutation?.kind === 'object' ? types.Mutation.fields : {};
    // `sim.injectUserErrors` lets a test make the next call of a mutation answer given userErrors
    for (const [name, def] of Object.entries(mutations)) {
      const resolve = def.resolve!;
      def.resolve = (parent, args, ctx: AdminContext) => {
        const injected = ctx.state.functions.takeInjected(name);
        return injected ? { userErrors: injected } : resolve(parent, args, ctx);
      };
    }
    extendSchema(schema, { types, mutation: 'Mutation' });
  }
  return schema;
}

export {
  API_TYPES_OF,
  FUNCTION_API_TYPES,
  FunctionRegistry,
  functionIdFor,
  type FunctionApiType,
  type SimFunction,
  type SimFunctionInput,
} from './registry.ts';
export { FunctionsState, kindOfGid, type InjectedUserErrors, type InstanceKind, type InstanceRecord } from './store.ts';
export { METAFIELD_TYPES, resolveNamespace, type MetafieldRecord, type SimUserError } from './metafields.ts';
export { discountStatus } from './discounts.ts';
export { MAX_ENABLED } from './customizations.ts';
export { MAX_FULFILLMENT_CONSTRAINT_RULES } from './rules.ts';
