/** Start-up validation of providers (base definition), their field specs, and platform functions. One test per rule. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { problemsAfter } from './validate-fixture.ts';

function rule(name: string, change: (config: any, base: any) => void, expected: string[]): void {
  it(name, () => {
    expect(problemsAfter(change)).toEqual(expected);
  });
}

const F = 'providers.crm.ui.fields';

describe('configuration validation: providers', () => {
  rule(
    'providers must be an object',
    (_c, b) => {
      b.providers = [];
    },
    ['providers: must be an object mapping names to provider definitions (got an array)'],
  );
  rule(
    'a provider must be an object',
    (_c, b) => {
      b.providers.crm = null;
    },
    ['providers.crm: must be a provider definition object (got null)'],
  );
  rule(
    'a provider name must be a string',
    (_c, b) => {
      b.providers.crm.name = 7;
    },
    ['providers.crm.name: must be a string (got 7)'],
  );
  rule(
    'a provider name must equal its key',
    (_c, b) => {
      b.providers.crm.name = 'hubspot';
    },
    ['providers.crm.name: must equal its key "crm" (got "hubspot")'],
  );
  rule(
    'a provider needs ui',
    (_c, b) => {
      delete b.providers.crm.ui;
    },
    ['providers.crm.ui: must be an object with a fields map (got undefined)'],
  );
  rule(
    'a provider needs ui.fields',
    (_c, b) => {
      b.providers.crm.ui = {};
    },
    ['providers.crm.ui.fields: must be an object of field specs (got undefined)'],
  );
  rule(
    'checker must be a function',
    (_c, b) => {
      b.providers.crm.checker = true;
    },
    ['providers.crm.checker: must be a function (got true)'],
  );
  rule(
    'transformer must be a function',
    (_c, b) => {
      b.providers.crm.transformer = {};
    },
    ['providers.crm.transformer: must be a function (got an object)'],
  );
  rule(
    'methods is required',
    (_c, b) => {
      delete b.providers.crm.methods;
    },
    ['providers.crm.methods: must be an object of functions (may be empty) (got undefined)'],
  );
  rule(
    'each method must be a function',
    (_c, b) => {
      b.providers.crm.methods.ping = 'GET /ping';
    },
    ['providers.crm.methods.ping: must be a function (got "GET /ping")'],
  );
  rule(
    'description must be a string',
    (_c, b) => {
      b.providers.crm.description = ['x'];
    },
    ['providers.crm.description: must be a string (got an array)'],
  );
});

describe('configuration validation: field specs', () => {
  rule(
    'a field spec must be an object',
    (_c, b) => {
      b.providers.crm.ui.fields.token = 'password';
    },
    [`${F}.token: must be a field spec object (got "password")`],
  );
  rule(
    'type must be one of the five field types',
    (_c, b) => {
      b.providers.crm.ui.fields.apiKey.type = 'secret';
    },
    [`${F}.apiKey.type: must be one of text, password, number, select, checkbox (got "secret")`],
  );
  rule(
    'label is required and non-empty',
    (_c, b) => {
      b.providers.crm.ui.fields.apiKey.label = '  ';
      delete b.providers.crm.ui.fields.sandbox.label;
    },
    [`${F}.apiKey.label: must be a non-empty string (got "  ")`, `${F}.sandbox.label: must be a non-empty string (got undefined)`],
  );
  rule(
    'required must be a boolean',
    (_c, b) => {
      b.providers.crm.ui.fields.timeoutMs.required = 'no';
    },
    [`${F}.timeoutMs.required: must be a boolean (got "no")`],
  );
  rule(
    'description must be a string',
    (_c, b) => {
      b.providers.crm.ui.fields.timeoutMs.description = 5;
    },
    [`${F}.timeoutMs.description: must be a string (got 5)`],
  );
  rule(
    'placeholder is only allowed on text fields',
    (_c, b) => {
      b.providers.crm.ui.fields.apiKey.placeholder = 'sk_...';
    },
    [`${F}.apiKey.placeholder: is only allowed on fields of type text (this field is password)`],
  );
  rule(
    'placeholder must be a string',
    (_c, b) => {
      b.providers.crm.ui.fields.baseUrl.placeholder = 1;
    },
    [`${F}.baseUrl.placeholder: must be a string (got 1)`],
  );
  rule(
    'validate must be a schema',
    (_c, b) => {
      b.providers.crm.ui.fields.baseUrl.validate = (v: string) => v.startsWith('https');
    },
    [`${F}.baseUrl.validate: must be a schema (an object with safeParse, e.g. a zod schema) (got a function)`],
  );
  rule(
    'options are required for select',
    (_c, b) => {
      delete b.providers.crm.ui.fields.region.options;
    },
    [`${F}.region.options: is required for a select field (a non-empty array of { label, value })`],
  );
  rule(
    'options must be an array',
    (_c, b) => {
      b.providers.crm.ui.fields.region.options = { eu: 'Europe' };
    },
    [`${F}.region.options: must be a non-empty array of { label, value } (got an object)`],
  );
  rule(
    'options must not be empty',
    (_c, b) => {
      b.providers.crm.ui.fields.region.options = [];
    },
    [`${F}.region.options: must not be empty`],
  );
  rule(
    'each option is { label, value } with a non-empty label and a string value',
    (_c, b) => {
      b.providers.crm.ui.fields.region.options = ['eu', { label: '', value: 'us' }, { label: 'Asia', value: 3 }];
    },
    [
      `${F}.region.options[0]: must be an object { label, value } (got "eu")`,
      `${F}.region.options[1].label: must be a non-empty string (got "")`,
      `${F}.region.options[2].value: must be a string (got 3)`,
    ],
  );
  rule(
    'option values must be unique',
    (_c, b) => {
      b.providers.crm.ui.fields.region.options.push({ label: 'Europe again', value: 'eu' });
    },
    [`${F}.region.options[2].value: duplicate value "eu" (also at ${F}.region.options[0])`],
  );
  rule(
    'options are only allowed on select fields',
    (_c, b) => {
      b.providers.crm.ui.fields.baseUrl.options = [{ label: 'A', value: 'a' }];
    },
    [`${F}.baseUrl.options: is only allowed on fields of type select (this field is text)`],
  );
  it('a field validator may transform (zod schema with transform is accepted)', () => {
    expect(
      problemsAfter((_c, b) => {
        b.providers.crm.ui.fields.baseUrl.validate = z.string().transform((s) => s.trim());
      }),
    ).toEqual([]);
  });
});

describe('configuration validation: functions', () => {
  rule(
    'functions must be an object',
    (c) => {
      c.functions = [c.functions.volume];
    },
    ['functions: must be an object mapping keys to function definitions (got an array)'],
  );
  rule(
    'a function must be an object',
    (c) => {
      c.functions.volume = 'discount';
    },
    ['functions.volume: must be a function definition object (got "discount")'],
  );
  rule(
    'type must be a function type',
    (c) => {
      c.functions.hidePayment.type = 'payment';
    },
    [
      'functions.hidePayment.type: must be one of discount, cart_transform, delivery_customization, payment_customization, checkout_validation, fulfillment_constraint, order_routing_location_rule, pickup_point_delivery_option_generator, local_pickup_delivery_option_generator (got "payment")',
    ],
  );
  rule(
    'function types without a platform mutation are valid definitions',
    (c) => {
      c.functions.routing = { type: 'order_routing_location_rule', handle: 'nearest', fields: {} };
    },
    [],
  );
  rule(
    'password fields are not allowed in a function configuration',
    (c) => {
      c.functions.volume.fields.secret = { type: 'password', label: 'Secret' };
    },
    [
      'functions.volume.fields.secret.type: password fields are not allowed in a function configuration (it is stored in a metafield on the platform, in plain text); keep secrets in a provider',
    ],
  );
  rule(
    'handle must match the handle format',
    (c) => {
      c.functions.hidePayment.handle = 'Hide Payment';
    },
    ['functions.hidePayment.handle: must match /^[a-z0-9][a-z0-9_-]*$/ (lower-case letters, digits, _ and -) (got "Hide Payment")'],
  );
  rule(
    'handle is required',
    (c) => {
      delete c.functions.hidePayment.handle;
    },
    ['functions.hidePayment.handle: must match /^[a-z0-9][a-z0-9_-]*$/ (lower-case letters, digits, _ and -) (got undefined)'],
  );
  rule(
    'duplicate handles are rejected',
    (c) => {
      c.functions.a = { type: 'cart_transform', handle: 'x', fields: {} };
      c.functions.b = { type: 'cart_transform', handle: 'x', fields: {} };
    },
    ['functions.b.handle: duplicate handle "x" (also used by functions.a)'],
  );
  rule(
    'fields is required',
    (c) => {
      delete c.functions.hidePayment.fields;
    },
    ['functions.hidePayment.fields: is required (an object of field specs, may be empty)'],
  );
  rule(
    'fields are checked as field specs',
    (c) => {
      c.functions.volume.fields.percent = { type: 'number', label: 'Percent', placeholder: '10' };
      c.functions.volume.fields.kind = { type: 'select', label: 'Kind', options: [] };
    },
    [
      'functions.volume.fields.percent.placeholder: is only allowed on fields of type text (this field is number)',
      'functions.volume.fields.kind.options: must not be empty',
    ],
  );
  rule(
    'discountModes only for discount functions',
    (c) => {
      c.functions.hidePayment.discountModes = ['automatic'];
    },
    ['functions.hidePayment.discountModes: is only allowed on functions of type discount (this one is payment_customization)'],
  );
  rule(
    'discountModes must be a non-empty array',
    (c) => {
      c.functions.volume.discountModes = [];
    },
    ['functions.volume.discountModes: must be a non-empty array of automatic, code (got an array)'],
  );
  rule(
    'discountModes entries must be automatic or code',
    (c) => {
      c.functions.volume.discountModes = ['automatic', 'manual'];
    },
    ['functions.volume.discountModes[1]: must be one of automatic, code (got "manual")'],
  );
  rule(
    'discountModes entries must be unique',
    (c) => {
      c.functions.volume.discountModes = ['code', 'code'];
    },
    ['functions.volume.discountModes[1]: duplicate mode "code"'],
  );
  rule(
    'title, description must be strings and authorize a function',
    (c) => {
      c.functions.volume.title = 1;
      c.functions.volume.description = false;
      c.functions.volume.authorize = 'yes';
    },
    [
      'functions.volume.title: must be a string (got 1)',
      'functions.volume.description: must be a string (got false)',
      'functions.volume.authorize: must be a function (got "yes")',
    ],
  );
  rule(
    'a function rejects unknown keys, suggesting the closest one',
    (c) => {
      c.functions.volume.discountMode = ['code'];
      c.functions.volume.inputQuery = 'query { cart }';
    },
    [
      'functions.volume.discountMode: unknown function option (did you mean "discountModes"?); allowed: type, handle, title, description, discountModes, fields, authorize',
      'functions.volume.inputQuery: unknown function option; allowed: type, handle, title, description, discountModes, fields, authorize',
    ],
  );
});
