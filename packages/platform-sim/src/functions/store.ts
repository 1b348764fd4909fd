/**
 * Function instances per shop, in memory: app discounts (automatic and code), cart transforms, delivery and payment
 * customizations, validations and fulfillment constraint rules, each with its metafields. Readable by tests as
 * `sim.state.functions`.
 */
import { FunctionRegistry } from './registry.ts';
import type { MetafieldRecord, SimUserError } from './metafields.ts';

/** A refusal injected for tests: the next `remaining` calls of `mutation` answer these userErrors instead. */
export interface InjectedUserErrors {
  mutation: string;
  userErrors: SimUserError[];
  remaining: number;
}

export type InstanceKind =
  'discount' | 'cartTransform' | 'deliveryCustomization' | 'paymentCustomization' | 'validation' | 'fulfillmentConstraintRule';

interface BaseRecord {
  id: number;
  gid: string;
  /** The GraphQL type `node(id:)` answers with. */
  nodeType: string;
  /** The app whose function it runs. */
  apiKey: string;
  shop: string;
  functionId: string;
  metafields: MetafieldRecord[];
  createdAt: string;
  updatedAt: string;
}

export interface CombinesWith {
  orderDiscounts: boolean;
  productDiscounts: boolean;
  shippingDiscounts: boolean;
}

export interface DiscountRecord extends BaseRecord {
  kind: 'discount';
  method: 'automatic' | 'code';
  title: string;
  startsAt: string;
  endsAt: string | null;
  combinesWith: CombinesWith;
  /** Code discounts only. */
  code: string | null;
  usageLimit: number | null;
  appliesOncePerCustomer: boolean;
}

export interface CartTransformRecord extends BaseRecord {
  kind: 'cartTransform';
  blockOnFailure: boolean;
}

export interface CustomizationRecord extends BaseRecord {
  kind: 'deliveryCustomization' | 'paymentCustomization';
  title: string;
  enabled: boolean;
}

export interface ValidationRecord extends BaseRecord {
  kind: 'validation';
  title: string;
  enabled: boolean;
  blockOnFailure: boolean;
}

export interface FulfillmentConstraintRuleRecord extends BaseRecord {
  kind: 'fulfillmentConstraintRule';
  deliveryMethodTypes: string[];
}

export type InstanceRecord =
  DiscountRecord | CartTransformRecord | CustomizationRecord | ValidationRecord | FulfillmentConstraintRuleRecord;

const GID_TYPES: Record<string, InstanceKind> = {
  DiscountAutomaticNode: 'discount',
  DiscountCodeNode: 'discount',
  CartTransform: 'cartTransform',
  DeliveryCustomization: 'deliveryCustomization',
  PaymentCustomization: 'paymentCustomization',
  Validation: 'validation',
  FulfillmentConstraintRule: 'fulfillmentConstraintRule',
};

export class FunctionsState {
  readonly registry = new FunctionRegistry();
  /** Every instance by GID, in creation order. */
  readonly instances = new Map<string, InstanceRecord>();
  readonly injected: InjectedUserErrors[] = [];
  private nextId = 1001;

  /** Takes the next injected refusal of a mutation, if any. */
  takeInjected(mutation: string): SimUserError[] | undefined {
    const index = this.injected.findIndex((i) => i.mutation === mutation && i.remaining > 0);
    if (index < 0) return undefined;
    const hit = this.injected[index]!;
    if (--hit.remaining <= 0) this.injected.splice(index, 1);
    return hit.userErrors;
  }

  newId(): number {
    return this.nextId++;
  }

  /** A new record's id, GID and timestamps. */
  base(nodeType: string, apiKey: string, shop: string, functionId: string) {
    const id = this.newId();
    const now = new Date().toISOString();
    return {
      id,
      gid: `gid://shopify/${nodeType}/${id}`,
      nodeType,
      apiKey,
      shop,
      functionId,
      metafields: [] as MetafieldRecord[],
      createdAt: now,
      updatedAt: now,
    };
  }

  add<T extends InstanceRecord>(record: T): T {
    this.instances.set(record.gid, record);
    return record;
  }

  /** The shop's instances of a kind (optionally only those of one app), oldest first. */
  list<K extends InstanceKind>(kind: K, shop: string, apiKey?: string): Array<Extract<InstanceRecord, { kind: K }>> {
    const out: Array<Extract<InstanceRecord, { kind: K }>> = [];
    for (const r of this.instances.values()) {
      if (r.kind === kind && r.shop === shop && (apiKey === undefined || r.apiKey === apiKey))
        out.push(r as Extract<InstanceRecord, { kind: K }>);
    }
    return out;
  }

  /** The instance with this GID in the shop, if any (`kind` narrows it; a GID of another type is undefined). */
  find<K extends InstanceKind>(gid: unknown, shop: string, kind?: K): Extract<InstanceRecord, { kind: K }> | undefined {
    if (typeof gid !== 'string') return undefined;
    const record = this.instances.get(gid);
    if (!record || record.shop !== shop || (kind !== undefined && record.kind !== kind)) return undefined;
    return record as Extract<InstanceRecord, { kind: K }>;
  }

  remove(gid: string): void {
    this.instances.delete(gid);
  }

  /** Applies checked metafield entries to a record (upsert by namespace and key). */
  setMetafields(
    record: InstanceRecord,
    entries: Array<{ namespace: string; key: string; type: string; value: string }>,
  ): MetafieldRecord[] {
    const now = new Date().toISOString();
    return entries.map((e) => {
      const current = record.metafields.find((m) => m.namespace === e.namespace && m.key === e.key);
      if (current) {
        current.type = e.type;
        current.value = e.value;
        current.updatedAt = now;
        return current;
      }
      const id = this.newId();
      const created: MetafieldRecord = {
        id,
        gid: `gid://shopify/Metafield/${id}`,
        ...e,
        createdAt: now,
        updatedAt: now,
        ownerId: record.gid,
      };
      record.metafields.push(created);
      return created;
    });
  }

  /** The instance owning a metafield GID. */
  metafieldOwner(gid: string, shop: string): { record: InstanceRecord; metafield: MetafieldRecord } | undefined {
    for (const record of this.instances.values()) {
      if (record.shop !== shop) continue;
      const metafield = record.metafields.find((m) => m.gid === gid);
      if (metafield) return { record, metafield };
    }
    return undefined;
  }

  /** Counts per kind, for the control API. */
  counts(): Record<InstanceKind, number> {
    const out: Record<InstanceKind, number> = {
      discount: 0,
      cartTransform: 0,
      deliveryCustomization: 0,
      paymentCustomization: 0,
      validation: 0,
      fulfillmentConstraintRule: 0,
    };
    for (const r of this.instances.values()) out[r.kind]++;
    return out;
  }
}

/** The kind a GID names (by its type segment), if it is an instance type. */
export function kindOfGid(gid: string): InstanceKind | undefined {
  const match = /^gid:\/\/shopify\/([A-Za-z]+)\/\d+$/.exec(gid);
  return match ? GID_TYPES[match[1]!] : undefined;
}
