/**
 * App discounts (discount functions), automatic and code: `discountAutomaticAppCreate/Update`,
 * `discountCodeAppCreate/Update`, `discountAutomaticDelete`, `discountCodeDelete`, and the queries `discountNodes`,
 * `discountNode`, `automaticDiscountNodes`, `codeDiscountNodes`, `automaticDiscountNode`, `codeDiscountNode`.
 * Inputs are validated like the platform: blank title or code, a code already used in the shop, `endsAt` not after
 * `startsAt`, `usageLimit` below 1, unknown or unsuitable function, bad metafields — all as `userErrors`.
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
import type { DiscountRecord } from './store.ts';

type Method = 'automatic' | 'code';

const BASE_INPUT = {
  title: 'String',
  functionId: 'String',
  functionHandle: 'String',
  startsAt: 'DateTime',
  endsAt: 'DateTime',
  combinesWith: 'DiscountCombinesWithInput',
  metafields: '[MetafieldInput!]',
};
INPUT_SPECS.DiscountAutomaticAppInput = BASE_INPUT;
INPUT_SPECS.DiscountCodeAppInput = { ...BASE_INPUT, code: 'String', usageLimit: 'Int', appliesOncePerCustomer: 'Boolean' };

const ARG = { automatic: 'automaticAppDiscount', code: 'codeAppDiscount' } as const;
const INPUT_TYPE = { automatic: 'DiscountAutomaticAppInput', code: 'DiscountCodeAppInput' } as const;
const NODE_TYPE = { automatic: 'DiscountAutomaticNode', code: 'DiscountCodeNode' } as const;
const NOT_FOUND_MESSAGE = 'Discount does not exist';

export function discountStatus(d: DiscountRecord, now = Date.now()): 'ACTIVE' | 'EXPIRED' | 'SCHEDULED' {
  if (Date.parse(d.startsAt) > now) return 'SCHEDULED';
  if (d.endsAt !== null && Date.parse(d.endsAt) <= now) return 'EXPIRED';
  return 'ACTIVE';
}

/** The user errors of a discount's merged state (create: everything given; update: stored values overridden). */
function checkDiscount(
  d: Omit<DiscountRecord, 'id' | 'gid' | 'metafields' | 'createdAt' | 'updatedAt'>,
  ctx: AdminContext,
  prefix: string[],
  selfGid?: string,
): SimUserError[] {
  const errors: SimUserError[] = [];
  if (!d.title || d.title.trim() === '') errors.push(err([...prefix, 'title'], "Title can't be blank", 'BLANK'));
  else if (d.title.length > 255) errors.push(err([...prefix, 'title'], 'Title is too long (maximum is 255 characters)', 'TOO_LONG'));
  if (!d.startsAt) errors.push(err([...prefix, 'startsAt'], "Starts at can't be blank", 'BLANK'));
  else if (d.endsAt !== null && Date.parse(d.endsAt) <= Date.parse(d.startsAt)) {
    errors.push(err([...prefix, 'endsAt'], 'Ends at needs to be after starts_at', 'END_DATE_BEFORE_START_DATE'));
  }
  if (d.method === 'code') {
    const code = d.code ?? '';
    if (code.trim() === '') errors.push(err([...prefix, 'code'], "Code can't be blank", 'BLANK'));
    else if (code.length > 255) errors.push(err([...prefix, 'code'], 'Code is too long (maximum is 255 characters)', 'TOO_LONG'));
    else if (/[\r\n]/.test(code)) errors.push(err([...prefix, 'code'], 'Code cannot contain newline characters.', 'INVALID'));
    else {
      const taken = ctx.state.functions
        .list('discount', ctx.shop.domain)
        .some((o) => o.method === 'code' && o.gid !== selfGid && o.code?.toLowerCase() === code.trim().toLowerCase());
      if (taken) errors.push(err([...prefix, 'code'], 'Code must be unique. Please try a different code.', 'TAKEN'));
    }
    if (d.usageLimit !== null && d.usageLimit < 1)
      errors.push(err([...prefix, 'usageLimit'], 'Usage limit must be greater than 0', 'GREATER_THAN'));
  }
  return errors;
}

