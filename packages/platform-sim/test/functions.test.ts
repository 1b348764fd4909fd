/** Function instances in the simulator over real HTTP: deployed functions, every mutation, userErrors, metafields, throttling. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PlatformSim, functionIdFor, parseArgs, start } from '../src/index.ts';

const APP = { apiKey: 'fn-key', apiSecret: 'fn-secret' };
const OTHER = { apiKey: 'other-key', apiSecret: 'other-secret' };
const SHOP = 'fn-shop.myshopify.com';
const SHOP2 = 'fn-shop-two.myshopify.com';

let sim: PlatformSim;
let token: string;
let otherToken: string;
let token2: string;

async function gql(query: string, variables: Record<string, unknown> = {}, accessToken = token) {
  const res = await fetch(`${sim.url}/admin/api/2026-10/graphql.json`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-shopify-access-token': accessToken },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as { data?: any; errors?: any[]; extensions?: any };
}

const BIG_BUCKET = { max: 100_000, restoreRate: 100_000 };
const CONFIG = (value: unknown) => [{ namespace: '$app', key: 'function-configuration', type: 'json', value: JSON.stringify(value) }];

beforeAll(async () => {
  sim = await start({
    apps: [
      {
        ...APP,
        functions: [
          { handle: 'volume', apiType: 'discount', title: 'Volume discount' },
          { handle: 'bundler', apiType: 'cart_transform' },
          { handle: 'hide-shipping', apiType: 'delivery_customization' },
          { handle: 'hide-payment', apiType: 'payment_customization' },
          { handle: 'min-qty', apiType: 'cart_checkout_validation', title: 'Minimum quantity' },
          { handle: 'same-location', apiType: 'fulfillment_constraints' },
        ],
      },
      OTHER,
    ],
    shops: [SHOP, SHOP2],
    bucket: BIG_BUCKET, // these tests send many mutations in a row; the throttling test shrinks it
  });
  token = sim.install({ apiKey: APP.apiKey, shop: SHOP }).token;
  token2 = sim.install({ apiKey: APP.apiKey, shop: SHOP2 }).token;
  otherToken = sim.install({ apiKey: OTHER.apiKey, shop: SHOP }).token;
});
afterAll(() => sim?.close());

describe('deployed functions', () => {
  it('lists the app’s functions with stable ids and handles; another app sees none of them', async () => {
    const { data } = await gql('{ shopifyFunctions(first: 10) { nodes { id handle apiType title appKey } pageInfo { hasNextPage } } }');
    expect(data.shopifyFunctions.nodes).toHaveLength(6);
    expect(data.shopifyFunctions.nodes[0]).toEqual({
      id: functionIdFor(APP.apiKey, 'volume'),
      handle: 'volume',
      apiType: 'discount',
      title: 'Volume discount',
      appKey: APP.apiKey,
    });
    const filtered = await gql('{ shopifyFunctions(first: 10, apiType: "cart_transform") { nodes { handle } } }');
    expect(filtered.data.shopifyFunctions.nodes).toEqual([{ handle: 'bundler' }]);
    expect((await gql('{ shopifyFunctions(first: 10) { nodes { id } } }', {}, otherToken)).data.shopifyFunctions.nodes).toEqual([]);
  });

  it('registers functions with addFunction, the control API and the CLI flag', async () => {
    const fn = sim.addFunction({ apiKey: OTHER.apiKey, handle: 'late', apiType: 'payment_customization' });
    expect(fn.id).toBe(functionIdFor(OTHER.apiKey, 'late'));
    const res = await fetch(`${sim.url}/__sim/functions`, {
      method: 'POST',
      body: JSON.stringify({ apiKey: OTHER.apiKey, handle: 'later', apiType: 'cart_transform' }),
    });
    expect((await res.json()).function).toMatchObject({ handle: 'later', apiKey: OTHER.apiKey });
    const bad = await fetch(`${sim.url}/__sim/functions`, {
      method: 'POST',
      body: JSON.stringify({ apiKey: OTHER.apiKey, handle: 'x', apiType: 'nope' }),
    });
    expect(bad.status).toBe(400);
    expect(
      (await gql('{ shopifyFunctions(first: 10) { nodes { handle } } }', {}, otherToken)).data.shopifyFunctions.nodes.map(
        (n: any) => n.handle,
      ),
    ).toEqual(['late', 'later']);
    expect(parseArgs(['--function', 'a:discount', '--function=b:cart_transform']).apps[0]!.functions).toEqual([
      { handle: 'a', apiType: 'discount' },
      { handle: 'b', apiType: 'cart_transform' },
    ]);
    expect(() => parseArgs(['--function', 'a:bogus'])).toThrow(/HANDLE:API_TYPE/);
  });
});

const AUTO_CREATE = `mutation ($d: DiscountAutomaticAppInput!) { discountAutomaticAppCreate(automaticAppDiscount: $d) {
  automaticAppDiscount { discountId title status startsAt endsAt combinesWith { orderDiscounts productDiscounts shippingDiscounts } appDiscountType { functionId } }
  userErrors { field message code } } }`;
const CODE_CREATE = `mutation ($d: DiscountCodeAppInput!) { discountCodeAppCreate(codeAppDiscount: $d) {
  codeAppDiscount { discountId title usageLimit appliesOncePerCustomer codes(first: 1) { nodes { code } } }
  userErrors { field message code } } }`;

describe('app discounts', () => {
  it('creates an automatic discount with its configuration metafield, readable through $app and the resolved namespace', async () => {
    const { data } = await gql(AUTO_CREATE, {
      d: {
        functionHandle: 'volume',
        title: '10% off',
        startsAt: '2026-01-01T00:00:00Z',
        combinesWith: { productDiscounts: true },
        metafields: CONFIG({ percent: 10 }),
      },
    });
    const created = data.discountAutomaticAppCreate;
    expect(created.userErrors).toEqual([]);
    expect(created.automaticAppDiscount).toMatchObject({
      discountId: expect.stringMatching(/^gid:\/\/shopify\/DiscountAutomaticNode\/\d+$/),
      title: '10% off',
      status: 'ACTIVE',
      endsAt: null,
      combinesWith: { orderDiscounts: false, productDiscounts: true, shippingDiscounts: false },
      appDiscountType: { functionId: functionIdFor(APP.apiKey, 'volume') },
    });
    const id = created.automaticAppDiscount.discountId;
    const list = await gql(`{ discountNodes(first: 5, query: "type:app method:automatic") { nodes { id
      config: metafield(namespace: "$app", key: "function-configuration") { namespace type value jsonValue }
      discount { __typename ... on DiscountAutomaticApp { title } } } } }`);
    const node = list.data.discountNodes.nodes.find((n: any) => n.id === id);
    expect(node).toMatchObject({
      discount: { __typename: 'DiscountAutomaticApp', title: '10% off' },
      config: { type: 'json', jsonValue: { percent: 10 } },
    });
    expect(node.config.namespace).toBe(`app--${sim.state.app(APP.apiKey).id}`);
    // the same metafield by its resolved namespace; another app cannot read it
    const raw = await gql(
      `query ($id: ID!, $ns: String!) { node(id: $id) { ... on DiscountAutomaticNode { metafield(namespace: $ns, key: "function-configuration") { value } } } }`,
      { id, ns: node.config.namespace },
    );
    expect(raw.data.node.metafield.value).toBe('{"percent":10}');
    const foreign = await gql(
      `query ($id: ID!, $ns: String!) { node(id: $id) { ... on DiscountAutomaticNode { metafield(namespace: $ns, key: "function-configuration") { value } } } }`,
      { id, ns: node.config.namespace },
      otherToken,
    );
    expect(foreign.data.node.metafield).toBeNull();
    // instances are per shop
    expect((await gql('{ discountNodes(first: 5) { nodes { id } } }', {}, token2)).data.discountNodes.nodes).toEqual([]);
  });

  it('answers userErrors like the platform: blank title, end before start, function identifiers, unsuitable function, bad JSON', async () => {
    const errors = async (d: Record<string, unknown>) => (await gql(AUTO_CREATE, { d })).data.discountAutomaticAppCreate;
    expect(await errors({ functionHandle: 'volume', title: ' ', startsAt: '2026-01-01T00:00:00Z' })).toEqual({
      automaticAppDiscount: null,
      userErrors: [{ field: ['automaticAppDiscount', 'title'], message: "Title can't be blank", code: 'BLANK' }],
    });
    expect(
      (await errors({ functionHandle: 'volume', title: 'x', startsAt: '2026-02-01T00:00:00Z', endsAt: '2026-01-01T00:00:00Z' })).userErrors,
    ).toEqual([
      { field: ['automaticAppDiscount', 'endsAt'], message: 'Ends at needs to be after starts_at', code: 'END_DATE_BEFORE_START_DATE' },
    ]);
    expect((await errors({ title: 'x', startsAt: '2026-01-01T00:00:00Z' })).userErrors[0].code).toBe('MISSING_FUNCTION_IDENTIFIER');
    expect(
      (await errors({ functionHandle: 'volume', functionId: 'x', title: 'x', startsAt: '2026-01-01T00:00:00Z' })).userErrors[0].code,
    ).toBe('MULTIPLE_FUNCTION_IDENTIFIERS');
    expect((await errors({ functionHandle: 'nope', title: 'x', startsAt: '2026-01-01T00:00:00Z' })).userErrors[0]).toMatchObject({
      field: ['automaticAppDiscount', 'functionHandle'],
      code: 'INVALID',
    });
    expect((await errors({ functionHandle: 'bundler', title: 'x', startsAt: '2026-01-01T00:00:00Z' })).userErrors[0].message).toMatch(
      /does not implement/,
    );
    expect(
      (
        await errors({
          functionHandle: 'volume',
          title: 'x',
          startsAt: '2026-01-01T00:00:00Z',
          metafields: [{ key: 'function-configuration', type: 'json', value: '{' }],
        })
      ).userErrors,
    ).toEqual([{ field: ['automaticAppDiscount', 'metafields', '0', 'value'], message: 'Value is invalid JSON.', code: 'INVALID' }]);
    // another app's functions are unknown to this one
    expect(
      (await gql(AUTO_CREATE, { d: { functionHandle: 'volume', title: 'x', startsAt: '2026-01-01T00:00:00Z' } }, otherToken)).data
        .discountAutomaticAppCreate.userErrors[0].code,
    ).toBe('INVALID');
  });

  it('code discounts: unique codes (case-insensitive), usage limit above 0, update and delete', async () => {
    const base = { functionId: functionIdFor(APP.apiKey, 'volume'), title: 'Welcome', startsAt: '2026-01-01T00:00:00Z' };
    const first = (await gql(CODE_CREATE, { d: { ...base, code: 'WELCOME10', usageLimit: 100, appliesOncePerCustomer: true } })).data
      .discountCodeAppCreate;
    expect(first.userErrors).toEqual([]);
    expect(first.codeAppDiscount).toMatchObject({
      usageLimit: 100,
      appliesOncePerCustomer: true,
      codes: { nodes: [{ code: 'WELCOME10' }] },
    });
    const dup = (await gql(CODE_CREATE, { d: { ...base, code: 'welcome10' } })).data.discountCodeAppCreate;
    expect(dup.userErrors).toEqual([
      { field: ['codeAppDiscount', 'code'], message: 'Code must be unique. Please try a different code.', code: 'TAKEN' },
    ]);
    expect((await gql(CODE_CREATE, { d: { ...base, code: 'OTHER', usageLimit: 0 } })).data.discountCodeAppCreate.userErrors).toEqual([
      { field: ['codeAppDiscount', 'usageLimit'], message: 'Usage limit must be greater than 0', code: 'GREATER_THAN' },
    ]);
    expect((await gql(CODE_CREATE, { d: { ...base } })).data.discountCodeAppCreate.userErrors[0]).toMatchObject({
      field: ['codeAppDiscount', 'code'],
      code: 'BLANK',
    });
    const id = first.codeAppDiscount.discountId;
    const UPDATE = `mutation ($id: ID!, $d: DiscountCodeAppInput!) { discountCodeAppUpdate(id: $id, codeAppDiscount: $d) { codeAppDiscount { title usageLimit endsAt } userErrors { field code } } }`;
    const updated = (await gql(UPDATE, { id, d: { title: 'Welcome back', usageLimit: null, metafields: CONFIG({ percent: 15 }) } })).data
      .discountCodeAppUpdate;
    expect(updated).toEqual({ codeAppDiscount: { title: 'Welcome back', usageLimit: null, endsAt: null }, userErrors: [] });
    // the merged state is checked: an end before the stored start
    expect((await gql(UPDATE, { id, d: { endsAt: '2025-01-01T00:00:00Z' } })).data.discountCodeAppUpdate.userErrors).toEqual([
      { field: ['codeAppDiscount', 'endsAt'], code: 'END_DATE_BEFORE_START_DATE' },
    ]);
    const read = await gql(
      `query ($id: ID!) { codeDiscountNode(id: $id) { metafield(key: "function-configuration") { jsonValue } codeDiscount { ... on DiscountCodeApp { title } } } }`,
      { id },
    );
    expect(read.data.codeDiscountNode).toEqual({ metafield: { jsonValue: { percent: 15 } }, codeDiscount: { title: 'Welcome back' } });
    // an automatic id is not a code discount; deleting works once
    const wrong = await gql(
      `mutation ($id: ID!) { discountAutomaticDelete(id: $id) { deletedAutomaticDiscountId userErrors { field message code } } }`,
      { id },
    );
    expect(wrong.data.discountAutomaticDelete).toEqual({
      deletedAutomaticDiscountId: null,
      userErrors: [{ field: ['id'], message: 'Discount does not exist', code: 'INVALID' }],
    });
    const DELETE = `mutation ($id: ID!) { discountCodeDelete(id: $id) { deletedCodeDiscountId userErrors { code } } }`;
    expect((await gql(DELETE, { id })).data.discountCodeDelete).toEqual({ deletedCodeDiscountId: id, userErrors: [] });
    expect((await gql(DELETE, { id })).data.discountCodeDelete.userErrors).toEqual([{ code: 'INVALID' }]);
    // the code is free again
    expect((await gql(CODE_CREATE, { d: { ...base, code: 'WELCOME10' } })).data.discountCodeAppCreate.userErrors).toEqual([]);
  });

  it('refuses unknown input fields and badly typed values as GraphQL errors, before running', async () => {
    const res = await gql(AUTO_CREATE, { d: { functionHandle: 'volume', title: 'x', startsAt: '2026-01-01T00:00:00Z', percent: 5 } });
    expect(res.errors?.[0]?.message).toBe(
      'Variable $automaticAppDiscount of type DiscountAutomaticAppInput! was provided invalid value for percent (Field is not defined on DiscountAutomaticAppInput)',
    );
    const date = await gql(AUTO_CREATE, { d: { functionHandle: 'volume', title: 'x', startsAt: 'tomorrow' } });
    expect(date.errors?.[0]?.message).toMatch(/invalid value for startsAt \(Could not coerce value "tomorrow" to DateTime\)/);
  });
});

describe('cart transforms and fulfillment constraint rules', () => {
  it('cart transforms: one per function, metafield checks, delete, listed for their app only', async () => {
    const CREATE = `mutation ($h: String, $id: String, $m: [MetafieldInput!]) { cartTransformCreate(functionHandle: $h, functionId: $id, blockOnFailure: true, metafields: $m) {
      cartTransform { id functionId blockOnFailure metafield(namespace: "$app", key: "function-configuration") { jsonValue } } userErrors { field message code } } }`;
    const bad = (
      await gql(CREATE, { h: 'bundler', m: [{ namespace: '$app', key: 'function-configuration', type: 'json', value: 'nope' }] })
    ).data.cartTransformCreate;
    expect(bad.userErrors).toEqual([
      { field: ['metafields', '0', 'value'], message: 'Value is invalid JSON.', code: 'INVALID_METAFIELDS' },
    ]);
    const made = (await gql(CREATE, { id: functionIdFor(APP.apiKey, 'bundler'), m: CONFIG({ size: 3 }) })).data.cartTransformCreate;
    expect(made.cartTransform).toMatchObject({
      id: expect.stringMatching(/^gid:\/\/shopify\/CartTransform\//),
      blockOnFailure: true,
      metafield: { jsonValue: { size: 3 } },
    });
    expect((await gql(CREATE, { h: 'bundler' })).data.cartTransformCreate.userErrors).toEqual([
      {
        field: ['functionHandle'],
        message: 'Could not enable cart transform because it is already registered',
        code: 'FUNCTION_ALREADY_REGISTERED',
      },
    ]);
    expect((await gql(CREATE, { h: 'hide-payment' })).data.cartTransformCreate.userErrors[0].code).toBe('FUNCTION_DOES_NOT_IMPLEMENT');
    expect((await gql(CREATE, { h: 'ghost' })).data.cartTransformCreate.userErrors[0].code).toBe('FUNCTION_NOT_FOUND');
    expect((await gql('{ cartTransforms(first: 5) { nodes { id } } }', {}, otherToken)).data.cartTransforms.nodes).toEqual([]);
    const DELETE = `mutation ($id: ID!) { cartTransformDelete(id: $id) { deletedId userErrors { field code } } }`;
    expect((await gql(DELETE, { id: made.cartTransform.id }, otherToken)).data.cartTransformDelete.userErrors).toEqual([
      { field: ['id'], code: 'NOT_FOUND' },
    ]);
    expect((await gql(DELETE, { id: made.cartTransform.id })).data.cartTransformDelete).toEqual({
      deletedId: made.cartTransform.id,
      userErrors: [],
    });
    expect((await gql(CREATE, { h: 'bundler' })).data.cartTransformCreate.userErrors).toEqual([]);
  });

  it('fulfillment constraint rules: delivery method types, one per function, success on delete', async () => {
    const CREATE = `mutation ($t: [DeliveryMethodType!]!) { fulfillmentConstraintRuleCreate(functionHandle: "same-location", deliveryMethodTypes: $t, metafields: [{ namespace: "$app", key: "function-configuration", type: "json", value: "{}" }]) {
      fulfillmentConstraintRule { id deliveryMethodTypes function { handle } } userErrors { field code } } }`;
    expect((await gql(CREATE, { t: ['TELEPORT'] })).errors?.[0]?.message).toMatch(/Expected "TELEPORT" to be one of/);
    const made = (await gql(CREATE, { t: ['SHIPPING', 'PICK_UP'] })).data.fulfillmentConstraintRuleCreate;
    expect(made.fulfillmentConstraintRule).toMatchObject({
      deliveryMethodTypes: ['SHIPPING', 'PICK_UP'],
      function: { handle: 'same-location' },
    });
    expect((await gql(CREATE, { t: ['SHIPPING'] })).data.fulfillmentConstraintRuleCreate.userErrors[0].code).toBe(
      'FUNCTION_ALREADY_REGISTERED',
    );
    expect((await gql('{ fulfillmentConstraintRules { id } }')).data.fulfillmentConstraintRules).toEqual([
      { id: made.fulfillmentConstraintRule.id },
    ]);
    const DELETE = `mutation ($id: ID!) { fulfillmentConstraintRuleDelete(id: $id) { success userErrors { code } } }`;
    expect((await gql(DELETE, { id: made.fulfillmentConstraintRule.id })).data.fulfillmentConstraintRuleDelete).toEqual({
      success: true,
      userErrors: [],
    });
    expect((await gql(DELETE, { id: made.fulfillmentConstraintRule.id })).data.fulfillmentConstraintRuleDelete).toEqual({
      success: null,
      userErrors: [{ code: 'NOT_FOUND' }],
    });
  });
});

describe('customizations and validations', () => {
  it('delivery customizations: required title, 25 enabled at most, function id fixed, not-found codes', async () => {
    const CREATE = `mutation ($c: DeliveryCustomizationInput!) { deliveryCustomizationCreate(deliveryCustomization: $c) { deliveryCustomization { id title enabled functionId } userErrors { field message code } } }`;
    expect(
      (await gql(CREATE, { c: { functionHandle: 'hide-shipping', enabled: true } })).data.deliveryCustomizationCreate.userErrors,
    ).toEqual([{ field: ['deliveryCustomization', 'title'], message: "Title can't be blank", code: 'REQUIRED_INPUT_FIELD' }]);
    const ids: string[] = [];
    for (let i = 0; i < 25; i++)
      ids.push(
        (await gql(CREATE, { c: { functionHandle: 'hide-shipping', title: `Rule ${i}`, enabled: true } })).data.deliveryCustomizationCreate
          .deliveryCustomization.id,
      );
    const over = (await gql(CREATE, { c: { functionHandle: 'hide-shipping', title: 'One too many', enabled: true } })).data
      .deliveryCustomizationCreate;
    expect(over.userErrors[0]).toMatchObject({
      field: ['deliveryCustomization', 'enabled'],
      code: 'MAXIMUM_ACTIVE_DELIVERY_CUSTOMIZATIONS',
    });
    const UPDATE = `mutation ($id: ID!, $c: DeliveryCustomizationInput!) { deliveryCustomizationUpdate(id: $id, deliveryCustomization: $c) { deliveryCustomization { title enabled } userErrors { field code } } }`;
    expect((await gql(UPDATE, { id: ids[0], c: { enabled: false, title: 'Off' } })).data.deliveryCustomizationUpdate).toEqual({
      deliveryCustomization: { title: 'Off', enabled: false },
      userErrors: [],
    });
    expect(
      (await gql(UPDATE, { id: ids[1], c: { functionHandle: 'hide-payment' } })).data.deliveryCustomizationUpdate.userErrors[0].code,
    ).toBe('FUNCTION_DOES_NOT_IMPLEMENT');
    expect(
      (await gql(UPDATE, { id: 'gid://shopify/DeliveryCustomization/1', c: { title: 'x' } })).data.deliveryCustomizationUpdate.userErrors,
    ).toEqual([{ field: ['id'], code: 'DELIVERY_CUSTOMIZATION_NOT_FOUND' }]);
    for (const id of ids) await gql(`mutation ($id: ID!) { deliveryCustomizationDelete(id: $id) { deletedId } }`, { id });
    expect((await gql('{ deliveryCustomizations(first: 50) { nodes { id } } }')).data.deliveryCustomizations.nodes).toEqual([]);
  });

  it('payment customizations and validations (enable → enabled, default title, NOT_FOUND)', async () => {
    const pay = await gql(
      `mutation { paymentCustomizationCreate(paymentCustomization: { functionHandle: "hide-payment", title: "Hide COD", enabled: true }) { paymentCustomization { id title enabled } userErrors { code } } }`,
    );
    expect(pay.data.paymentCustomizationCreate.paymentCustomization).toMatchObject({ title: 'Hide COD', enabled: true });
    const v = await gql(
      `mutation ($v: ValidationCreateInput!) { validationCreate(validation: $v) { validation { id title enabled blockOnFailure shopifyFunction { handle } metafield(key: "function-configuration") { jsonValue } } userErrors { field code } } }`,
      {
        v: { functionHandle: 'min-qty', enable: true, blockOnFailure: true, metafields: CONFIG({ min: 2 }) },
      },
    );
    expect(v.data.validationCreate.validation).toMatchObject({
      title: 'Minimum quantity',
      enabled: true,
      blockOnFailure: true,
      shopifyFunction: { handle: 'min-qty' },
      metafield: { jsonValue: { min: 2 } },
    });
    const bad = await gql(`mutation ($v: ValidationCreateInput!) { validationCreate(validation: $v) { userErrors { field code } } }`, {
      v: { functionHandle: 'min-qty', metafields: [{ key: 'k1', type: 'color', value: 'x' }] },
    });
    expect(bad.data.validationCreate.userErrors).toEqual([{ field: ['validation', 'metafields', '0', 'type'], code: 'INVALID_TYPE' }]);
    const upd = await gql(
      `mutation ($id: ID!) { validationUpdate(id: $id, validation: { enable: false, title: "Min 3" }) { validation { title enabled } userErrors { code } } }`,
      { id: v.data.validationCreate.validation.id },
    );
    expect(upd.data.validationUpdate).toEqual({ validation: { title: 'Min 3', enabled: false }, userErrors: [] });
    const gone = await gql(`mutation { validationDelete(id: "gid://shopify/Validation/1") { deletedId userErrors { field code } } }`);
    expect(gone.data.validationDelete).toEqual({ deletedId: null, userErrors: [{ field: ['id'], code: 'NOT_FOUND' }] });
    const nodes = await gql(`query ($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }`, {
      ids: [
        pay.data.paymentCustomizationCreate.paymentCustomization.id,
        v.data.validationCreate.validation.id,
        'gid://shopify/Validation/1',
      ],
    });
    expect(nodes.data.nodes.map((n: any) => n?.__typename ?? null)).toEqual(['PaymentCustomization', 'Validation', null]);
  });
});

describe('metafieldsSet, paging and cost', () => {
  it('sets metafields atomically, with compareDigest, never in another app’s namespace', async () => {
    const made = await gql(
      `mutation { paymentCustomizationCreate(paymentCustomization: { functionHandle: "hide-payment", title: "M", enabled: false }) { paymentCustomization { id } } }`,
    );
    const owner = made.data.paymentCustomizationCreate.paymentCustomization.id;
    const SET = `mutation ($m: [MetafieldsSetInput!]!) { metafieldsSet(metafields: $m) { metafields { key value compareDigest } userErrors { field code elementIndex } } }`;
    const ok = await gql(SET, {
      m: [{ ownerId: owner, namespace: '$app', key: 'function-configuration', type: 'json', value: '{"a":1}' }],
    });
    expect(ok.data.metafieldsSet.userErrors).toEqual([]);
    const digest = ok.data.metafieldsSet.metafields[0].compareDigest;
    const atomic = await gql(SET, {
      m: [
        { ownerId: owner, key: 'function-configuration', value: '{"a":2}' },
        { ownerId: owner, key: 'other', type: 'json', value: '{' },
      ],
    });
    expect(atomic.data.metafieldsSet).toEqual({
      metafields: null,
      userErrors: [{ field: ['metafields', '1', 'value'], code: 'INVALID_VALUE', elementIndex: 1 }],
    });
    const stale = await gql(SET, { m: [{ ownerId: owner, key: 'function-configuration', value: '{"a":3}', compareDigest: 'abc' }] });
    expect(stale.data.metafieldsSet.userErrors[0].code).toBe('STALE_OBJECT');
    const fresh = await gql(SET, { m: [{ ownerId: owner, key: 'function-configuration', value: '{"a":3}', compareDigest: digest }] });
    expect(fresh.data.metafieldsSet.metafields[0].value).toBe('{"a":3}');
    const foreign = await gql(SET, { m: [{ ownerId: owner, namespace: 'app--1', key: 'x1', type: 'json', value: '{}' }] });
    expect(foreign.data.metafieldsSet.userErrors[0].code).toBe('APP_NOT_AUTHORIZED');
    expect(
      (await gql(SET, { m: [{ ownerId: owner, key: 'zz', type: 'json', value: '{}' }] }, otherToken)).data.metafieldsSet.userErrors[0],
    ).toMatchObject({ field: ['metafields', '0', 'ownerId'], code: 'INVALID' });
  });

  it('pages with first/after and pageInfo; first or last is required', async () => {
    for (let i = 0; i < 3; i++)
      await gql(
        `mutation { paymentCustomizationCreate(paymentCustomization: { functionHandle: "hide-payment", title: "P${i}", enabled: false }) { userErrors { code } } }`,
        {},
        token2,
      );
    const PAGE = `query ($after: String) { paymentCustomizations(first: 2, after: $after) { nodes { title } pageInfo { hasNextPage endCursor } } }`;
    const p1 = (await gql(PAGE, {}, token2)).data.paymentCustomizations;
    expect(p1.nodes).toEqual([{ title: 'P0' }, { title: 'P1' }]);
    expect(p1.pageInfo.hasNextPage).toBe(true);
    const p2 = (await gql(PAGE, { after: p1.pageInfo.endCursor }, token2)).data.paymentCustomizations;
    expect(p2).toMatchObject({ nodes: [{ title: 'P2' }], pageInfo: { hasNextPage: false } });
    expect((await gql('{ paymentCustomizations { nodes { id } } }', {}, token2)).errors?.[0]?.message).toBe(
      'you must provide one of first or last',
    );
  });

  it('injectUserErrors makes the next call of a mutation refuse without changing anything', async () => {
    const before = sim.state.functions.list('cartTransform', SHOP2).length;
    sim.injectUserErrors({
      mutation: 'cartTransformCreate',
      userErrors: [{ field: ['functionId'], message: 'Nope', code: 'INPUT_INVALID' }],
    });
    const CREATE = `mutation { cartTransformCreate(functionHandle: "bundler") { cartTransform { id } userErrors { field message code } } }`;
    expect((await gql(CREATE, {}, token2)).data.cartTransformCreate).toEqual({
      cartTransform: null,
      userErrors: [{ field: ['functionId'], message: 'Nope', code: 'INPUT_INVALID' }],
    });
    expect(sim.state.functions.list('cartTransform', SHOP2)).toHaveLength(before);
    expect((await gql(CREATE, {}, token2)).data.cartTransformCreate.userErrors).toEqual([]);
  });

  it('function mutations cost 10 and are throttled with the rest', async () => {
    const res = await gql(
      `mutation { validationCreate(validation: { functionHandle: "min-qty" }) { validation { id } userErrors { code } } }`,
    );
    expect(res.extensions.cost.requestedQueryCost).toBe(10 + 1 + 1);
    sim.setBucket({ max: 15, restoreRate: 1 });
    try {
      const first = await gql(`mutation { validationCreate(validation: { functionHandle: "min-qty" }) { validation { id } } }`, {}, token2);
      expect(first.errors).toBeUndefined();
      const second = await gql(
        `mutation { validationCreate(validation: { functionHandle: "min-qty" }) { validation { id } } }`,
        {},
        token2,
      );
      expect(second.errors?.[0]?.extensions?.code).toBe('THROTTLED');
    } finally {
      sim.setBucket(BIG_BUCKET);
    }
  });
});
