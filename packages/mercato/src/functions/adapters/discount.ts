/**
 * Discount functions, automatic and code: `discountNodes` (query `type:app`), `node(id:)` on
 * `DiscountAutomaticNode` / `DiscountCodeNode`, `discountAutomaticAppCreate/Update`, `discountCodeAppCreate/Update`,
 * `discountAutomaticDelete`, `discountCodeDelete`. The instance id is the discount node's GID, whose type says the mode.
 */
import type { DiscountMode } from '../../app/types.ts';
import type { CombinesWith, OwnerValues } from '../input.ts';
import { CONFIG_SELECTION, type FunctionInstance, configMetafields, readConfig } from '../instance.ts';
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

const COMBINES = 'combinesWith { orderDiscounts productDiscounts shippingDiscounts }';
const AUTOMATIC_FIELDS = `discountId title status startsAt endsAt ${COMBINES} appDiscountType { functionId }`;
const CODE_FIELDS = `${AUTOMATIC_FIELDS} usageLimit appliesOncePerCustomer codes(first: 1) { nodes { code } }`;

const LIST = `query MercatoDiscounts($after: String) {
  discountNodes(first: 50, after: $after, query: "type:app") {
    nodes { id ${CONFIG_SELECTION} discount { __typename ... on DiscountAutomaticApp { ${AUTOMATIC_FIELDS} } ... on DiscountCodeApp { ${CODE_FIELDS} } } }
    ${PAGE_INFO}
  }
}`;

const READ = `query MercatoDiscount($id: ID!) {
  node(id: $id) {
    __typename
    ... on DiscountAutomaticNode { id ${CONFIG_SELECTION} automaticDiscount { __typename ... on DiscountAutomaticApp { ${AUTOMATIC_FIELDS} } } }
    ... on DiscountCodeNode { id ${CONFIG_SELECTION} codeDiscount { __typename ... on DiscountCodeApp { ${CODE_FIELDS} } } }
  }
}`;

const MUTATIONS = {
  automatic: {
    arg: 'automaticAppDiscount',
    create: 'discountAutomaticAppCreate',
    update: 'discountAutomaticAppUpdate',
    remove: 'discountAutomaticDelete',
    deletedField: 'deletedAutomaticDiscountId',
    input: 'DiscountAutomaticAppInput',
    fields: AUTOMATIC_FIELDS,
  },
  code: {
    arg: 'codeAppDiscount',
    create: 'discountCodeAppCreate',
    update: 'discountCodeAppUpdate',
    remove: 'discountCodeDelete',
    deletedField: 'deletedCodeDiscountId',
    input: 'DiscountCodeAppInput',
    fields: CODE_FIELDS,
  },
} as const;

interface RawDiscount {
  __typename?: string;
  discountId: string;
  title: string;
  status: FunctionInstance['status'];
  startsAt: string;
  endsAt: string | null;
  combinesWith: CombinesWith;
  appDiscountType?: { functionId?: string } | null;
  usageLimit?: number | null;
  appliesOncePerCustomer?: boolean;
  codes?: { nodes: Array<{ code: string }> };
}

function toInstance(
  ctx: AdapterContext,
  raw: RawDiscount,
  mode: DiscountMode,
  mf: { id?: string; value?: string } | null | undefined,
): FunctionInstance {
  const owner: OwnerValues = {
    mode,
    title: raw.title,
    startsAt: raw.startsAt,
    endsAt: raw.endsAt ?? null,
    combinesWith: { ...raw.combinesWith },
  };
  if (mode === 'code') {
    owner.code = raw.codes?.nodes[0]?.code ?? '';
    owner.usageLimit = raw.usageLimit ?? null;
    owner.appliesOncePerCustomer = raw.appliesOncePerCustomer === true;
  }
  return {
    id: raw.discountId,
    handle: ctx.def.handle,
    type: 'discount',
    functionId: raw.appDiscountType?.functionId ?? null,
    owner,
    status: raw.status ?? null,
    ...readConfig(mf),
  };
}

const modeOfTypename = (t: string | undefined): DiscountMode | null =>
  t === 'DiscountAutomaticApp' || t === 'DiscountAutomaticNode'
    ? 'automatic'
    : t === 'DiscountCodeApp' || t === 'DiscountCodeNode'
      ? 'code'
      : null;

/** The mode a discount GID names. */
export function modeOfId(id: string): DiscountMode | null {
  return id.startsWith('gid://shopify/DiscountAutomaticNode/')
    ? 'automatic'
    : id.startsWith('gid://shopify/DiscountCodeNode/')
      ? 'code'
      : null;
}

