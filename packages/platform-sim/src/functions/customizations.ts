/**
 * Delivery and payment customizations (`deliveryCustomizationCreate/Update/Delete`, `paymentCustomization…`) and
 * checkout validations (`validationCreate/Update/Delete`), with their queries. Validated like the platform: unknown
 * or unsuitable function, blank title, too many enabled at once (25), bad metafields, unknown id.
 */
import type { TypeDef } from '../graphql/execute.ts';
import type { AdminContext } from '../schema.ts';
import {
  INPUT_SPECS,
  PAGE_ARGS,
  type PageArgs,
  appIdOf,
  checkInput,
  connectionTypes,
  err,
  ownedBy,
  paginate,
  resolveFunction,
  touch,
  userErrorType,
  visibleTo,
} from './common.ts';
import { metafieldFields } from './core-schema.ts';
import { type SimUserError, checkMetafieldInputs } from './metafields.ts';
import type { CustomizationRecord, InstanceRecord, ValidationRecord } from './store.ts';

/** How many of each may be enabled on a shop at once. */
export const MAX_ENABLED = 25;

const has = (o: Record<string, unknown>, k: string) => Object.hasOwn(o, k) && o[k] !== undefined;

export const shopifyFunctionOf = (r: InstanceRecord, _args: unknown, ctx: AdminContext) =>
  ctx.state.functions.registry.all().find((f) => f.id === r.functionId) ?? {
    id: r.functionId,
    handle: '',
    apiType: '',
    title: '',
    description: null,
    apiKey: r.apiKey,
  };

function enabledCount(ctx: AdminContext, kind: 'deliveryCustomization' | 'paymentCustomization' | 'validation', except?: string): number {
  return ctx.state.functions.list(kind, ctx.shop.domain).filter((r) => r.enabled && r.gid !== except).length;
}

// ---------------------------------------------------------------------------------------------
// Delivery and payment customizations

