/**
 * The Functions page's model: drafts, the checks before sending, the create and update bodies, the delete path, and
 * userErrors next to their fields. The definitions are GET /api/functions answers of the browser test's fixture app
 * (docs/functions.md shows the same shapes).
 */
import { describe, expect, it } from 'vitest';
import type { FunctionDefinitionInfo, FunctionInstanceInfo } from 'mercato/api';
import {
  checkDraft,
  configSummary,
  createBody,
  deletePath,
  formKeys,
  formMode,
  fromLocalInput,
  initialDraft,
  instanceName,
  ownerSummary,
  toLocalInput,
  updateBody,
  userErrorsToForm,
  visibleOwnerFields,
} from '../src/lib/functions.ts';

const META = { namespace: '$app', key: 'function-configuration', type: 'json' };

const volumeDiscount: FunctionDefinitionInfo = {
  key: 'volumeDiscount',
  handle: 'volume-discount',
  type: 'discount',
  title: 'Volume discount',
  description: 'Percent off lines with enough items',
  discountModes: ['automatic', 'code'],
  supported: { create: true, update: 'mutation', delete: true },
  fields: [
    { name: 'minQuantity', type: 'number', label: 'Minimum quantity per line', required: true, path: ['config', 'minQuantity'] },
    { name: 'percentage', type: 'number', label: 'Percent off', required: true, path: ['config', 'percentage'] },
  ],
  ownerFields: [
    {
      name: 'mode',
      path: ['mode'],
      type: 'select',
      label: 'Discount mode',
      required: true,
      nullable: false,
      createOnly: true,
      options: [
        { label: 'Automatic', value: 'automatic' },
        { label: 'Code', value: 'code' },
      ],
    },
    { name: 'title', path: ['title'], type: 'text', label: 'Title', required: true, nullable: false },
    { name: 'code', path: ['code'], type: 'text', label: 'Discount code', required: true, nullable: false, modes: ['code'] },
    {
      name: 'usageLimit',
      path: ['usageLimit'],
      type: 'number',
      label: 'Usage limit',
      required: false,
      nullable: true,
      default: null,
      modes: ['code'],
    },
    {
      name: 'appliesOncePerCustomer',
      path: ['appliesOncePerCustomer'],
      type: 'checkbox',
      label: 'Once per customer',
      required: false,
      nullable: false,
      default: false,
      modes: ['code'],
    },
    { name: 'startsAt', path: ['startsAt'], type: 'datetime', label: 'Starts at', required: false, nullable: false, default: 'now' },
    { name: 'endsAt', path: ['endsAt'], type: 'datetime', label: 'Ends at', required: false, nullable: true, default: null },
    {
      name: 'combinesWith.orderDiscounts',
      path: ['combinesWith', 'orderDiscounts'],
      type: 'checkbox',
      label: 'Combines with order discounts',
      required: false,
      nullable: false,
      default: false,
    },
    {
      name: 'combinesWith.productDiscounts',
      path: ['combinesWith', 'productDiscounts'],
      type: 'checkbox',
      label: 'Combines with product discounts',
      required: false,
      nullable: false,
      default: false,
    },
    {
      name: 'combinesWith.shippingDiscounts',
      path: ['combinesWith', 'shippingDiscounts'],
      type: 'checkbox',
      label: 'Combines with shipping discounts',
      required: false,
      nullable: false,
      default: false,
    },
  ],
  configMetafield: META,
};

const automaticOnly: FunctionDefinitionInfo = {
  ...volumeDiscount,
  handle: 'auto-only',
  discountModes: ['automatic'],
  ownerFields: volumeDiscount.ownerFields
    .map((f) =>
      f.name === 'mode' ? { ...f, required: false, default: 'automatic', options: [{ label: 'Automatic', value: 'automatic' }] } : f,
    )
    .filter((f) => !f.modes),
};

