/**
 * Platform functions at run time: local definitions (with their fields and owner fields) and live instances on the
 * platform, listed, created, updated and deleted through Admin GraphQL. Nothing is stored locally.
 * docs/functions.md describes the API this serves.
 */
import type { AdminGraphqlClient, DiscountMode, FunctionDefinition } from '../app/types.ts';
import type { Tenant } from '../db/sql.ts';
import { InvalidInputError, NotFoundError } from '../errors.ts';
import { fieldMetadata } from '../providers/fields.ts';
import { ADAPTERS, type Adapter, type AdapterContext, type DeployedFunction, modeOfId } from './adapters/index.ts';
import { FunctionInputError, fieldError, platformCall } from './errors.ts';
import { type OwnerValues, type UserError, bodyObject, parseConfig, parseOwner, withDefaults } from './input.ts';
import { CONFIG_METAFIELD, type FunctionInstance, toUserErrors } from './instance.ts';
import { API_TYPES, SUPPORT, discountModesOf, ownerFieldsOf } from './kinds.ts';
import { recreate } from './recreate.ts';

export interface FunctionsDeps {
  functions: Record<string, FunctionDefinition>;
  /** The Admin GraphQL client of a tenant (adminClientFor in production). */
  adminClient(appHandle: string, shop: string, signal?: AbortSignal): Pick<AdminGraphqlClient, 'request'>;
  /** How long the handle → function id map of an app is reused (default 60 s). */
  functionCacheMs?: number;
}

const DEPLOYED_QUERY = 'query MercatoShopifyFunctions { shopifyFunctions(first: 100) { nodes { id handle apiType } } }';

const NUMERIC_ID_TYPES: Record<string, string> = {
  cart_transform: 'CartTransform',
  delivery_customization: 'DeliveryCustomization',
  payment_customization: 'PaymentCustomization',
  checkout_validation: 'Validation',
  fulfillment_constraint: 'FulfillmentConstraintRule',
};