function customization(
  kind: 'deliveryCustomization' | 'paymentCustomization',
  typeName: 'DeliveryCustomization' | 'PaymentCustomization',
): Record<string, TypeDef> {
  const arg = kind;
  const inputType = `${typeName}Input`;
  INPUT_SPECS[inputType] = {
    functionId: 'String',
    functionHandle: 'String',
    title: 'String',
    enabled: 'Boolean',
    metafields: '[MetafieldInput!]',
  };
  const upper = kind === 'deliveryCustomization' ? 'DELIVERY' : 'PAYMENT';
  const NOT_FOUND = `${upper}_CUSTOMIZATION_NOT_FOUND`;
  const MAX = `MAXIMUM_ACTIVE_${upper}_CUSTOMIZATIONS`;
  const label = kind === 'deliveryCustomization' ? 'Delivery customization' : 'Payment customization';
  const fnCodes = {
    missing: 'MISSING_FUNCTION_IDENTIFIER',
    multiple: 'MULTIPLE_FUNCTION_IDENTIFIERS',
    notFound: 'FUNCTION_NOT_FOUND',
    notImplemented: 'FUNCTION_DOES_NOT_IMPLEMENT',
  };
  const mfCode = () => 'INVALID_METAFIELDS';

  const create = (_r: unknown, args: Record<string, any>, ctx: AdminContext) => {
    checkInput(arg, `${inputType}!`, args[arg]);
    const input = args[arg] as Record<string, any>;
    const errors: SimUserError[] = [];
    const resolved = resolveFunction(ctx, input, kind, [arg], fnCodes);
    if ('error' in resolved) errors.push(resolved.error);
    if (typeof input.title !== 'string' || input.title.trim() === '')
      errors.push(err([arg, 'title'], "Title can't be blank", 'REQUIRED_INPUT_FIELD'));
    const enabled = input.enabled === true;
    if (enabled && enabledCount(ctx, kind) >= MAX_ENABLED)
      errors.push(err([arg, 'enabled'], `Maximum ${label.toLowerCase()}s are already enabled.`, MAX));
    const mf = checkMetafieldInputs(input.metafields, appIdOf(ctx), [arg, 'metafields'], () => undefined, mfCode);
    errors.push(...mf.errors);
    if (errors.length > 0 || 'error' in resolved) return { [arg]: null, userErrors: errors };
    const store = ctx.state.functions;
    const record: CustomizationRecord = {
      ...store.base(typeName, ctx.app.apiKey, ctx.shop.domain, resolved.fn.id),
      kind,
      title: input.title,
      enabled,
    };
    store.setMetafields(record, mf.entries);
    return { [arg]: store.add(record), userErrors: [] };
  };

  const update = (_r: unknown, args: Record<string, any>, ctx: AdminContext) => {
    checkInput(arg, `${inputType}!`, args[arg]);
    const input = args[arg] as Record<string, any>;
    const store = ctx.state.functions;
    const record = store.find(args.id, ctx.shop.domain, kind);
    if (!record || !ownedBy(record, ctx)) return { [arg]: null, userErrors: [err(['id'], `${label} not found.`, NOT_FOUND)] };
    const errors: SimUserError[] = [];
    if (has(input, 'functionId') || has(input, 'functionHandle')) {
      const resolved = resolveFunction(ctx, input, kind, [arg], fnCodes);
      if ('error' in resolved) errors.push(resolved.error);
      else if (resolved.fn.id !== record.functionId)
        errors.push(err([arg, 'functionId'], 'Function ID cannot be changed.', 'FUNCTION_ID_CANNOT_BE_CHANGED'));
    }
    if (has(input, 'title') && (typeof input.title !== 'string' || input.title.trim() === ''))
      errors.push(err([arg, 'title'], "Title can't be blank", 'REQUIRED_INPUT_FIELD'));
    const enabled = has(input, 'enabled') ? input.enabled === true : record.enabled;
    if (enabled && !record.enabled && enabledCount(ctx, kind, record.gid) >= MAX_ENABLED)
      errors.push(err([arg, 'enabled'], `Maximum ${label.toLowerCase()}s are already enabled.`, MAX));
    const find = (ns: string, key: string) => record.metafields.find((m) => m.namespace === ns && m.key === key);
    const mf = checkMetafieldInputs(input.metafields, appIdOf(ctx), [arg, 'metafields'], find, mfCode);
    errors.push(...mf.errors);
    if (errors.length > 0) return { [arg]: null, userErrors: errors };
    if (has(input, 'title')) record.title = input.title;
    record.enabled = enabled;
    store.setMetafields(record, mf.entries);
    touch(record);
    return { [arg]: record, userErrors: [] };
  };

  const remove = (_r: unknown, args: Record<string, any>, ctx: AdminContext) => {
    const record = ctx.state.functions.find(args.id, ctx.shop.domain, kind);
    if (!record || !ownedBy(record, ctx)) return { deletedId: null, userErrors: [err(['id'], `${label} not found.`, NOT_FOUND)] };
    ctx.state.functions.remove(record.gid);
    return { deletedId: record.gid, userErrors: [] };
  };

  const plural = `${kind}s`;
  return {
    QueryRoot: {
      kind: 'object',
      fields: {
        [plural]: {
          type: `${typeName}Connection!`,
          args: { ...PAGE_ARGS, query: 'String' },
          resolve: (_r, args, ctx: AdminContext) => {
            const q = typeof args.query === 'string' ? args.query.toLowerCase() : '';
            const list = ctx.state.functions
              .list(kind, ctx.shop.domain)
              .filter(
                (r) => visibleTo(r, ctx) && (!q || (r as CustomizationRecord).title.toLowerCase().includes(q.replace(/^title:/, ''))),
              );
            return paginate(list, args as PageArgs, (r) => r.gid);
          },
        },
        [kind]: {
          type: typeName,
          args: { id: 'ID!' },
          resolve: (_r, args, ctx: AdminContext) => {
            const r = ctx.state.functions.find(args.id, ctx.shop.domain, kind);
            return r && visibleTo(r, ctx) ? r : null;
          },
        },
      },
    },
    Mutation: {
      kind: 'object',
      fields: {
        [`${kind}Create`]: { type: `${typeName}CreatePayload`, args: { [arg]: `${inputType}!` }, resolve: create },
        [`${kind}Update`]: { type: `${typeName}UpdatePayload`, args: { id: 'ID!', [arg]: `${inputType}!` }, resolve: update },
        [`${kind}Delete`]: { type: `${typeName}DeletePayload`, args: { id: 'ID!' }, resolve: remove },
      },
    },
    [`${typeName}CreatePayload`]: { kind: 'object', fields: { [arg]: { type: typeName }, userErrors: { type: `[${typeName}Error!]!` } } },
    [`${typeName}UpdatePayload`]: { kind: 'object', fields: { [arg]: { type: typeName }, userErrors: { type: `[${typeName}Error!]!` } } },
    [`${typeName}DeletePayload`]: { kind: 'object', fields: { deletedId: { type: 'ID' }, userErrors: { type: `[${typeName}Error!]!` } } },
    [`${typeName}Error`]: userErrorType(`${typeName}ErrorCode`),
    [`${typeName}ErrorCode`]: {
      kind: 'enum',
      values: [
        'FUNCTION_DOES_NOT_IMPLEMENT',
        'FUNCTION_ID_CANNOT_BE_CHANGED',
        'FUNCTION_NOT_FOUND',
        'INVALID',
        'INVALID_METAFIELDS',
        MAX,
        'MISSING_FUNCTION_IDENTIFIER',
        'MULTIPLE_FUNCTION_IDENTIFIERS',
        NOT_FOUND,
        'REQUIRED_INPUT_FIELD',
      ],
    },
    [typeName]: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (r: CustomizationRecord) => r.gid },
        title: { type: 'String!' },
        enabled: { type: 'Boolean!' },
        functionId: { type: 'String!' },
        shopifyFunction: { type: 'ShopifyFunction!', resolve: shopifyFunctionOf },
        ...metafieldFields(),
      },
    },
    ...connectionTypes(typeName),
  };
}

