/** GET /api/functions, authorization per definition, unknown handles, types without mutations, page gating — over HTTP. */
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { OTHER_SHOP, SHOP, type TestRuntime } from '../helpers/runtime.ts';
import { instancesPath, startFunctionsRuntime, startFunctionsSim } from './helpers.ts';
import { json } from '../kit/index.ts';

describeEngines('functions: definitions', (get) => {
  let sim: PlatformSim;
  let t: TestRuntime;

  beforeAll(async () => {
    sim = await startFunctionsSim();
    t = await startFunctionsRuntime(get().db, sim);
  });
  afterAll(async () => {
    await t?.close();
    await sim?.close();
  });

  it('lists the definitions with their config fields, owner fields, supported operations and the metafield', async () => {
    const res = await t.api('/api/functions');
    expect(res.status).toBe(200);
    const { functions } = (await json(res)).body;
    expect(functions.map((f: any) => f.key)).toEqual([
      'volume',
      'welcome',
      'autoOnly',
      'bundler',
      'hideShipping',
      'hidePayment',
      'minQty',
      'sameLocation',
      'routing',
      'private',
      'notDeployed',
    ]);
    const volume = functions[0];
    expect(volume).toMatchObject({
      handle: 'volume',
      type: 'discount',
      title: 'Volume discount',
      description: null,
      discountModes: ['automatic', 'code'],
      supported: { create: true, update: 'mutation', delete: true },
      configMetafield: { namespace: '$app', key: 'function-configuration', type: 'json' },
    });
    expect(volume.fields).toEqual([
      { name: 'percent', type: 'number', label: 'Percent off', required: true, path: ['config', 'percent'] },
      { name: 'note', type: 'text', label: 'Note', required: false, path: ['config', 'note'] },
    ]);
    expect(volume.ownerFields.map((f: any) => f.name)).toEqual([
      'mode',
      'title',
      'code',
      'usageLimit',
      'appliesOncePerCustomer',
      'startsAt',
      'endsAt',
      'combinesWith.orderDiscounts',
      'combinesWith.productDiscounts',
      'combinesWith.shippingDiscounts',
    ]);
    expect(volume.ownerFields[0]).toEqual({
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
    });
    expect(volume.ownerFields.find((f: any) => f.name === 'usageLimit')).toMatchObject({
      type: 'number',
      nullable: true,
      default: null,
      modes: ['code'],
    });
    expect(volume.ownerFields.find((f: any) => f.name === 'combinesWith.orderDiscounts')).toMatchObject({
      path: ['combinesWith', 'orderDiscounts'],
      type: 'checkbox',
      default: false,
    });
    // an automatic-only discount has no code fields and a fixed mode
    const autoOnly = functions.find((f: any) => f.key === 'autoOnly');
    expect(autoOnly.discountModes).toEqual(['automatic']);
    expect(autoOnly.ownerFields.find((f: any) => f.name === 'mode')).toMatchObject({ required: false, default: 'automatic' });
    expect(autoOnly.ownerFields.some((f: any) => f.name === 'code')).toBe(false);
    const byKey = (k: string) => functions.find((f: any) => f.key === k);
    expect(byKey('bundler')).toMatchObject({
      supported: { update: 'recreate' },
      discountModes: null,
      ownerFields: [{ name: 'blockOnFailure', type: 'checkbox', default: false }],
    });
    expect(byKey('hideShipping').ownerFields.map((f: any) => [f.name, f.required, f.default])).toEqual([
      ['title', true, undefined],
      ['enabled', false, true],
    ]);
    expect(byKey('minQty').ownerFields.map((f: any) => f.name)).toEqual(['title', 'enabled', 'blockOnFailure']);
    expect(byKey('sameLocation')).toMatchObject({
      supported: { update: 'recreate' },
      ownerFields: [{ name: 'deliveryMethodTypes', type: 'multiselect', default: ['SHIPPING'] }],
    });
    expect(byKey('sameLocation').ownerFields[0].options.map((o: any) => o.value)).toEqual([
      'SHIPPING',
      'LOCAL',
      'PICK_UP',
      'PICKUP_POINT',
      'RETAIL',
      'NONE',
    ]);
    expect(byKey('routing')).toMatchObject({ supported: { create: false, update: false, delete: false }, ownerFields: [] });
    expect(byKey('hidePayment').fields[0]).toMatchObject({
      type: 'select',
      options: [
        { label: 'Cash on delivery', value: 'cod' },
        { label: 'Bank transfer', value: 'bank' },
      ],
    });
  });

  it('runs authorize on every request: a refused definition is hidden and its endpoints are 404', async () => {
    const { functions } = (await json(await t.api('/api/functions', { shop: OTHER_SHOP }))).body;
    expect(functions.map((f: any) => f.handle)).not.toContain('private');
    for (const [method, path] of [
      ['GET', instancesPath('private')],
      ['POST', instancesPath('private')],
      ['PUT', instancesPath('private', 'gid://shopify/CartTransform/1')],
      ['DELETE', instancesPath('private', 'gid://shopify/CartTransform/1')],
    ] as const) {
      const res = await t.api(path, { method, shop: OTHER_SHOP, json: method === 'POST' || method === 'PUT' ? { config: {} } : undefined });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect((await json(res)).body).toEqual({ error: 'Function "private" is not defined' });
    }
    // the shop it authorizes works
    const created = await t.api(instancesPath('private'), { method: 'POST', json: { config: {} } });
    expect(created.status).toBe(201);
  });

  it('answers 404 for an unknown handle and an unknown instance', async () => {
    expect((await t.api(instancesPath('ghost'))).status).toBe(404);
    expect((await t.api(instancesPath('ghost'), { method: 'POST', json: { config: {} } })).status).toBe(404);
    const res = await t.api(instancesPath('hide-shipping', 'gid://shopify/DeliveryCustomization/999999'), {
      method: 'PUT',
      json: { title: 'x' },
    });
    expect(res.status).toBe(404);
    expect((await json(res)).body).toEqual({ error: 'Function instance not found' });
    expect((await t.api(instancesPath('hide-shipping', 'not-an-id'), { method: 'DELETE' })).status).toBe(404);
  });

  it('answers 400 on every instance endpoint of a type without a platform mutation', async () => {
    for (const [method, path] of [
      ['GET', instancesPath('nearest')],
      ['POST', instancesPath('nearest')],
      ['PUT', instancesPath('nearest', '1')],
      ['DELETE', instancesPath('nearest', '1')],
    ] as const) {
      const res = await t.api(path, { method, json: method === 'POST' || method === 'PUT' ? { config: {} } : undefined });
      expect(res.status, `${method}`).toBe(400);
      expect((await json(res)).body.error).toBe(
        "Functions of type order_routing_location_rule have no platform mutation: their instances are managed in the platform's admin, not through the API",
      );
    }
  });

  it('a function that is not deployed lists no instances and its create is refused by the platform', async () => {
    const list = (await json(await t.api(instancesPath('not-deployed')))).body;
    expect(list).toEqual({ handle: 'not-deployed', type: 'delivery_customization', function: null, instances: [] });
    const res = await t.api(instancesPath('not-deployed'), { method: 'POST', json: { title: 'x', config: {} } });
    expect(res.status).toBe(400);
    expect((await json(res)).body).toEqual({
      error: "Function with handle 'not-deployed' not found.",
      source: 'platform',
      userErrors: [
        {
          field: null,
          message: "Function with handle 'not-deployed' not found.",
          code: 'FUNCTION_NOT_FOUND',
          platformField: ['deliveryCustomization', 'functionHandle'],
        },
      ],
    });
  });

  it('needs a JSON object body for create and update', async () => {
    const res = await t.api(instancesPath('hide-shipping'), {
      method: 'POST',
      body: 'nope',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect((await json(res)).body).toEqual({ error: 'Request body must be JSON' });
    const list = await t.api(instancesPath('hide-shipping', '1'), { method: 'PUT', json: [{ title: 'x' }] });
    expect(list.status).toBe(400);
    expect((await json(list)).body.userErrors).toEqual([
      { field: null, message: 'The body must be a JSON object: { config, …owner fields }', code: 'INVALID' },
    ]);
  });
});

describe('functions: page gating', () => {
  describeEngines('page modes', (get) => {
    let sim: PlatformSim;
    beforeAll(async () => {
      sim = await startFunctionsSim();
    });
    afterAll(() => sim?.close());

    it('a disabled functions page makes every /api/functions path 404 { error: "Not found" }; hidden changes nothing', async () => {
      const disabled = await startFunctionsRuntime(get().db, sim, { functions: 'disabled' });
      try {
        for (const path of ['/api/functions', instancesPath('hide-shipping'), instancesPath('hide-shipping', '1')]) {
          const res = await disabled.api(path);
          expect(res.status, path).toBe(404);
          expect((await json(res)).body).toEqual({ error: 'Not found' });
        }
        const post = await disabled.api(instancesPath('hide-shipping'), { method: 'POST', json: { title: 'x', config: { keyword: 'a' } } });
        expect(post.status).toBe(404);
        expect(sim.state.functions.list('deliveryCustomization', SHOP)).toEqual([]);
        expect((await json(await disabled.api('/api/pages'))).body.pages.functions).toBe('disabled');
      } finally {
        await disabled.close();
      }
      const hidden = await startFunctionsRuntime(get().db, sim, { functions: 'hidden' });
      try {
        expect((await hidden.api('/api/functions')).status).toBe(200);
        expect((await hidden.api(instancesPath('hide-shipping'))).status).toBe(200);
      } finally {
        await hidden.close();
      }
    });
  });
});
