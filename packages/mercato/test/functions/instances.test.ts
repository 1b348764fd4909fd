/**
 * Delivery and payment customizations, checkout validations (updated in place), cart transforms and fulfillment
 * constraint rules (deleted and created again) over HTTP against the simulator.
 */
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { OTHER_SHOP, SHOP, type TestRuntime } from '../helpers/runtime.ts';
import { instancesPath, startFunctionsRuntime, startFunctionsSim } from './helpers.ts';
import { json } from '../kit/index.ts';

describeEngines('functions: instances', (get) => {
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

  const post = (handle: string, body: unknown, shop?: string) => t.api(instancesPath(handle), { method: 'POST', json: body, shop });
  const put = (handle: string, id: string, body: unknown) => t.api(instancesPath(handle, id), { method: 'PUT', json: body });
  const del = (handle: string, id: string) => t.api(instancesPath(handle, id), { method: 'DELETE' });
  const list = async (handle: string, shop?: string) => (await json(await t.api(instancesPath(handle), { shop }))).body.instances as any[];

  it('delivery customizations: create (enabled by default), list with config, update in place, delete', async () => {
    const res = await post('hide-shipping', { title: 'Hide express', config: { keyword: 'Express' } });
    expect(res.status).toBe(201);
    const body = (await json(res)).body;
    expect(body.mutation).toBe('deliveryCustomizationCreate');
    expect(body.payload).toEqual({
      deliveryCustomization: {
        id: expect.stringMatching(/^gid:\/\/shopify\/DeliveryCustomization\/\d+$/),
        title: 'Hide express',
        enabled: true,
        functionId: expect.any(String),
        config: { id: expect.any(String), value: '{"keyword":"Express"}' },
      },
      userErrors: [],
    });
    const id = body.instance.id;
    expect(await list('hide-shipping')).toEqual([
      {
        id,
        handle: 'hide-shipping',
        type: 'delivery_customization',
        functionId: body.payload.deliveryCustomization.functionId,
        owner: { title: 'Hide express', enabled: true },
        status: null,
        config: { keyword: 'Express' },
        configError: null,
        metafieldId: expect.any(String),
      },
    ]);
    expect((await json(await put('hide-shipping', id, { enabled: 'false', config: { keyword: 'Overnight' } }))).body).toEqual({
      ok: true,
      id,
      recreated: false,
    });
    expect((await list('hide-shipping'))[0]).toMatchObject({
      id,
      owner: { title: 'Hide express', enabled: false },
      config: { keyword: 'Overnight' },
    });
    const blank = await put('hide-shipping', id, { title: '' });
    expect(blank.status).toBe(400);
    expect((await json(blank)).body).toEqual({
      error: "Title can't be blank",
      source: 'platform',
      userErrors: [
        {
          field: ['title'],
          message: "Title can't be blank",
          code: 'REQUIRED_INPUT_FIELD',
          platformField: ['deliveryCustomization', 'title'],
        },
      ],
    });
    expect(await list('hide-shipping', OTHER_SHOP)).toEqual([]);
    expect((await json(await del('hide-shipping', id))).body).toEqual({ ok: true, deletedId: id });
    expect(await list('hide-shipping')).toEqual([]);
    expect((await del('hide-shipping', id)).status).toBe(404);
  });

  it('payment customizations: select config, the platform’s limit of enabled ones as userErrors', async () => {
    const bad = (await json(await post('hide-payment', { title: 'x', config: { method: 'cheque' } }))).body;
    expect(bad.userErrors).toEqual([{ field: ['config', 'method'], message: 'Field "method": must be one of cod, bank', code: 'INVALID' }]);
    for (let i = 0; i < 25; i++) expect((await post('hide-payment', { title: `Rule ${i}`, config: { method: 'cod' } })).status).toBe(201);
    const over = await post('hide-payment', { title: 'One more', config: { method: 'bank' } });
    expect(over.status).toBe(400);
    expect((await json(over)).body.userErrors).toEqual([
      {
        field: ['enabled'],
        message: 'Maximum payment customizations are already enabled.',
        code: 'MAXIMUM_ACTIVE_PAYMENT_CUSTOMIZATIONS',
        platformField: ['paymentCustomization', 'enabled'],
      },
    ]);
    expect((await post('hide-payment', { title: 'Disabled one', enabled: false, config: { method: 'bank' } })).status).toBe(201);
    const all = await list('hide-payment');
    expect(all).toHaveLength(26);
    // disabling one makes room; the update changes owner fields and config in place
    expect((await json(await put('hide-payment', all[0].id, { enabled: false, config: { method: 'bank' } }))).body).toEqual({
      ok: true,
      id: all[0].id,
      recreated: false,
    });
    expect((await json(await put('hide-payment', all[25].id, { enabled: true, title: 'Now enabled' }))).body).toEqual({
      ok: true,
      id: all[25].id,
      recreated: false,
    });
    expect((await list('hide-payment')).map((i) => [i.owner.enabled, i.config.method]).slice(0, 1)).toEqual([[false, 'bank']]);
    expect((await list('hide-payment'))[25].owner).toEqual({ title: 'Now enabled', enabled: true });
    for (const i of all) expect((await del('hide-payment', i.id)).status).toBe(200);
    expect(await list('hide-payment')).toEqual([]);
  });

  it('checkout validations: enabled ↔ enable, default title, block on failure, config round trip', async () => {
    const { instance, payload } = (await json(await post('min-qty', { blockOnFailure: true, config: { min: '3', strict: 'true' } }))).body;
    expect(payload.validation).toMatchObject({
      title: 'Minimum quantity',
      enabled: true,
      blockOnFailure: true,
      shopifyFunction: { handle: 'min-qty' },
    });
    expect(instance).toMatchObject({
      owner: { title: 'Minimum quantity', enabled: true, blockOnFailure: true },
      config: { min: 3, strict: true },
    });
    expect((await json(await put('min-qty', instance.id, { title: 'Min 5', enabled: false, config: { min: 5 } }))).body).toMatchObject({
      ok: true,
      recreated: false,
    });
    expect((await list('min-qty'))[0]).toMatchObject({
      owner: { title: 'Min 5', enabled: false, blockOnFailure: true },
      config: { min: 5 },
    });
    const bogus = await put('min-qty', instance.id, { deliveryMethodTypes: ['SHIPPING'] });
    expect((await json(bogus)).body.userErrors).toEqual([
      {
        field: ['deliveryMethodTypes'],
        message: 'Field "deliveryMethodTypes": is not a field of checkout_validation functions',
        code: 'INVALID',
      },
    ]);
    expect((await del('min-qty', instance.id)).status).toBe(200);
  });

  it('cart transforms: an update deletes and creates again, and the answer names the id that now stands', async () => {
    const { instance } = (await json(await post('bundler', { config: { size: 3 } }))).body;
    expect(instance).toMatchObject({ owner: { blockOnFailure: false }, config: { size: 3 } });
    // one per function: the platform refuses a second
    const second = await post('bundler', { config: { size: 4 } });
    expect(second.status).toBe(400);
    expect((await json(second)).body.userErrors).toEqual([
      {
        field: null,
        message: 'Could not enable cart transform because it is already registered',
        code: 'FUNCTION_ALREADY_REGISTERED',
        platformField: ['functionId'],
      },
    ]);

    const res = await put('bundler', instance.id, { blockOnFailure: true, config: { size: 5 } });
    expect(res.status).toBe(200);
    const answer = (await json(res)).body;
    expect(answer).toEqual({
      ok: true,
      id: expect.stringMatching(/^gid:\/\/shopify\/CartTransform\/\d+$/),
      previousId: instance.id,
      recreated: true,
    });
    expect(answer.id).not.toBe(instance.id);
    expect(await list('bundler')).toEqual([
      expect.objectContaining({ id: answer.id, owner: { blockOnFailure: true }, config: { size: 5 } }),
    ]);
    expect(sim.state.functions.find(instance.id, SHOP)).toBeUndefined();
    // without config the stored one is carried over; without owner fields the current values are kept
    const again = (await json(await put('bundler', answer.id, {}))).body;
    expect(await list('bundler')).toEqual([
      expect.objectContaining({ id: again.id, owner: { blockOnFailure: true }, config: { size: 5 } }),
    ]);
    // the old id is gone
    expect((await put('bundler', instance.id, { config: { size: 1 } })).status).toBe(404);
    expect((await json(await del('bundler', again.id))).body).toEqual({ ok: true, deletedId: again.id });
  });

  it('a recreate the platform refuses restores the instance as it was and answers 400 with restoredId', async () => {
    const { instance } = (await json(await post('bundler', { config: { size: 2 } }))).body;
    sim.injectUserErrors({
      mutation: 'cartTransformCreate',
      userErrors: [{ field: ['metafields', '0', 'value'], message: 'Could not create or update metafields.', code: 'INVALID_METAFIELDS' }],
    });
    const res = await put('bundler', instance.id, { blockOnFailure: true, config: { size: 9 } });
    expect(res.status).toBe(400);
    const body = (await json(res)).body;
    expect(body).toEqual({
      error: 'Could not create or update metafields.',
      source: 'platform',
      previousId: instance.id,
      restoredId: expect.stringMatching(/^gid:\/\/shopify\/CartTransform\/\d+$/),
      userErrors: [
        {
          field: ['config'],
          message: 'Could not create or update metafields.',
          code: 'INVALID_METAFIELDS',
          platformField: ['metafields', '0', 'value'],
        },
      ],
    });
    expect(await list('bundler')).toEqual([
      expect.objectContaining({ id: body.restoredId, owner: { blockOnFailure: false }, config: { size: 2 } }),
    ]);
    await del('bundler', body.restoredId);
  });

  it('fulfillment constraint rules: delivery methods (default shipping), recreate on update, numeric ids', async () => {
    const bad = (await json(await post('same-location', { deliveryMethodTypes: ['TELEPORT'], config: { tag: 'fragile' } }))).body;
    expect(bad.userErrors).toEqual([
      {
        field: ['deliveryMethodTypes'],
        message: 'Field "deliveryMethodTypes": must be a non-empty list of SHIPPING, LOCAL, PICK_UP, PICKUP_POINT, RETAIL, NONE',
        code: 'INVALID',
      },
    ]);
    const created = (await json(await post('same-location', { config: { tag: 'fragile' } }))).body;
    expect(created.mutation).toBe('fulfillmentConstraintRuleCreate');
    expect(created.instance).toMatchObject({ owner: { deliveryMethodTypes: ['SHIPPING'] }, config: { tag: 'fragile' } });
    const numeric = created.instance.id.split('/').pop();
    const updated = (await json(await put('same-location', numeric, { deliveryMethodTypes: ['SHIPPING', 'LOCAL'] }))).body;
    expect(updated).toMatchObject({ ok: true, previousId: created.instance.id, recreated: true });
    expect(await list('same-location')).toEqual([
      expect.objectContaining({ id: updated.id, owner: { deliveryMethodTypes: ['SHIPPING', 'LOCAL'] }, config: { tag: 'fragile' } }),
    ]);
    expect((await json(await del('same-location', updated.id))).body).toEqual({ ok: true, deletedId: updated.id });
    expect(await list('same-location')).toEqual([]);
  });

  it('lists at most 50 instances', async () => {
    for (let i = 0; i < 55; i++)
      expect((await post('hide-shipping', { title: `Rule ${i}`, enabled: false, config: { keyword: String(i) } }, OTHER_SHOP)).status).toBe(
        201,
      );
    const instances = await list('hide-shipping', OTHER_SHOP);
    expect(instances).toHaveLength(50);
    expect(instances[0].owner.title).toBe('Rule 0');
    expect(instances[49].owner.title).toBe('Rule 49');
  });
});