export function createFunctionsService(deps: FunctionsDeps) {
  const cache = new Map<string, { at: number; fns: DeployedFunction[] }>();
  const ttl = deps.functionCacheMs ?? 60_000;

  /** The definition of a handle, if defined and authorized for the tenant; else 404 (the same answer for both). */
  async function definitionFor(t: Tenant<string>, handle: string): Promise<FunctionDefinition> {
    const def = Object.values(deps.functions).find((d) => d.handle === handle);
    if (!def || (def.authorize && !(await def.authorize({ appHandle: t.appHandle, shop: t.shop }))))
      throw new NotFoundError(`Function "${handle}" is not defined`);
    return def;
  }

  function adapterFor(def: FunctionDefinition): Adapter {
    const adapter = ADAPTERS[def.type];
    if (!adapter)
      throw new InvalidInputError(
        `Functions of type ${def.type} have no platform mutation: their instances are managed in the platform's admin, not through the API`,
      );
    return adapter;
  }

  /** The deployed function of the handle (cached per app; a miss asks the platform again). */
  async function deployed(
    t: Tenant<string>,
    client: Pick<AdminGraphqlClient, 'request'>,
    def: FunctionDefinition,
    signal?: AbortSignal,
  ): Promise<DeployedFunction | null> {
    const find = (fns: DeployedFunction[]) =>
      fns.find((f) => f.handle === def.handle && API_TYPES[def.type].includes(f.apiType.toLowerCase())) ?? null;
    const cached = cache.get(t.appHandle);
    if (cached && Date.now() - cached.at < ttl) {
      const hit = find(cached.fns);
      if (hit) return hit;
    }
    const data = await client.request<{ shopifyFunctions: { nodes: DeployedFunction[] } }>(DEPLOYED_QUERY, { signal });
    const fns = data.shopifyFunctions.nodes;
    cache.set(t.appHandle, { at: Date.now(), fns });
    return find(fns);
  }

  async function contextFor(t: Tenant<string>, def: FunctionDefinition, signal?: AbortSignal): Promise<AdapterContext> {
    const client = deps.adminClient(t.appHandle, t.shop, signal);
    return { client, def, fn: await deployed(t, client, def, signal), signal };
  }

  /** A GID as is; a bare number becomes the GID of the type (discounts need the mode for it). */
  function instanceId(def: FunctionDefinition, raw: string, mode: DiscountMode | undefined): string {
    if (raw.startsWith('gid://shopify/')) return raw;
    if (!/^\d+$/.test(raw)) throw new NotFoundError('Function instance not found');
    if (def.type !== 'discount') return `gid://shopify/${NUMERIC_ID_TYPES[def.type]}/${raw}`;
    if (!mode) throw fieldError(['mode'], 'A numeric discount id needs the mode (automatic or code); or use the full GID');
    return `gid://shopify/${mode === 'automatic' ? 'DiscountAutomaticNode' : 'DiscountCodeNode'}/${raw}`;
  }

  async function current(ctx: AdapterContext, adapter: Adapter, id: string): Promise<FunctionInstance> {
    const instance = await adapter.read(ctx, id);
    if (!instance) throw new NotFoundError('Function instance not found');
    return instance;
  }

  function rejectIf(userErrors: UserError[]): void {
    if (userErrors.length > 0) throw new FunctionInputError(userErrors, 'mercato');
  }

  return {
    /** GET /api/functions */
    async listDefinitions(t: Tenant<string>) {
      const out = [];
      for (const [key, def] of Object.entries(deps.functions)) {
        if (def.authorize && !(await def.authorize({ appHandle: t.appHandle, shop: t.shop }))) continue;
        out.push({
          key,
          handle: def.handle,
          type: def.type,
          title: def.title ?? null,
          description: def.description ?? null,
          discountModes: def.type === 'discount' ? discountModesOf(def) : null,
          supported: SUPPORT[def.type],
          fields: fieldMetadata(def.fields, undefined).map((f) => ({ ...f, path: ['config', f.name] })),
          ownerFields: ownerFieldsOf(def),
          configMetafield: CONFIG_METAFIELD,
        });
      }
      return out;
    },

    /** GET /api/functions/:handle/instances */
    async listInstances(t: Tenant<string>, handle: string, signal?: AbortSignal) {
      const def = await definitionFor(t, handle);
      const adapter = adapterFor(def);
      return platformCall(async () => {
        const ctx = await contextFor(t, def, signal);
        const instances = await adapter.list(ctx);
        return { handle, type: def.type, function: ctx.fn, instances };
      });
    },

    /** POST /api/functions/:handle/instances → 201 */
    async createInstance(t: Tenant<string>, handle: string, rawBody: unknown, signal?: AbortSignal) {
      const def = await definitionFor(t, handle);
      const adapter = adapterFor(def);
      const body = bodyObject(rawBody);
      const modes = discountModesOf(def);
      let mode: DiscountMode | undefined;
      if (def.type === 'discount') {
        mode = modes.includes(body.mode as DiscountMode)
          ? (body.mode as DiscountMode)
          : modes.length === 1 && body.mode === undefined
            ? modes[0]
            : undefined;
        if (!mode && body.mode === undefined) throw fieldError(['mode'], `Field "mode" is required: ${modes.join(' or ')}`, 'BLANK');
      }
      const owner = parseOwner(def, body, mode);
      const config = await parseConfig(def, body.config ?? {});
      rejectIf([...owner.errors, ...config.errors]);
      const values: OwnerValues = withDefaults(def, mode, { ...owner.values, ...(mode ? { mode } : {}) });
      return platformCall(async () => {
        const ctx = await contextFor(t, def, signal);
        const outcome = await adapter.create(ctx, values, config.config);
        if (outcome.userErrors.length > 0) throw new FunctionInputError(toUserErrors(outcome.userErrors, adapter.inputArgs), 'platform');
        return { mutation: outcome.mutation, payload: outcome.payload, instance: outcome.instance };
      });
    },

    /** PUT /api/functions/:handle/instances/:id */
    async updateInstance(t: Tenant<string>, handle: string, rawId: string, rawBody: unknown, signal?: AbortSignal) {
      const def = await definitionFor(t, handle);
      const adapter = adapterFor(def);
      const body = bodyObject(rawBody);
      const modes = discountModesOf(def);
      const bodyMode = typeof body.mode === 'string' ? (body.mode as DiscountMode) : modes.length === 1 ? modes[0] : undefined;
      const id = instanceId(def, rawId, bodyMode);
      const owner = parseOwner(def, body, def.type === 'discount' ? (modeOfId(id) ?? bodyMode) : undefined);
      const config = Object.hasOwn(body, 'config') ? await parseConfig(def, body.config) : undefined;
      rejectIf([...owner.errors, ...(config?.errors ?? [])]);
      return platformCall(async () => {
        const ctx = await contextFor(t, def, signal);
        const live = await current(ctx, adapter, id);
        if (owner.values.mode !== undefined && owner.values.mode !== live.owner.mode)
          throw fieldError(['mode'], 'The mode of a discount cannot be changed: delete it and create another');
        const { mode: _mode, ...changes } = owner.values;
        if (!adapter.update) return recreate(ctx, adapter, live, changes, config?.config);
        const outcome = await adapter.update(ctx, live, changes, config?.config);
        if (outcome.userErrors.length > 0) throw new FunctionInputError(toUserErrors(outcome.userErrors, adapter.inputArgs), 'platform');
        return { ok: true as const, id: live.id, recreated: false };
      });
    },

    /** DELETE /api/functions/:handle/instances/:id[?mode=automatic|code] */
    async deleteInstance(t: Tenant<string>, handle: string, rawId: string, rawMode: string | undefined, signal?: AbortSignal) {
      const def = await definitionFor(t, handle);
      const adapter = adapterFor(def);
      let mode: DiscountMode | undefined;
      if (def.type === 'discount') {
        const modes = discountModesOf(def);
        if (rawMode !== undefined && !modes.includes(rawMode as DiscountMode))
          throw fieldError(['mode'], `mode must be ${modes.join(' or ')}`);
        if (rawMode === undefined && modes.length > 1)
          throw fieldError(['mode'], 'This discount function has both modes: give mode=automatic or mode=code', 'BLANK');
        mode = (rawMode as DiscountMode | undefined) ?? modes[0];
      }
      const id = instanceId(def, rawId, mode);
      return platformCall(async () => {
        const ctx = await contextFor(t, def, signal);
        const live = await current(ctx, adapter, id);
        if (mode && live.owner.mode !== mode) throw new NotFoundError('Function instance not found');
        const outcome = await adapter.remove(ctx, live);
        if (outcome.userErrors.length > 0) throw new FunctionInputError(toUserErrors(outcome.userErrors, adapter.inputArgs), 'platform');
        return { ok: true as const, deletedId: live.id };
      });
    },
  };
}

export type FunctionsService = ReturnType<typeof createFunctionsService>;