const bundles: FunctionDefinitionInfo = {
  key: 'bundles',
  handle: 'bundles',
  type: 'cart_transform',
  title: 'Bundles',
  description: null,
  discountModes: null,
  supported: { create: true, update: 'recreate', delete: true },
  fields: [{ name: 'bundleTag', type: 'text', label: 'Bundle tag', required: true, placeholder: 'bundle', path: ['config', 'bundleTag'] }],
  ownerFields: [
    {
      name: 'blockOnFailure',
      path: ['blockOnFailure'],
      type: 'checkbox',
      label: 'Block checkout when the function fails',
      required: false,
      nullable: false,
      default: false,
    },
  ],
  configMetafield: META,
};

const sameLocation: FunctionDefinitionInfo = {
  ...bundles,
  key: 'sameLocation',
  handle: 'same-location',
  type: 'fulfillment_constraint',
  title: null,
  fields: [{ name: 'tag', type: 'text', label: 'Product tag', required: false, path: ['config', 'tag'] }],
  ownerFields: [
    {
      name: 'deliveryMethodTypes',
      path: ['deliveryMethodTypes'],
      type: 'multiselect',
      label: 'Delivery methods',
      required: false,
      nullable: false,
      default: ['SHIPPING'],
      options: [
        { label: 'Shipping', value: 'SHIPPING' },
        { label: 'Local', value: 'LOCAL' },
      ],
    },
  ],
};

const codeInstance: FunctionInstanceInfo = {
  id: 'gid://shopify/DiscountCodeNode/1001',
  handle: 'volume-discount',
  type: 'discount',
  functionId: 'fn-1',
  owner: {
    mode: 'code',
    title: 'Bulk 10',
    code: 'BULK10',
    usageLimit: null,
    appliesOncePerCustomer: false,
    startsAt: '2026-03-01T00:00:00.000Z',
    endsAt: null,
    combinesWith: { orderDiscounts: false, productDiscounts: true, shippingDiscounts: false },
  },
  status: 'ACTIVE',
  config: { minQuantity: 3, percentage: 10 },
  configError: null,
  metafieldId: 'gid://shopify/Metafield/1002',
};

