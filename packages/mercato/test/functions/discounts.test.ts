/** Discount functions over HTTP against the simulator: both modes, the configuration metafield, userErrors, delete modes. */
import type { PlatformSim } from 'platform-sim';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { OTHER_SHOP, SHOP, type TestRuntime } from '../helpers/runtime.ts';
import { instancesPath, startFunctionsRuntime, startFunctionsSim } from './helpers.ts';
import { json } from '../kit/index.ts';

describeEngines('functions: discounts', (get) => {
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
  const del = (handle: string, id: string, mode?: string) =>
    t.api(`${instancesPath(handle, id)}${mode ? `?mode=${mode}` : ''}`, { method: 'DELETE' });

  it('creates an automatic discount: 201 with the mutation payload and the instance; the config is the app metafield', async () => {
    const res = await post('auto-only', {
      title: 'Spring sale',
      startsAt: '2026-03-01T00:00:00Z',
      combinesWith: { shippingDiscounts: true },
      config: {},
    });
    expect(res.status).toBe(201);
    const body = (await json(res)).body;
    expect(body.mutation).toBe('discountAutomaticAppCreate');
    expect(body.payload).toEqual({
      automaticAppDiscount: {
        discountId: expect.stringMatching(/^gid:\/\/shopify\/DiscountAutomaticNode\/\d+$/),
        title: 'Spring sale',
        status: 'ACTIVE',
        startsAt: '2026-03-01T00:00:00.000Z',
        endsAt: null,
        combinesWith: { orderDiscounts: false, productDiscounts: false, shippingDiscounts: true },
        appDiscountType: { functionId: expect.any(String) },
      },
      userErrors: [],
    });
    expect(body.instance).toMatchObject({
      id: body.payload.automaticAppDiscount.discountId,
      handle: 'auto-only',
      type: 'discount',
      status: 'ACTIVE',
      owner: {
        mode: 'automatic',
        title: 'Spring sale',
        endsAt: null,
        combinesWith: { orderDiscounts: false, productDiscounts: false, shippingDiscounts: true },
      },
      config: {},
      metafieldId: expect.stringMatching(/^gid:\/\/shopify\/Metafield\/\d+$/),
    });
    const [stored] = sim.state.functions.list('discount', SHOP);
    expect(stored!.metafields).toEqual([
      expect.objectContaining({ namespace: `app--${sim.state.app().id}`, key: 'function-configuration', type: 'json', value: '{}' }),
    ]);
  });

  it('creates, lists, updates and deletes a code discount of a two-mode function', async () => {
    const missingMode = await post('volume', { title: 'x', config: { percent: 5 } });
    expect(missingMode.status).toBe(400);
    expect((await json(missingMode)).body).toEqual({
      error: 'Field "mode" is required: automatic or code',
      source: 'mercato',
      userErrors: [{ field: ['mode'], message: 'Field "mode" is required: automatic or code', code: 'BLANK' }],
    });

    const created = await post('volume', {
      mode: 'code',
      title: 'Welcome',
      code: 'HELLO10',
      usageLimit: '50',
      appliesOncePerCustomer: true,
      config: { percent: '10', note: 'first order' },
    });
    expect(created.status).toBe(201);
    const { instance, mutation } = (await json(created)).body;
    expect(mutation).toBe('discountCodeAppCreate');
    expect(instance.owner).toMatchObject({ mode: 'code', code: 'HELLO10', usageLimit: 50, appliesOncePerCustomer: true });
    expect(instance.config).toEqual({ percent: 10, note: 'first order' });
    const automatic = (await json(await post('volume', { mode: 'automatic', title: 'Auto 5', config: { percent: 5 } }))).body;

    const list = (await json(await t.api(instancesPath('volume')))).body;
    expect(list.function).toMatchObject({ handle: 'volume', apiType: 'discount' });
    expect(list.instances.map((i: any) => [i.owner.mode, i.owner.title, i.config])).toEqual([
      ['code', 'Welcome', { percent: 10, note: 'first order' }],
      ['automatic', 'Auto 5', { percent: 5 }],
    ]);
    expect(list.instances[0]).toMatchObject({
      id: instance.id,
      metafieldId: expect.stringMatching(/^gid:\/\/shopify\/Metafield\//),
      configError: null,
      status: 'ACTIVE',
    });
    // other functions' discounts and other shops are not listed
    expect((await json(await t.api(instancesPath('welcome')))).body.instances).toEqual([]);
    expect((await json(await t.api(instancesPath('volume'), { shop: OTHER_SHOP }))).body.instances).toEqual([]);

    const updated = await put('volume', instance.id, {
      title: 'Welcome back',
      usageLimit: null,
      endsAt: '2030-01-01T00:00:00Z',
      config: { percent: 15 },
    });
    expect(updated.status).toBe(200);
    expect((await json(updated)).body).toEqual({ ok: true, id: instance.id, recreated: false });
    const after = (await json(await t.api(instancesPath('volume')))).body.instances[0];
    expect(after.owner).toMatchObject({ title: 'Welcome back', usageLimit: null, endsAt: '2030-01-01T00:00:00.000Z', code: 'HELLO10' });
    expect(after.config).toEqual({ percent: 15 });
    // an update without config keeps it; combinesWith changes only the flags given
    await put('volume', instance.id, { appliesOncePerCustomer: false, combinesWith: { orderDiscounts: true } });
    await put('volume', instance.id, { combinesWith: { shippingDiscounts: true } });
    expect((await json(await t.api(instancesPath('volume')))).body.instances[0]).toMatchObject({
      owner: { appliesOncePerCustomer: false, combinesWith: { orderDiscounts: true, productDiscounts: false, shippingDiscounts: true } },
      config: { percent: 15 },
    });

    // delete: both modes need ?mode=, which must match the instance
    const noMode = await del('volume', instance.id);
    expect(noMode.status).toBe(400);
    expect((await json(noMode)).body.error).toBe('This discount function has both modes: give mode=automatic or mode=code');
    expect((await del('volume', instance.id, 'sideways')).status).toBe(400);
    expect((await del('volume', instance.id, 'automatic')).status).toBe(404);
    const deleted = await del('volume', instance.id, 'code');
    expect(deleted.status).toBe(200);
    expect((await json(deleted)).body).toEqual({ ok: true, deletedId: instance.id });
    expect((await del('volume', instance.id, 'code')).status).toBe(404);
    // a numeric id with the mode works too
    const numeric = automatic.instance.id.split('/').pop();
    expect((await del('volume', numeric, 'automatic')).status).toBe(200);
    expect((await json(await t.api(instancesPath('volume')))).body.instances).toEqual([]);
  });

  it('passes the platform’s userErrors through as 400 with field paths of the body', async () => {
    const noTitle = await post('auto-only', { config: {} });
    expect(noTitle.status).toBe(400);
    expect((await json(noTitle)).body).toEqual({
      error: "Title can't be blank",
      source: 'platform',
      userErrors: [{ field: ['title'], message: "Title can't be blank", code: 'BLANK', platformField: ['automaticAppDiscount', 'title'] }],
    });
    const backwards = (
      await json(await post('auto-only', { title: 'x', startsAt: '2026-05-01T00:00:00Z', endsAt: '2026-04-01T00:00:00Z', config: {} }))
    ).body;
    expect(backwards.userErrors).toEqual([
      {
        field: ['endsAt'],
        message: 'Ends at needs to be after starts_at',
        code: 'END_DATE_BEFORE_START_DATE',
        platformField: ['automaticAppDiscount', 'endsAt'],
      },
    ]);

    await post('welcome', { title: 'First', code: 'TAKEN1', config: { percent: 5 } });
    const taken = await post('welcome', { title: 'Second', code: 'taken1', config: { percent: 5 } });
    expect(taken.status).toBe(400);
    expect((await json(taken)).body.userErrors).toEqual([
      {
        field: ['code'],
        message: 'Code must be unique. Please try a different code.',
        code: 'TAKEN',
        platformField: ['codeAppDiscount', 'code'],
      },
    ]);
    const zero = (await json(await post('welcome', { title: 'Third', code: 'ZERO', usageLimit: 0, config: { percent: 5 } }))).body;
    expect(zero.userErrors).toEqual([
      {
        field: ['usageLimit'],
        message: 'Usage limit must be greater than 0',
        code: 'GREATER_THAN',
        platformField: ['codeAppDiscount', 'usageLimit'],
      },
    ]);
    const noCode = (await json(await post('welcome', { title: 'Fourth', config: { percent: 5 } }))).body;
    expect(noCode.userErrors[0]).toMatchObject({ field: ['code'], code: 'BLANK' });
    // an update the platform refuses changes nothing
    const [first] = (await json(await t.api(instancesPath('welcome')))).body.instances;
    const refused = await put('welcome', first.id, { title: 'Renamed', endsAt: '2000-01-01T00:00:00Z' });
    expect(refused.status).toBe(400);
    expect((await json(refused)).body.userErrors[0]).toMatchObject({ field: ['endsAt'], code: 'END_DATE_BEFORE_START_DATE' });
    expect((await json(await t.api(instancesPath('welcome')))).body.instances[0].owner.title).toBe('First');
  });

  it('checks config and owner-field shapes before calling the platform (400, source mercato)', async () => {
    const calls = sim.state.graphqlCalls.length;
    const res = await post('volume', {
      mode: 'code',
      title: 7,
      code: 'X',
      startsAt: 'soon',
      combinesWith: { orderDiscounts: 'yes', everything: true },
      colour: 'red',
      config: { percent: 'abc', extra: 1 },
    });
    expect(res.status).toBe(400);
    const body = (await json(res)).body;
    expect(body.source).toBe('mercato');
    expect(body.userErrors).toEqual([
      { field: ['colour'], message: 'Field "colour": is not a field of discount functions', code: 'INVALID' },
      { field: ['combinesWith', 'everything'], message: 'Field "combinesWith.everything": is not a field', code: 'INVALID' },
      { field: ['title'], message: 'Field "title": must be a string', code: 'INVALID' },
      { field: ['startsAt'], message: 'Field "startsAt": must be an ISO 8601 date-time (e.g. 2026-01-31T09:00:00Z)', code: 'INVALID' },
      { field: ['combinesWith', 'orderDiscounts'], message: 'Field "combinesWith.orderDiscounts": must be a boolean', code: 'INVALID' },
      { field: ['config', 'extra'], message: 'Field "extra": is not a configuration field of this function', code: 'INVALID' },
      { field: ['config', 'percent'], message: 'Field "percent": must be a number', code: 'INVALID' },
    ]);
    // required and validator problems of the config
    const missing = (await json(await post('volume', { mode: 'automatic', title: 'x', config: {} }))).body;
    expect(missing.userErrors).toEqual([{ field: ['config', 'percent'], message: 'Field "percent" is required', code: 'BLANK' }]);
    const tooMuch = (await json(await post('volume', { mode: 'automatic', title: 'x', config: { percent: 300 } }))).body;
    expect(tooMuch.userErrors).toEqual([
      { field: ['config', 'percent'], message: 'Field "percent": must be at most 100', code: 'INVALID' },
    ]);
    // code fields belong to code discounts
    const codeOnAutomatic = (await json(await post('volume', { mode: 'automatic', title: 'x', code: 'NOPE', config: { percent: 5 } })))
      .body;
    expect(codeOnAutomatic.userErrors).toEqual([
      { field: ['code'], message: 'Field "code": only code discounts have it', code: 'INVALID' },
    ]);
    const badMode = (await json(await post('auto-only', { mode: 'code', title: 'x', config: {} }))).body;
    expect(badMode.userErrors).toEqual([{ field: ['mode'], message: 'Field "mode": must be one of automatic', code: 'INVALID' }]);
    expect(sim.state.graphqlCalls.length).toBe(calls); // nothing reached the platform
  });

  it('never updates or deletes an instance through another function’s handle, and refuses a mode change', async () => {
    const { instance } = (await json(await post('welcome', { title: 'Mine', code: 'MINE1', config: { percent: 1 } }))).body;
    expect((await put('volume', instance.id, { title: 'Hijack', mode: 'code' })).status).toBe(404);
    expect((await del('volume', instance.id, 'code')).status).toBe(404);
    expect((await del('auto-only', instance.id)).status).toBe(404);
    const modeChange = await put('welcome', instance.id, { mode: 'automatic' });
    expect(modeChange.status).toBe(400);
    expect((await json(modeChange)).body.userErrors[0].field).toEqual(['mode']);
    // a single-mode function needs no mode, also with a numeric id
    const numeric = instance.id.split('/').pop();
    expect((await put('welcome', numeric, { title: 'Renamed' })).status).toBe(200);
    expect((await del('welcome', numeric)).status).toBe(200);
  });
});