function combines(input: Record<string, unknown> | null | undefined, current?: DiscountRecord['combinesWith']) {
  const base = current ?? { orderDiscounts: false, productDiscounts: false, shippingDiscounts: false };
  if (!input) return { ...base };
  return {
    orderDiscounts: typeof input.orderDiscounts === 'boolean' ? input.orderDiscounts : base.orderDiscounts,
    productDiscounts: typeof input.productDiscounts === 'boolean' ? input.productDiscounts : base.productDiscounts,
    shippingDiscounts: typeof input.shippingDiscounts === 'boolean' ? input.shippingDiscounts : base.shippingDiscounts,
  };
}

const has = (o: Record<string, unknown>, k: string) => Object.hasOwn(o, k) && o[k] !== undefined;

function create(method: Method) {
  return (_root: unknown, args: Record<string, any>, ctx: AdminContext) => {
    const arg = ARG[method];
    checkInput(arg, `${INPUT_TYPE[method]}!`, args[arg]);
    const input = args[arg] as Record<string, any>;
    const prefix = [arg];
    const resolved = resolveFunction(ctx, input, 'discount', prefix, {
      missing: 'MISSING_FUNCTION_IDENTIFIER',
      multiple: 'MULTIPLE_FUNCTION_IDENTIFIERS',
      notFound: 'INVALID',
      notImplemented: 'INVALID',
    });
    const errors: SimUserError[] = 'error' in resolved ? [resolved.error] : [];
    const store = ctx.state.functions;
    const base = store.base(NODE_TYPE[method], ctx.app.apiKey, ctx.shop.domain, 'fn' in resolved ? resolved.fn.id : '');
    const record: DiscountRecord = {
      ...base,
      kind: 'discount',
      method,
      title: input.title ?? '',
      startsAt: input.startsAt ?? '',
      endsAt: input.endsAt ?? null,
      combinesWith: combines(input.combinesWith),
      code: method === 'code' ? (input.code ?? '').trim() : null,
      usageLimit: method === 'code' ? (input.usageLimit ?? null) : null,
      appliesOncePerCustomer: method === 'code' ? input.appliesOncePerCustomer === true : false,
    };
    errors.push(...checkDiscount(record, ctx, prefix));
    const mf = checkMetafieldInputs(
      input.metafields,
      appIdOf(ctx),
      [...prefix, 'metafields'],
      () => undefined,
      () => 'INVALID',
    );
    errors.push(...mf.errors);
    if (errors.length > 0) return { [ARG[method]]: null, userErrors: errors };
    store.setMetafields(record, mf.entries);
    return { [ARG[method]]: store.add(record), userErrors: [] };
  };
}