describe('function instance form', () => {
  it('shows the fields of the chosen discount mode only, and no mode select when there is one mode', () => {
    const names = (def: FunctionDefinitionInfo, mode?: 'automatic' | 'code') => visibleOwnerFields(def, mode).map((f) => f.name);
    expect(names(volumeDiscount)).toEqual([
      'mode',
      'title',
      'startsAt',
      'endsAt',
      'combinesWith.orderDiscounts',
      'combinesWith.productDiscounts',
      'combinesWith.shippingDiscounts',
    ]);
    expect(names(volumeDiscount, 'code')).toContain('code');
    expect(names(volumeDiscount, 'code')).toContain('usageLimit');
    expect(names(volumeDiscount, 'automatic')).not.toContain('code');
    expect(names(automaticOnly, formMode(automaticOnly, initialDraft(automaticOnly)))).not.toContain('mode');
    expect(formMode(automaticOnly, initialDraft(automaticOnly))).toBe('automatic');
    expect(formMode(volumeDiscount, initialDraft(volumeDiscount))).toBeUndefined();
    expect(formMode(volumeDiscount, initialDraft(volumeDiscount), codeInstance)).toBe('code');
  });

  it('checks before sending: the mode, required values, whole numbers, dates, lists', () => {
    const draft = initialDraft(volumeDiscount);
    expect(checkDraft(volumeDiscount, draft, undefined)).toEqual({
      mode: 'Choose a discount mode',
      title: 'Required',
      'config.minQuantity': 'Required',
      'config.percentage': 'Required',
    });
    Object.assign(draft, {
      mode: 'code',
      title: 'Bulk',
      code: '',
      usageLimit: '2.5',
      endsAt: 'soon',
      'config.minQuantity': 'three',
      'config.percentage': '10',
    });
    expect(checkDraft(volumeDiscount, draft, 'code')).toEqual({
      code: 'Required',
      usageLimit: 'Must be a whole number',
      endsAt: 'Must be a date and time',
      'config.minQuantity': 'Must be a number',
    });
    const rule = initialDraft(sameLocation);
    expect(rule.deliveryMethodTypes).toEqual(['SHIPPING']);
    rule.deliveryMethodTypes = [];
    expect(checkDraft(sameLocation, rule, undefined)).toEqual({ deliveryMethodTypes: 'Choose at least one' });
  });

  it('creates with the mode, the owner fields given (nested ones nested) and a typed configuration', () => {
    const draft = initialDraft(volumeDiscount);
    Object.assign(draft, {
      mode: 'code',
      title: 'Bulk 10',
      code: 'BULK10',
      usageLimit: '',
      'combinesWith.productDiscounts': true,
      endsAt: '2030-01-31T09:30',
      'config.minQuantity': '3',
      'config.percentage': ' 10 ',
    });
    expect(checkDraft(volumeDiscount, draft, 'code')).toEqual({});
    expect(createBody(volumeDiscount, draft, 'code')).toEqual({
      mode: 'code',
      title: 'Bulk 10',
      code: 'BULK10',
      appliesOncePerCustomer: false,
      endsAt: new Date('2030-01-31T09:30').toISOString(),
      combinesWith: { orderDiscounts: false, productDiscounts: true, shippingDiscounts: false },
      config: { minQuantity: 3, percentage: 10 },
    });
    // Empty start: the server's default ("now"); empty optional values are left out.
    expect(createBody(bundles, { ...initialDraft(bundles), 'config.bundleTag': 'kit' }, undefined)).toEqual({
      blockOnFailure: false,
      config: { bundleTag: 'kit' },
    });
    expect(createBody(sameLocation, initialDraft(sameLocation), undefined)).toEqual({ deliveryMethodTypes: ['SHIPPING'], config: {} });
  });

  it('updates with only what changed: edited owner fields, a cleared nullable one as null, the whole config if any of it changed', () => {
    const initial = initialDraft(volumeDiscount, codeInstance);
    expect(initial).toMatchObject({
      mode: 'code',
      title: 'Bulk 10',
      code: 'BULK10',
      usageLimit: '',
      'combinesWith.productDiscounts': true,
      'config.minQuantity': '3',
    });
    expect(initial.startsAt).toBe(toLocalInput('2026-03-01T00:00:00.000Z'));
    expect(updateBody(volumeDiscount, { ...initial }, initial, codeInstance)).toEqual({});
    expect(updateBody(volumeDiscount, { ...initial, title: 'Bulk 15', 'config.percentage': '15' }, initial, codeInstance)).toEqual({
      title: 'Bulk 15',
      config: { minQuantity: 3, percentage: 15 },
    });
    const withEnd = {
      ...initialDraft(volumeDiscount, {
        ...codeInstance,
        owner: { ...codeInstance.owner, endsAt: '2030-01-01T00:00:00.000Z', usageLimit: 5 },
      }),
    };
    expect(updateBody(volumeDiscount, { ...withEnd, endsAt: '', usageLimit: '' }, withEnd, codeInstance)).toEqual({
      endsAt: null,
      usageLimit: null,
    });
    expect(updateBody(volumeDiscount, { ...initial, 'combinesWith.orderDiscounts': true }, initial, codeInstance)).toEqual({
      combinesWith: { orderDiscounts: true },
    });
    // The mode is fixed after create: never sent, never checked.
    expect(updateBody(volumeDiscount, { ...initial, mode: 'automatic' }, initial, codeInstance)).toEqual({});
    expect(checkDraft(volumeDiscount, { ...initial, title: '' }, 'code', initial)).toEqual({ title: 'Required' });
    expect(checkDraft(volumeDiscount, initial, 'code', initial)).toEqual({});
  });

  it('deletes by the encoded GID, with the mode when the definition has both modes', () => {
    expect(deletePath(volumeDiscount, codeInstance)).toBe(
      '/api/functions/volume-discount/instances/gid%3A%2F%2Fshopify%2FDiscountCodeNode%2F1001?mode=code',
    );
    expect(deletePath(automaticOnly, { ...codeInstance, owner: { ...codeInstance.owner, mode: 'automatic' } })).toBe(
      '/api/functions/auto-only/instances/gid%3A%2F%2Fshopify%2FDiscountCodeNode%2F1001',
    );
    expect(deletePath(bundles, { ...codeInstance, id: 'gid://shopify/CartTransform/7', owner: {} })).toBe(
      '/api/functions/bundles/instances/gid%3A%2F%2Fshopify%2FCartTransform%2F7',
    );
  });

  it('puts userErrors next to their fields, and the others above the form', () => {
    const keys = formKeys(volumeDiscount, 'code');
    const mapped = userErrorsToForm(
      [
        { field: ['code'], message: 'Code must be unique. Please try a different code.', code: 'TAKEN' },
        { field: ['config', 'percentage'], message: 'Field "percentage": Too big', code: 'INVALID' },
        { field: ['combinesWith', 'orderDiscounts'], message: 'Cannot combine', code: 'INVALID' },
        { field: ['config'], message: 'Metafield value is invalid', code: 'INVALID' },
        { field: null, message: 'Function not found', code: 'FUNCTION_NOT_FOUND' },
        { field: ['usageLimit'], message: 'Usage limit must be greater than 0', code: 'GREATER_THAN' },
      ],
      keys,
    );
    expect(mapped.fields).toEqual({
      code: 'Code must be unique. Please try a different code.',
      'config.percentage': 'Field "percentage": Too big',
      'combinesWith.orderDiscounts': 'Cannot combine',
      usageLimit: 'Usage limit must be greater than 0',
    });
    expect(mapped.general).toEqual(['Metafield value is invalid', 'Function not found']);
    // A field of the other mode is not on the form: above it.
    expect(userErrorsToForm([{ field: ['code'], message: 'x' }], formKeys(volumeDiscount, 'automatic'))).toEqual({
      fields: {},
      general: ['x'],
    });
    expect(userErrorsToForm(undefined, keys)).toEqual({ fields: {}, general: [] });
  });

  it('names and summarises instances', () => {
    expect(instanceName(volumeDiscount, codeInstance)).toBe('Bulk 10');
    expect(instanceName(bundles, { ...codeInstance, id: 'gid://shopify/CartTransform/1004', owner: { blockOnFailure: false } })).toBe(
      'Cart transform 1004',
    );
    const date = (iso: string) => `D(${iso})`;
    expect(ownerSummary(volumeDiscount, codeInstance, date)).toEqual([
      'Discount code: BULK10',
      'Usage limit: None',
      'Once per customer: No',
      'Starts at: D(2026-03-01T00:00:00.000Z)',
      'Ends at: None',
      'Combines with order discounts: No',
      'Combines with product discounts: Yes',
      'Combines with shipping discounts: No',
    ]);
    expect(ownerSummary(sameLocation, { ...codeInstance, owner: { deliveryMethodTypes: ['SHIPPING', 'LOCAL'] } }, date)).toEqual([
      'Delivery methods: Shipping, Local',
    ]);
    expect(configSummary(volumeDiscount, { percentage: 10, extra: { a: 1 } })).toEqual(['Percent off: 10', 'extra: {"a":1}']);
  });

  it('converts datetime-local values to and from ISO in the browser time zone', () => {
    const iso = fromLocalInput('2030-01-31T09:30');
    expect(iso).toBe(new Date(2030, 0, 31, 9, 30).toISOString());
    expect(toLocalInput(iso!)).toBe('2030-01-31T09:30');
    expect(fromLocalInput('tomorrow')).toBeNull();
    expect(toLocalInput('nope')).toBe('');
  });
});
