/** Start-up validation of the `shopify` option (static shape only) and of `webhooks`. One test per rule. */
import { describe, expect, it } from 'vitest';
import { problemsAfter } from './validate-fixture.ts';

function rule(name: string, change: (config: any, base: any) => void, expected: string[]): void {
  it(name, () => {
    expect(problemsAfter(change)).toEqual(expected);
  });
}

describe('configuration validation: shopify', () => {
  rule(
    'shopify must be an object',
    (c) => {
      c.shopify = 'multi';
    },
    ['shopify: must be an object (got "multi")'],
  );
  rule(
    'shopify rejects unknown keys',
    (c) => {
      c.shopify.scope = 'read_orders';
    },
    ['shopify.scope: unknown shopify option (did you mean "scopes"?); allowed: scopes, apps, apiVersion'],
  );
  rule(
    'scopes must be a non-empty string',
    (c) => {
      c.shopify.scopes = ' ';
    },
    ['shopify.scopes: must be a non-empty scope string such as "read_products,write_orders" (got " ")'],
  );
  rule(
    'apiVersion must be YYYY-MM',
    (c) => {
      c.shopify.apiVersion = '2026-13';
    },
    ['shopify.apiVersion: must be an API version of the form YYYY-MM, e.g. "2026-10" (got "2026-13")'],
  );
  rule(
    'apps must be a non-empty object',
    (c) => {
      c.shopify.apps = {};
    },
    ['shopify.apps: must be a non-empty object mapping app handles to app configs (omit it for single-app mode) (got an object)'],
  );
  rule(
    'app handles contain only letters, digits, _ and -',
    (c) => {
      c.shopify.apps['my app'] = { apiKey: 'k', apiSecret: 's' };
    },
    ['shopify.apps["my app"]: "my app" is not a valid app handle (letters, digits, _ and - only)'],
  );
  rule(
    'an app must be an object',
    (c) => {
      c.shopify.apps.main = 'platform.app.toml';
    },
    ['shopify.apps.main: must be an app config object { toml | apiKey, apiSecret, appUrl? } (got "platform.app.toml")'],
  );
  rule(
    'an app takes toml or apiKey, not both',
    (c) => {
      c.shopify.apps.main.apiKey = 'key-main';
    },
    ['shopify.apps.main: set either toml or apiKey, not both'],
  );
  rule(
    'an app needs toml or apiKey',
    (c) => {
      delete c.shopify.apps.main.toml;
    },
    ['shopify.apps.main: needs toml (a project-relative TOML path) or apiKey (the client ID); neither is set'],
  );
  rule(
    'toml and apiKey must be non-empty strings',
    (c) => {
      c.shopify.apps.main.toml = '';
      c.shopify.apps['second_app-2'].apiKey = 42;
    },
    [
      'shopify.apps.main.toml: must be a non-empty path string (got "")',
      'shopify.apps["second_app-2"].apiKey: must be a non-empty string (got 42)',
    ],
  );
  rule(
    'apiSecret is required',
    (c) => {
      c.shopify.apps.main.apiSecret = undefined;
    },
    ['shopify.apps.main.apiSecret: is required: a non-empty string (if it is read from the environment, is the variable set?)'],
  );
  rule(
    'apiSecret must not be empty (and its value is never echoed)',
    (c) => {
      c.shopify.apps.main.apiSecret = '   ';
      c.shopify.apps['second_app-2'].apiSecret = 1234;
    },
    ['shopify.apps.main.apiSecret: must not be empty', 'shopify.apps["second_app-2"].apiSecret: must be a non-empty string (got 1234)'],
  );
  rule(
    'appUrl must be an http(s) URL',
    (c) => {
      c.shopify.apps.main.appUrl = 'ftp://files.example.com';
      c.shopify.apps['second_app-2'].appUrl = 'second.example.com';
    },
    [
      'shopify.apps.main.appUrl: must be an absolute http(s) URL (got "ftp://files.example.com")',
      'shopify.apps["second_app-2"].appUrl: must be an absolute http(s) URL (got "second.example.com")',
    ],
  );
  rule(
    'an app rejects unknown keys',
    (c) => {
      c.shopify.apps.main.secret = 'x';
    },
    ['shopify.apps.main.secret: unknown app option; allowed: toml, apiKey, apiSecret, appUrl'],
  );
});

describe('configuration validation: webhooks', () => {
  rule(
    'webhooks must be an object',
    (c) => {
      c.webhooks = [];
    },
    ['webhooks: must be an object mapping topics to webhook definitions (got an array)'],
  );
  rule(
    'a webhook key must be a resource/event topic',
    (c) => {
      c.webhooks['Orders/Create'] = { topic: 'Orders/Create', handler: () => {} };
      c.webhooks.orders_create = { topic: 'orders_create', handler: () => {} };
    },
    [
      'webhooks["Orders/Create"]: "Orders/Create" is not a webhook topic (lower-case "resource/event", e.g. "orders/create")',
      'webhooks.orders_create: "orders_create" is not a webhook topic (lower-case "resource/event", e.g. "orders/create")',
    ],
  );
  rule(
    'a webhook must be an object',
    (c) => {
      c.webhooks['orders/create'] = () => {};
    },
    ['webhooks["orders/create"]: must be a webhook definition object (got a function)'],
  );
  rule(
    'topic must equal its key',
    (c) => {
      c.webhooks['orders/create'].topic = 'orders/updated';
    },
    ['webhooks["orders/create"].topic: must equal its key "orders/create" (got "orders/updated")'],
  );
  rule(
    'handler is required',
    (c) => {
      delete c.webhooks['orders/create'].handler;
    },
    ['webhooks["orders/create"].handler: is required: a function (got undefined)'],
  );
  rule(
    'description must be a string',
    (c) => {
      c.webhooks['orders/create'].description = 0;
    },
    ['webhooks["orders/create"].description: must be a string (got 0)'],
  );
});