function update(method: Method) {
  return (_root: unknown, args: Record<string, any>, ctx: AdminContext) => {
    const arg = ARG[method];
    checkInput(arg, `${INPUT_TYPE[method]}!`, args[arg]);
    const input = args[arg] as Record<string, any>;
    const prefix = [arg];
    const store = ctx.state.functions;
    const record = store.find(args.id, ctx.shop.domain, 'discount');
    if (!record || record.method !== method || !ownedBy(record, ctx))
      return { [arg]: null, userErrors: [err(['id'], NOT_FOUND_MESSAGE, 'INVALID')] };
    const errors: SimUserError[] = [];
    if (has(input, 'functionId') || has(input, 'functionHandle')) {
      const resolved = resolveFunction(ctx, input, 'discount', prefix, {
        missing: 'MISSING_FUNCTION_IDENTIFIER',
        multiple: 'MULTIPLE_FUNCTION_IDENTIFIERS',
        notFound: 'INVALID',
        notImplemented: 'INVALID',
      });
      if ('error' in resolved) errors.push(resolved.error);
      else if (resolved.fn.id !== record.functionId)
        errors.push(err([...prefix, 'functionId'], 'The function of a discount cannot be changed.', 'INVALID'));
    }
    const next: DiscountRecord = {
      ...record,
      title: has(input, 'title') ? (input.title ?? '') : record.title,
      startsAt: has(input, 'startsAt') ? (input.startsAt ?? '') : record.startsAt,
      endsAt: has(input, 'endsAt') ? input.endsAt : record.endsAt,
      combinesWith: combines(input.combinesWith, record.combinesWith),
    };
    if (method === 'code') {
      if (has(input, 'code')) next.code = (input.code ?? '').trim();
      if (has(input, 'usageLimit')) next.usageLimit = input.usageLimit;
      if (has(input, 'appliesOncePerCustomer')) next.appliesOncePerCustomer = input.appliesOncePerCustomer === true;
    }
    errors.push(...checkDiscount(next, ctx, prefix, record.gid));
    const find = (ns: string, key: string) => record.metafields.find((m) => m.namespace === ns && m.key === key);
    const mf = checkMetafieldInputs(input.metafields, appIdOf(ctx), [...prefix, 'metafields'], find, () => 'INVALID');
    errors.push(...mf.errors);
    if (errors.length > 0) return { [arg]: null, userErrors: errors };
    Object.assign(record, {
      title: next.title,
      startsAt: next.startsAt,
      endsAt: next.endsAt,
      combinesWith: next.combinesWith,
      code: next.code,
      usageLimit: next.usageLimit,
      appliesOncePerCustomer: next.appliesOncePerCustomer,
    });
    store.setMetafields(record, mf.entries);
    touch(record);
    return { [arg]: record, userErrors: [] };
  };
}

function remove(method: Method, payloadField: string) {
  return (_root: unknown, args: Record<string, any>, ctx: AdminContext) => {
    const store = ctx.state.functions;
    const record = store.find(args.id, ctx.shop.domain, 'discount');
    if (!record || record.method !== method || !ownedBy(record, ctx))
      return { [payloadField]: null, userErrors: [err(['id'], NOT_FOUND_MESSAGE, 'INVALID')] };
    store.remove(record.gid);
    return { [payloadField]: record.gid, userErrors: [] };
  };
}