/** The platform input of a create (complete owner values) or an update (only the changes). */
function discountInput(
  mode: DiscountMode,
  owner: OwnerValues,
  config: Record<string, unknown> | undefined,
  fnArg?: Record<string, string>,
): Record<string, unknown> {
  const input: Record<string, unknown> = { ...fnArg };
  for (const key of ['title', 'startsAt', 'endsAt', 'combinesWith'] as const) if (owner[key] !== undefined) input[key] = owner[key];
  if (mode === 'code')
    for (const key of ['code', 'usageLimit', 'appliesOncePerCustomer'] as const) if (owner[key] !== undefined) input[key] = owner[key];
  if (config !== undefined) input.metafields = configMetafields(config);
  return input;
}

export const discountAdapter: Adapter = {
  inputArgs: ['automaticAppDiscount', 'codeAppDiscount'],

  async list(ctx) {
    if (!ctx.fn) return [];
    return collectPages(
      async (after) => (await ctx.client.request(LIST, { variables: { after }, signal: ctx.signal })).discountNodes,
      (node: { config?: { id: string; value: string } | null; discount: RawDiscount }) => {
        const mode = modeOfTypename(node.discount?.__typename);
        if (!mode || !runsFunction(ctx, node.discount.appDiscountType?.functionId)) return null;
        return toInstance(ctx, node.discount, mode, node.config);
      },
    );
  },

  async read(ctx, id) {
    const { node } = await ctx.client.request(READ, { variables: { id }, signal: ctx.signal });
    const mode = modeOfTypename(node?.__typename);
    if (!mode) return null;
    const raw: RawDiscount | undefined = mode === 'automatic' ? node.automaticDiscount : node.codeDiscount;
    if (!raw || !runsFunction(ctx, raw.appDiscountType?.functionId)) return null;
    return toInstance(ctx, raw, mode, node.config);
  },

  async create(ctx, owner, config): Promise<MutationOutcome> {
    const mode = owner.mode ?? 'automatic';
    const m = MUTATIONS[mode];
    const document = `mutation MercatoDiscountCreate($input: ${m.input}!) { ${m.create}(${m.arg}: $input) { ${m.arg} { ${m.fields} } ${USER_ERRORS} } }`;
    const { payload, userErrors } = await mutate(ctx, m.create, document, { input: discountInput(mode, owner, config, functionArg(ctx)) });
    const raw = payload[m.arg] as RawDiscount | null;
    // the discount object has no metafields (its node has): read the node for the complete instance
    const instance =
      raw && userErrors.length === 0
        ? ((await discountAdapter.read(ctx, raw.discountId)) ?? toInstance(ctx, raw, mode, { value: JSON.stringify(config) }))
        : null;
    return { mutation: m.create, payload, instance, userErrors };
  },

  async update(ctx, current, changes, config): Promise<MutationOutcome> {
    const mode = current.owner.mode ?? 'automatic';
    const m = MUTATIONS[mode];
    const document = `mutation MercatoDiscountUpdate($id: ID!, $input: ${m.input}!) { ${m.update}(id: $id, ${m.arg}: $input) { ${m.arg} { ${m.fields} } ${USER_ERRORS} } }`;
    // the platform's combinesWith input defaults omitted flags to false: send the current ones with the changes
    const merged: OwnerValues = changes.combinesWith
      ? { ...changes, combinesWith: { ...current.owner.combinesWith, ...changes.combinesWith } }
      : changes;
    const { payload, userErrors } = await mutate(ctx, m.update, document, { id: current.id, input: discountInput(mode, merged, config) });
    const raw = payload[m.arg] as RawDiscount | null;
    const stored =
      config !== undefined ? { value: JSON.stringify(config) } : current.config ? { value: JSON.stringify(current.config) } : null;
    const instance = raw && userErrors.length === 0 ? toInstance(ctx, raw, mode, stored) : null;
    return { mutation: m.update, payload, instance, userErrors };
  },

  async remove(ctx, current): Promise<MutationOutcome> {
    const m = MUTATIONS[current.owner.mode ?? 'automatic'];
    const document = `mutation MercatoDiscountDelete($id: ID!) { ${m.remove}(id: $id) { ${m.deletedField} ${USER_ERRORS} } }`;
    const { payload, userErrors } = await mutate(ctx, m.remove, document, { id: current.id });
    return { mutation: m.remove, payload, instance: null, userErrors };
  },
};
