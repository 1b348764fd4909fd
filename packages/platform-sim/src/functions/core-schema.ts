/**
 * The shared part of the function-instance schema: `Metafield` (and `metafield` / `metafields` on every instance),
 * `metafieldsSet`, `shopifyFunctions` / `shopifyFunction`, `node` / `nodes`, `PageInfo`.
 */
import type { FieldDef, TypeDef } from '../graphql/execute.ts';
import type { AdminContext } from '../schema.ts';
import {
  PAGE_ARGS,
  type PageArgs,
  appIdOf,
  checkInput,
  connectionTypes,
  err,
  ownedBy,
  paginate,
  userErrorType,
  visibleTo,
} from './common.ts';
import {
  type MetafieldRecord,
  type SimUserError,
  checkMetafieldInputs,
  compareDigest,
  isForeignAppNamespace,
  resolveNamespace,
} from './metafields.ts';
import type { SimFunction } from './registry.ts';
import type { InstanceRecord } from './store.ts';

/** `metafield(namespace, key)` and `metafields(...)` of an instance (the parent is its record). */
export function metafieldFields(): Record<string, FieldDef<AdminContext>> {
  return {
    metafield: {
      type: 'Metafield',
      args: { namespace: 'String', key: 'String!' },
      resolve: (record: InstanceRecord, args, ctx) => {
        const namespace = resolveNamespace(args.namespace, appIdOf(ctx));
        if (isForeignAppNamespace(namespace, appIdOf(ctx))) return null;
        return record.metafields.find((m) => m.namespace === namespace && m.key === args.key) ?? null;
      },
    },
    metafields: {
      type: 'MetafieldConnection!',
      args: { ...PAGE_ARGS, namespace: 'String', keys: '[String!]' },
      resolve: (record: InstanceRecord, args, ctx) => {
        const appId = appIdOf(ctx);
        let list = record.metafields.filter((m) => !isForeignAppNamespace(m.namespace, appId));
        if (args.namespace) list = list.filter((m) => m.namespace === resolveNamespace(args.namespace, appId));
        if (Array.isArray(args.keys)) {
          const keys = (args.keys as string[]).map((k) => {
            const at = k.lastIndexOf('.');
            return at < 0 ? k : `${resolveNamespace(k.slice(0, at), appId)}.${k.slice(at + 1)}`;
          });
          list = list.filter((m) => keys.includes(`${m.namespace}.${m.key}`));
        }
        return paginate(list, args as PageArgs, (m) => m.gid);
      },
    },
  };
}

function jsonValue(m: MetafieldRecord): unknown {
  switch (m.type) {
    case 'json':
      return JSON.parse(m.value);
    case 'number_integer':
    case 'number_decimal':
      return Number(m.value);
    case 'boolean':
      return m.value === 'true';
    default:
      return m.value;
  }
}

const NODE_TYPES = [
  'DiscountAutomaticNode',
  'DiscountCodeNode',
  'CartTransform',
  'DeliveryCustomization',
  'PaymentCustomization',
  'Validation',
  'FulfillmentConstraintRule',
  'Metafield',
];

function nodeOf(id: unknown, ctx: AdminContext): unknown {
  if (typeof id !== 'string') return null;
  const store = ctx.state.functions;
  const record = store.find(id, ctx.shop.domain);
  if (record) return visibleTo(record, ctx) ? record : null;
  const owned = store.metafieldOwner(id, ctx.shop.domain);
  if (owned && visibleTo(owned.record, ctx) && !isForeignAppNamespace(owned.metafield.namespace, appIdOf(ctx)))
    return { ...owned.metafield, nodeType: 'Metafield' };
  return null;
}

const MAX_METAFIELDS_SET = 25;

function metafieldsSet(_root: unknown, args: Record<string, any>, ctx: AdminContext) {
  checkInput('metafields', '[MetafieldsSetInput!]!', args.metafields);
  const inputs = args.metafields as Array<Record<string, any>>;
  const userErrors: SimUserError[] = [];
  if (inputs.length > MAX_METAFIELDS_SET) {
    return {
      metafields: null,
      userErrors: [err(['metafields'], `Exceeded the maximum metafields input limit of ${MAX_METAFIELDS_SET}.`, 'LESS_THAN_OR_EQUAL_TO')],
    };
  }
  const store = ctx.state.functions;
  const plan: Array<{ record: InstanceRecord; entry: { namespace: string; key: string; type: string; value: string } }> = [];
  inputs.forEach((input, i) => {
    const record = store.find(input.ownerId, ctx.shop.domain);
    if (!ownedBy(record, ctx)) {
      userErrors.push({ field: ['metafields', String(i), 'ownerId'], message: 'Owner does not exist.', code: 'INVALID', elementIndex: i });
      return;
    }
    const find = (namespace: string, key: string) => record!.metafields.find((m) => m.namespace === namespace && m.key === key);
    const { errors, entries } = checkMetafieldInputs([input], appIdOf(ctx), ['metafields'], find);
    for (const e of errors)
      userErrors.push({ ...e, field: e.field ? ['metafields', String(i), ...e.field.slice(2)] : null, elementIndex: i });
    if (errors.length > 0) return;
    if (Object.hasOwn(input, 'compareDigest')) {
      const current = find(entries[0]!.namespace, entries[0]!.key);
      const expected = input.compareDigest as string | null;
      if ((expected === null && current) || (expected !== null && (!current || compareDigest(current.value) !== expected))) {
        userErrors.push({
          field: ['metafields', String(i), 'compareDigest'],
          message: 'The resource has been updated since it was loaded. Try again with an updated `compareDigest` value.',
          code: 'STALE_OBJECT',
          elementIndex: i,
        });
        return;
      }
    }
    plan.push({ record: record!, entry: entries[0]! });
  });
  if (userErrors.length > 0) return { metafields: null, userErrors }; // atomic: nothing is written
  const metafields = plan.map(({ record, entry }) => {
    const [m] = store.setMetafields(record, [entry]);
    record.updatedAt = m!.updatedAt;
    return m;
  });
  return { metafields, userErrors };
}