/** `method:automatic|code`, `type:app`, `status:…`, `code:…`, `title:…`; a bare word searches titles. Unknown filters are ignored. */
export function matchesDiscountQuery(d: DiscountRecord, query: unknown): boolean {
  if (typeof query !== 'string' || query.trim() === '') return true;
  for (const term of query.trim().split(/\s+/)) {
    const [key, ...rest] = term.split(':');
    const value = rest
      .join(':')
      .replace(/^["']|["']$/g, '')
      .toLowerCase();
    if (rest.length === 0) {
      if (!d.title.toLowerCase().includes(term.toLowerCase())) return false;
    } else if (key === 'method' && value !== d.method) return false;
    else if ((key === 'type' || key === 'discount_type') && !['app', 'all', 'all_with_app'].includes(value)) return false;
    else if (key === 'status' && value !== discountStatus(d).toLowerCase()) return false;
    else if (key === 'code' && d.code?.toLowerCase() !== value) return false;
    else if (key === 'title' && !d.title.toLowerCase().includes(value)) return false;
  }
  return true;
}

function listResolver(method?: Method) {
  return (_r: unknown, args: Record<string, any>, ctx: AdminContext) => {
    const list = ctx.state.functions
      .list('discount', ctx.shop.domain)
      .filter((d) => visibleTo(d, ctx) && (method === undefined || d.method === method) && matchesDiscountQuery(d, args.query));
    return paginate(list, args as PageArgs, (d) => d.gid);
  };
}

function oneResolver(method?: Method) {
  return (_r: unknown, args: Record<string, any>, ctx: AdminContext) => {
    const d = ctx.state.functions.find(args.id, ctx.shop.domain, 'discount');
    return d && visibleTo(d, ctx) && (method === undefined || d.method === method) ? d : null;
  };
}

const LIST_ARGS = { ...PAGE_ARGS, query: 'String', sortKey: 'String', savedSearchId: 'ID' };

const appDiscountFields = {
  discountId: { type: 'ID!', resolve: (d: DiscountRecord) => d.gid },
  title: { type: 'String!' },
  status: { type: 'DiscountStatus!', resolve: (d: DiscountRecord) => discountStatus(d) },
  startsAt: { type: 'DateTime!' },
  endsAt: { type: 'DateTime' },
  createdAt: { type: 'DateTime!' },
  updatedAt: { type: 'DateTime' },
  asyncUsageCount: { type: 'Int!', resolve: () => 0 },
  combinesWith: { type: 'DiscountCombinesWith!' },
  appDiscountType: {
    type: 'AppDiscountType!',
    resolve: (d: DiscountRecord, _a: unknown, ctx: AdminContext) =>
      ctx.state.functions.registry.all().find((f) => f.id === d.functionId) ?? {
        id: d.functionId,
        apiKey: d.apiKey,
        title: '',
        description: null,
      },
  },
};

export function discountTypes(): Record<string, TypeDef> {
  return {
    QueryRoot: {
      kind: 'object',
      fields: {
        discountNodes: { type: 'DiscountNodeConnection!', args: LIST_ARGS, resolve: listResolver() },
        automaticDiscountNodes: { type: 'DiscountAutomaticNodeConnection!', args: LIST_ARGS, resolve: listResolver('automatic') },
        codeDiscountNodes: { type: 'DiscountCodeNodeConnection!', args: LIST_ARGS, resolve: listResolver('code') },
        discountNode: { type: 'DiscountNode', args: { id: 'ID!' }, resolve: oneResolver() },
        automaticDiscountNode: { type: 'DiscountAutomaticNode', args: { id: 'ID!' }, resolve: oneResolver('automatic') },
        codeDiscountNode: { type: 'DiscountCodeNode', args: { id: 'ID!' }, resolve: oneResolver('code') },
      },
    },
    Mutation: {
      kind: 'object',
      fields: {
        discountAutomaticAppCreate: {
          type: 'DiscountAutomaticAppCreatePayload',
          args: { automaticAppDiscount: 'DiscountAutomaticAppInput!' },
          resolve: create('automatic'),
        },
        discountAutomaticAppUpdate: {
          type: 'DiscountAutomaticAppUpdatePayload',
          args: { id: 'ID!', automaticAppDiscount: 'DiscountAutomaticAppInput!' },
          resolve: update('automatic'),
        },
        discountCodeAppCreate: {
          type: 'DiscountCodeAppCreatePayload',
          args: { codeAppDiscount: 'DiscountCodeAppInput!' },
          resolve: create('code'),
        },
        discountCodeAppUpdate: {
          type: 'DiscountCodeAppUpdatePayload',
          args: { id: 'ID!', codeAppDiscount: 'DiscountCodeAppInput!' },
          resolve: update('code'),
        },
        discountAutomaticDelete: {
          type: 'DiscountAutomaticDeletePayload',
          args: { id: 'ID!' },
          resolve: remove('automatic', 'deletedAutomaticDiscountId'),
        },
        discountCodeDelete: { type: 'DiscountCodeDeletePayload', args: { id: 'ID!' }, resolve: remove('code', 'deletedCodeDiscountId') },
      },
    },
    DiscountAutomaticAppCreatePayload: {
      kind: 'object',
      fields: { automaticAppDiscount: { type: 'DiscountAutomaticApp' }, userErrors: { type: '[DiscountUserError!]!' } },
    },
    DiscountAutomaticAppUpdatePayload: {
      kind: 'object',
      fields: { automaticAppDiscount: { type: 'DiscountAutomaticApp' }, userErrors: { type: '[DiscountUserError!]!' } },
    },
    DiscountCodeAppCreatePayload: {
      kind: 'object',
      fields: { codeAppDiscount: { type: 'DiscountCodeApp' }, userErrors: { type: '[DiscountUserError!]!' } },
    },
    DiscountCodeAppUpdatePayload: {
      kind: 'object',
      fields: { codeAppDiscount: { type: 'DiscountCodeApp' }, userErrors: { type: '[DiscountUserError!]!' } },
    },
    DiscountAutomaticDeletePayload: {
      kind: 'object',
      fields: { deletedAutomaticDiscountId: { type: 'ID' }, userErrors: { type: '[DiscountUserError!]!' } },
    },
    DiscountCodeDeletePayload: {
      kind: 'object',
      fields: { deletedCodeDiscountId: { type: 'ID' }, userErrors: { type: '[DiscountUserError!]!' } },
    },
    DiscountUserError: userErrorType('DiscountErrorCode', { extraInfo: 'String' }),
    DiscountErrorCode: {
      kind: 'enum',
      values: [
        'BLANK',
        'END_DATE_BEFORE_START_DATE',
        'GREATER_THAN',
        'INVALID',
        'MISSING_FUNCTION_IDENTIFIER',
        'MULTIPLE_FUNCTION_IDENTIFIERS',
        'TAKEN',
        'TOO_LONG',
        'INTERNAL_ERROR',
      ],
    },
    DiscountStatus: { kind: 'enum', values: ['ACTIVE', 'EXPIRED', 'SCHEDULED'] },
    DiscountCombinesWith: {
      kind: 'object',
      fields: { orderDiscounts: { type: 'Boolean!' }, productDiscounts: { type: 'Boolean!' }, shippingDiscounts: { type: 'Boolean!' } },
    },
    AppDiscountType: {
      kind: 'object',
      fields: {
        functionId: { type: 'String!', resolve: (f: { id: string }) => f.id },
        appKey: { type: 'String!', resolve: (f: { apiKey: string }) => f.apiKey },
        title: { type: 'String!' },
        description: { type: 'String' },
      },
    },
    DiscountAutomaticApp: { kind: 'object', fields: appDiscountFields },
    DiscountCodeApp: {
      kind: 'object',
      fields: {
        ...appDiscountFields,
        usageLimit: { type: 'Int' },
        appliesOncePerCustomer: { type: 'Boolean!' },
        codes: {
          type: 'DiscountRedeemCodeConnection!',
          args: { ...PAGE_ARGS, query: 'String' },
          resolve: (d: DiscountRecord, args) => paginate([{ id: d.id, code: d.code }], args as PageArgs, (c) => String(c.id)),
        },
        codesCount: { type: 'Count', resolve: () => ({ count: 1, precision: 'EXACT' }) },
      },
    },
    DiscountRedeemCode: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (c: { id: number }) => `gid://shopify/DiscountRedeemCode/${c.id}` },
        code: { type: 'String!' },
        asyncUsageCount: { type: 'Int!', resolve: () => 0 },
      },
    },
    ...connectionTypes('DiscountRedeemCode'),
    Count: { kind: 'object', fields: { count: { type: 'Int!' }, precision: { type: 'String!' } } },
    Discount: {
      kind: 'union',
      possibleTypes: ['DiscountAutomaticApp', 'DiscountCodeApp'],
      resolveType: (d: DiscountRecord) => (d.method === 'automatic' ? 'DiscountAutomaticApp' : 'DiscountCodeApp'),
    },
    DiscountAutomatic: { kind: 'union', possibleTypes: ['DiscountAutomaticApp'], resolveType: () => 'DiscountAutomaticApp' },
    DiscountCode: { kind: 'union', possibleTypes: ['DiscountCodeApp'], resolveType: () => 'DiscountCodeApp' },
    DiscountNode: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (d: DiscountRecord) => d.gid },
        discount: { type: 'Discount!', resolve: (d: DiscountRecord) => d },
        ...metafieldFields(),
      },
    },
    DiscountAutomaticNode: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (d: DiscountRecord) => d.gid },
        automaticDiscount: { type: 'DiscountAutomatic!', resolve: (d: DiscountRecord) => d },
        ...metafieldFields(),
      },
    },
    DiscountCodeNode: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (d: DiscountRecord) => d.gid },
        codeDiscount: { type: 'DiscountCode!', resolve: (d: DiscountRecord) => d },
        ...metafieldFields(),
      },
    },
    ...connectionTypes('DiscountNode'),
    ...connectionTypes('DiscountAutomaticNode'),
    ...connectionTypes('DiscountCodeNode'),
  };
}
