/**
 * Delivery customizations, payment customizations and checkout validations: list, `node(id:)`, create, update and
 * delete mutations, each with an input object argument (`deliveryCustomization`, `paymentCustomization`,
 * `validation`). Validations call the enabled flag `enable` in their inputs and `enabled` on the object.
 */
import type { FunctionType } from '../../app/types.ts';
import type { OwnerValues } from '../input.ts';
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

interface Spec {
  type: FunctionType;
  /** GraphQL object type, e.g. `DeliveryCustomization`. */
  object: string;
  /** Query, argument and payload field name, e.g. `deliveryCustomization`. */
  name: string;
  createInput: string;
  updateInput: string;
  /** Fields selected on the object (besides id and the configuration). */
  fields: string;
  /** The owner values of a raw object. */
  owner(raw: Record<string, any>): OwnerValues;
  /** The function a raw object runs: its id and, when selected, its handle. */
  functionOf(raw: Record<string, any>): { id: string | null; handle: string | null };
  /** The platform input of the owner values (create: complete; update: only the changes). */
  input(owner: OwnerValues): Record<string, unknown>;
}

function pick(
  owner: OwnerValues,
  keys: Array<keyof OwnerValues>,
  rename: Partial<Record<keyof OwnerValues, string>> = {},
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (owner[key] !== undefined) out[rename[key] ?? key] = owner[key];
  return out;
}

const customizationSpec = (type: FunctionType, object: string, name: string): Spec => ({
  type,
  object,
  name,
  createInput: `${object}Input`,
  updateInput: `${object}Input`,
  fields: 'title enabled functionId',
  owner: (raw) => ({ title: raw.title, enabled: raw.enabled }),
  functionOf: (raw) => ({ id: raw.functionId ?? null, handle: null }),
  input: (owner) => pick(owner, ['title', 'enabled']),
});

const SPECS: Record<'delivery_customization' | 'payment_customization' | 'checkout_validation', Spec> = {
  delivery_customization: customizationSpec('delivery_customization', 'DeliveryCustomization', 'deliveryCustomization'),
  payment_customization: customizationSpec('payment_customization', 'PaymentCustomization', 'paymentCustomization'),
  checkout_validation: {
    type: 'checkout_validation',
    object: 'Validation',
    name: 'validation',
    createInput: 'ValidationCreateInput',
    updateInput: 'ValidationUpdateInput',
    fields: 'title enabled blockOnFailure shopifyFunction { id handle }',
    owner: (raw) => ({ title: raw.title, enabled: raw.enabled, blockOnFailure: raw.blockOnFailure }),
    functionOf: (raw) => ({ id: raw.shopifyFunction?.id ?? null, handle: raw.shopifyFunction?.handle ?? null }),
    input: (owner) => pick(owner, ['title', 'enabled', 'blockOnFailure'], { enabled: 'enable' }),
  },
};

function adapterFor(spec: Spec): Adapter {
  const selection = `id ${spec.fields} ${CONFIG_SELECTION}`;
  const plural = `${spec.name}s`;
  const LIST = `query MercatoList($after: String) { ${plural}(first: 50, after: $after) { nodes { ${selection} } ${PAGE_INFO} } }`;
  const READ = `query MercatoRead($id: ID!) { node(id: $id) { __typename ... on ${spec.object} { ${selection} } } }`;
  const create = `${spec.name}Create`;
  const update = `${spec.name}Update`;
  const remove = `${spec.name}Delete`;

  const toInstance = (ctx: AdapterContext, raw: Record<string, any>, mf?: { id?: string; value?: string } | null): FunctionInstance => ({
    id: raw.id,
    handle: ctx.def.handle,
    type: spec.type,
    functionId: spec.functionOf(raw).id,
    owner: spec.owner(raw),
    status: null,
    ...readConfig(mf === undefined ? raw.config : mf),
  });
  const mine = (ctx: AdapterContext, raw: Record<string, any>) => {
    const fn = spec.functionOf(raw);
    return runsFunction(ctx, fn.id, fn.handle);
  };

  return {
    inputArgs: [spec.name],

    async list(ctx) {
      if (!ctx.fn && spec.type !== 'checkout_validation') return [];
      return collectPages(
        async (after) => (await ctx.client.request(LIST, { variables: { after }, signal: ctx.signal }))[plural],
        (raw: Record<string, any>) => (mine(ctx, raw) ? toInstance(ctx, raw) : null),
      );
    },

    async read(ctx, id) {
      const { node } = await ctx.client.request(READ, { variables: { id }, signal: ctx.signal });
      return node?.__typename === spec.object && mine(ctx, node) ? toInstance(ctx, node) : null;
    },

    async create(ctx, owner, config): Promise<MutationOutcome> {
      const document = `mutation MercatoCreate($input: ${spec.createInput}!) { ${create}(${spec.name}: $input) { ${spec.name} { ${selection} } ${USER_ERRORS} } }`;
      const input = { ...functionArg(ctx), ...spec.input(owner), metafields: configMetafields(config) };
      const { payload, userErrors } = await mutate(ctx, create, document, { input });
      const raw = payload[spec.name];
      return { mutation: create, payload, instance: raw && userErrors.length === 0 ? toInstance(ctx, raw) : null, userErrors };
    },

    async update(ctx, current, changes, config): Promise<MutationOutcome> {
      const document = `mutation MercatoUpdate($id: ID!, $input: ${spec.updateInput}!) { ${update}(id: $id, ${spec.name}: $input) { ${spec.name} { ${selection} } ${USER_ERRORS} } }`;
      const input: Record<string, unknown> = spec.input(changes);
      if (config !== undefined) input.metafields = configMetafields(config);
      const { payload, userErrors } = await mutate(ctx, update, document, { id: current.id, input });
      const raw = payload[spec.name];
      return { mutation: update, payload, instance: raw && userErrors.length === 0 ? toInstance(ctx, raw) : null, userErrors };
    },

    async remove(ctx, current): Promise<MutationOutcome> {
      const document = `mutation MercatoDelete($id: ID!) { ${remove}(id: $id) { deletedId ${USER_ERRORS} } }`;
      const { payload, userErrors } = await mutate(ctx, remove, document, { id: current.id });
      return { mutation: remove, payload, instance: null, userErrors };
    },
  };
}

export const deliveryCustomizationAdapter = adapterFor(SPECS.delivery_customization);
export const paymentCustomizationAdapter = adapterFor(SPECS.payment_customization);
export const validationAdapter = adapterFor(SPECS.checkout_validation);