export function coreTypes(): Record<string, TypeDef> {
  return {
    QueryRoot: {
      kind: 'object',
      fields: {
        shopifyFunctions: {
          type: 'ShopifyFunctionConnection!',
          args: { ...PAGE_ARGS, apiType: 'String', useCreationUi: 'Boolean' },
          resolve: (_r, args, ctx: AdminContext) => {
            let fns = ctx.state.functions.registry.of(ctx.app.apiKey);
            if (typeof args.apiType === 'string') fns = fns.filter((f) => f.apiType === args.apiType.toLowerCase());
            if (args.useCreationUi === true) fns = [];
            return paginate(fns, args as PageArgs, (f) => f.id);
          },
        },
        shopifyFunction: {
          type: 'ShopifyFunction',
          args: { id: 'String!' },
          resolve: (_r, args, ctx: AdminContext) => ctx.state.functions.registry.byId(ctx.app.apiKey, args.id) ?? null,
        },
        node: { type: 'Node', args: { id: 'ID!' }, resolve: (_r, args, ctx: AdminContext) => nodeOf(args.id, ctx) },
        nodes: {
          type: '[Node]!',
          args: { ids: '[ID!]!' },
          resolve: (_r, args, ctx: AdminContext) => (args.ids as unknown[]).map((id) => nodeOf(id, ctx)),
        },
      },
    },
    Mutation: {
      kind: 'object',
      fields: {
        metafieldsSet: { type: 'MetafieldsSetPayload', args: { metafields: '[MetafieldsSetInput!]!' }, resolve: metafieldsSet },
      },
    },
    Node: {
      kind: 'interface',
      possibleTypes: NODE_TYPES,
      fields: { id: { type: 'ID!', resolve: (r: { gid: string }) => r.gid } },
      resolveType: (value: { nodeType: string }) => value.nodeType,
    },
    PageInfo: {
      kind: 'object',
      fields: {
        hasNextPage: { type: 'Boolean!' },
        hasPreviousPage: { type: 'Boolean!' },
        startCursor: { type: 'String' },
        endCursor: { type: 'String' },
      },
    },
    Metafield: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (m: MetafieldRecord) => m.gid },
        namespace: { type: 'String!' },
        key: { type: 'String!' },
        type: { type: 'String!' },
        value: { type: 'String!' },
        jsonValue: { type: 'JSON!', resolve: jsonValue },
        compareDigest: { type: 'String!', resolve: (m: MetafieldRecord) => compareDigest(m.value) },
        ownerId: { type: 'ID!' },
        createdAt: { type: 'DateTime!' },
        updatedAt: { type: 'DateTime!' },
      },
    },
    ...connectionTypes('Metafield'),
    MetafieldsSetPayload: {
      kind: 'object',
      fields: { metafields: { type: '[Metafield!]' }, userErrors: { type: '[MetafieldsSetUserError!]!' } },
    },
    MetafieldsSetUserError: userErrorType('MetafieldsSetUserErrorCode', { elementIndex: 'Int' }),
    MetafieldsSetUserErrorCode: {
      kind: 'enum',
      values: [
        'APP_NOT_AUTHORIZED',
        'BLANK',
        'INCLUSION',
        'INVALID',
        'INVALID_TYPE',
        'INVALID_VALUE',
        'LESS_THAN_OR_EQUAL_TO',
        'PRESENT',
        'STALE_OBJECT',
        'TAKEN',
        'TOO_LONG',
        'TOO_SHORT',
      ],
    },
    ShopifyFunction: {
      kind: 'object',
      fields: {
        id: { type: 'String!' },
        handle: { type: 'String!' },
        apiType: { type: 'String!' },
        title: { type: 'String!' },
        description: { type: 'String' },
        appKey: { type: 'String!', resolve: (f: SimFunction) => f.apiKey },
        apiVersion: { type: 'String!', resolve: () => '2025-07' },
        useCreationUi: { type: 'Boolean!', resolve: () => false },
        app: { type: 'App!', resolve: (f: SimFunction, _a, ctx: AdminContext) => ctx.state.apps.get(f.apiKey) },
      },
    },
    ...connectionTypes('ShopifyFunction'),
    App: {
      kind: 'object',
      fields: {
        id: { type: 'ID!', resolve: (a: { id: number }) => `gid://shopify/App/${a.id}` },
        apiKey: { type: 'String!' },
        title: { type: 'String!', resolve: (a: { apiKey: string }) => a.apiKey },
      },
    },
  };
}