// ---------------------------------------------------------------------------------------------
// Checkout validations

INPUT_SPECS.ValidationCreateInput = {
  functionId: 'String',
  functionHandle: 'String',
  title: 'String',
  enable: 'Boolean',
  blockOnFailure: 'Boolean',
  metafields: '[MetafieldInput!]',
};
INPUT_SPECS.ValidationUpdateInput = { title: 'String', enable: 'Boolean', blockOnFailure: 'Boolean', metafields: '[MetafieldInput!]' };

function validationCreate(_r: unknown, args: Record<string, any>, ctx: AdminContext) {
  checkInput('validation', 'ValidationCreateInput!', args.validation);
  const input = args.validation as Record<string, any>;
  const errors: SimUserError[] = [];
  const resolved = resolveFunction(ctx, input, 'validation', ['validation'], {
    missing: 'MISSING_FUNCTION_IDENTIFIER',
    multiple: 'MULTIPLE_FUNCTION_IDENTIFIERS',
    notFound: 'FUNCTION_NOT_FOUND',
    notImplemented: 'FUNCTION_DOES_NOT_IMPLEMENT',
  });
  if ('error' in resolved) errors.push(resolved.error);
  if (typeof input.title === 'string' && input.title.length > 255)
    errors.push(err(['validation', 'title'], 'Title is too long (maximum is 255 characters)', 'TOO_LONG'));
  const enabled = input.enable === true;
  if (enabled && enabledCount(ctx, 'validation') >= MAX_ENABLED)
    errors.push(
      err(['validation', 'enable'], `Cannot have more than ${MAX_ENABLED} active validation functions.`, 'MAX_VALIDATIONS_ACTIVATED'),
    );
  const mf = checkMetafieldInputs(input.metafields, appIdOf(ctx), ['validation', 'metafields'], () => undefined);
  errors.push(...mf.errors);
  if (errors.length > 0 || 'error' in resolved) return { validation: null, userErrors: errors };
  const store = ctx.state.functions;
  const title = typeof input.title === 'string' && input.title.trim() !== '' ? input.title : resolved.fn.title;
  const record: ValidationRecord = {
    ...store.base('Validation', ctx.app.apiKey, ctx.shop.domain, resolved.fn.id),
    kind: 'validation',
    title,
    enabled,
    blockOnFailure: input.blockOnFailure === true,
  };
  store.setMetafields(record, mf.entries);
  return { validation: store.add(record), userErrors: [] };
}

function validationUpdate(_r: unknown, args: Record<string, any>, ctx: AdminContext) {
  checkInput('validation', 'ValidationUpdateInput!', args.validation);
  const input = args.validation as Record<string, any>;
  const store = ctx.state.functions;
  const record = store.find(args.id, ctx.shop.domain, 'validation');
  if (!record || !ownedBy(record, ctx)) return { validation: null, userErrors: [err(['id'], 'Extension not found.', 'NOT_FOUND')] };
  const errors: SimUserError[] = [];
  if (typeof input.title === 'string' && input.title.length > 255)
    errors.push(err(['validation', 'title'], 'Title is too long (maximum is 255 characters)', 'TOO_LONG'));
  const enabled = has(input, 'enable') ? input.enable === true : record.enabled;
  if (enabled && !record.enabled && enabledCount(ctx, 'validation', record.gid) >= MAX_ENABLED)
    errors.push(
      err(['validation', 'enable'], `Cannot have more than ${MAX_ENABLED} active validation functions.`, 'MAX_VALIDATIONS_ACTIVATED'),
    );
  const find = (ns: string, key: string) => record.metafields.find((m) => m.namespace === ns && m.key === key);
  const mf = checkMetafieldInputs(input.metafields, appIdOf(ctx), ['validation', 'metafields'], find);
  errors.push(...mf.errors);
  if (errors.length > 0) return { validation: null, userErrors: errors };
  if (typeof input.title === 'string' && input.title.trim() !== '') record.title = input.title;
  if (has(input, 'blockOnFailure')) record.blockOnFailure = input.blockOnFailure === true;
  record.enabled = enabled;
  store.setMetafields(record, mf.entries);
  touch(record);
  return { validation: record, userErrors: [] };
}

