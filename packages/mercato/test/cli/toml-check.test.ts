/**
 * `mercato check`'s warnings about the app TOML (src/cli/toml-check.ts): each names the file and the line, and the
 * scaffold's own shopify.app.toml gives none.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LATEST_STABLE_API_VERSION } from '../../src/app/platform.ts';
import { tomlWarnings } from '../../src/cli/toml-check.ts';
import { TEMPLATE_DIR } from '../../src/cli/init.ts';

const GOOD = `client_id = "abc"
application_url = "https://example.com"

[access_scopes]
scopes = "read_orders"

[webhooks]
api_version = "2026-10"

  [[webhooks.subscriptions]]
  topics = [ "app/uninstalled", "orders/create" ]
  uri = "/webhooks"

  [[webhooks.subscriptions]]
  compliance_topics = [ "customers/data_request", "customers/redact", "shop/redact" ]
  uri = "/webhooks"
`;

const check = (text: string, handlerTopics = ['orders/create'], apiVersion = '2026-10') =>
  tomlWarnings({ path: 'shopify.app.toml', text, handlerTopics, apiVersion });

describe('app TOML warnings of mercato check', () => {
  it('none for a file that subscribes every handler and the compliance topics at the client API version', () => {
    expect(check(GOOD)).toEqual([]);
  });

  it("none for the scaffold's own shopify.app.toml and its handlers", () => {
    const text = readFileSync(join(TEMPLATE_DIR, 'shopify.app.toml'), 'utf8')
      .replaceAll('{{name}}', 'x')
      .replaceAll('{{apiVersion}}', LATEST_STABLE_API_VERSION);
    expect(check(text, ['orders/create'], LATEST_STABLE_API_VERSION)).toEqual([]);
  });

  it('a handler whose topic is not subscribed: the file and the line of the topics list', () => {
    expect(check(GOOD, ['orders/create', 'products/update'])).toEqual([
      expect.stringMatching(
        /^shopify\.app\.toml:11: the config has a handler for "products\/update" but no \[\[webhooks\.subscriptions\]\] lists it/,
      ),
    ]);
  });

  it('a subscription without a handler: the line of the topic (built-in topics need none)', () => {
    const text = GOOD.replace('"orders/create" ]', '"orders/create",\n    "products/update" ]');
    expect(check(text)).toEqual([
      expect.stringMatching(/^shopify\.app\.toml:12: "products\/update" is subscribed but the config has no handler for it/),
    ]);
  });

  it('missing compliance topics: named, at the compliance_topics line', () => {
    expect(check(GOOD.replace('"customers/redact", ', ''))).toEqual([
      expect.stringMatching(/^shopify\.app\.toml:15: the mandatory compliance topic "customers\/redact" is not subscribed/),
    ]);
    const none = GOOD.split('\n').slice(0, 13).join('\n');
    expect(check(none)).toEqual([
      expect.stringMatching(
        /^shopify\.app\.toml:10: the mandatory compliance topics "customers\/data_request", "customers\/redact", "shop\/redact" are not subscribed/,
      ),
    ]);
  });

  it("an api_version other than the Admin GraphQL client's: the line of api_version", () => {
    expect(check(GOOD, ['orders/create'], '2025-07')).toEqual([
      expect.stringMatching(/^shopify\.app\.toml:8: \[webhooks\] api_version is "2026-10" but the app's Admin GraphQL client uses 2025-07/),
    ]);
  });

  it('a subscription uri that is not /webhooks', () => {
    expect(check(GOOD.replace('uri = "/webhooks"', 'uri = "/api/webhooks"'))).toEqual([
      expect.stringMatching(/^shopify\.app\.toml:12: the subscription's uri "\/api\/webhooks" is not Mercato's webhook endpoint/),
    ]);
    // not a path: a Pub/Sub or EventBridge address is left alone
    expect(check(GOOD.replace('uri = "/webhooks"', 'uri = "pubsub://project:topic"'))).toEqual([]);
  });

  it('a file that does not parse is one warning naming it', () => {
    expect(check('client_id = "unterminated\n')).toEqual([expect.stringMatching(/^shopify\.app\.toml: could not be parsed as TOML/)]);
  });
});