function validationDelete(_r: unknown, args: Record<string, any>, ctx: AdminContext) {
  const record = ctx.state.functions.find(args.id, ctx.shop.domain, 'validation');
  if (!record || !ownedBy(record, ctx)) return { deletedId: null, userErrors: [err(['id'], 'Extension not found.', 'NOT_FOUND')] };
  ctx.state.functions.remove(record.gid);
  return { deletedId: record.gid, userErrors: [] };
}

function validationTypes(): Record<string, TypeDef> {
  return {
    QueryRoot: {
      kind: 'object',
      fields: {
        validations: {
          type: 'ValidationConnection!',
          args: { ...PAGE_ARGS, sortKey: 'String' },
          resolve: (_r, args, ctx: AdminContext) =>
            paginate(
              ctx.state.functions.list('validation', ctx.shop.domain).filter((r) => visibleTo(r, ctx)),
              args as PageArgs,
              (r) => r.gid,
            ),
        },
        validation: {
          type: 'Validation',
          args: { id: 'ID!' },
          resolve: (_r, args, ctx: AdminContext) => {
            const r = ctx.state.functions.find(args.id, ctx.shop.domain, 'validation');
            return r && visibleTo(r, ctx) ? r : null;
          },
        },
      },
    },
    Mutation: {
      kind: 'object',
      fields: {
        validationCreate: { type: 'ValidationCreatePayload', args: { validation: 'ValidationCreateInput!' }, resolve: validationCreate },
        validationUpdate: {
          type: 'ValidationUpdatePayload',
          args: { id: 'ID!', validation: 'ValidationUpdateInput!' },
          resolve: validationUpdate,
        },
        validationDelete: { type: 'ValidationDeletePayload', args: { id: 'ID!' }, resolve: validationDelete },
      },
    },
    ValidationCreatePayload: {
      kind: 'object',
      fields: { validation: { type: 'Validation' }, userErrors: { type: '[ValidationUserError!]!' } },
    },
    ValidationUpdatePayload: {
      kind: 'object',
      fields: { validation: { type: 'Validation' }, userErrors: { type: '[ValidationUserError!]!' } },
    },
    ValidationDeletePayload: { kind: 'object', fields: { deletedId: { type: 'ID' }, userErrors: { type: '[ValidationUserError!]!' } } },
    ValidationUserError: userErrorType('ValidationUserErrorCode'),
    ValidationUserErrorCode: {
      kind: 'enum',
      values: [
        'APP_NOT_AUTHORIZED',
        'BLANK',
        'FUNCTION_DOES_NOT_IMPLEMENT',
        'FUNCTION_NOT_FOUND',
        'INVALID',
        'INVALID_TYPE',
        'INVALID_VALUE',
        'MAX_VALIDATIONS_ACTIVATED',
        'MISSING_FUNCTION_IDENTIFIER',
        'MULTIPLE_FUNCTION_IDENTIFIERS',
        'NOT_FOUND',
        'TOO_LONG',
        'TOO_SHORT',
      ],
    },
    Validation: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (r: ValidationRecord) => r.gid },
        title: { type: 'String!' },
        enabled: { type: 'Boolean!' },
        blockOnFailure: { type: 'Boolean!' },
        shopifyFunction: { type: 'ShopifyFunction!', resolve: shopifyFunctionOf },
        ...metafieldFields(),
      },
    },
    ...connectionTypes('Validation'),
  };
}

export function customizationTypes(): Array<Record<string, TypeDef>> {
  return [
    customization('deliveryCustomization', 'DeliveryCustomization'),
    customization('paymentCustomization', 'PaymentCustomization'),
    validationTypes(),
  ];
}
