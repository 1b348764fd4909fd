/** The remaining options: `shopify` (static shape only), `webhooks`, `pages`, `experimental` (custom pages: ./custom-pages.ts), `onError`. */
import { checkShaping } from './shaping.ts';
import { PAGE_KEYS, PAGE_MODES } from '../types.ts';
import { checkCustomPages } from './custom-pages.ts';
import { at, checkKnownKeys, got, isFunction, isNonEmptyString, isPlainObject, type Problems } from './util.ts';

/** Handles of apps in multi-app mode. */
export const APP_HANDLE = /^[A-Za-z0-9_-]+$/;
/** Admin API versions are `YYYY-MM`. */
export const API_VERSION = /^\d{4}-(0[1-9]|1[0-2])$/;
/** Webhook topics: `resource/event`, lower-case letters, digits and `_`. */
export const WEBHOOK_TOPIC = /^[a-z][a-z0-9_]*\/[a-z][a-z0-9_]*$/;

const SHOPIFY_KEYS = ['scopes', 'apps', 'apiVersion'] as const;
const APP_KEYS = ['toml', 'apiKey', 'apiSecret', 'appUrl'] as const;

export function checkShopify(problems: Problems, shopify: unknown): void {
  if (shopify === undefined) return;
  if (!isPlainObject(shopify)) {
    problems.add('shopify', `must be an object ${got(shopify)}`);
    return;
  }
  checkKnownKeys(problems, 'shopify', shopify, SHOPIFY_KEYS, 'shopify option');
  if (shopify.scopes !== undefined && !isNonEmptyString(shopify.scopes)) {
    problems.add('shopify.scopes', `must be a non-empty scope string such as "read_products,write_orders" ${got(shopify.scopes)}`);
  }
  if (shopify.apiVersion !== undefined && (typeof shopify.apiVersion !== 'string' || !API_VERSION.test(shopify.apiVersion))) {
    problems.add('shopify.apiVersion', `must be an API version of the form YYYY-MM, e.g. "2026-10" ${got(shopify.apiVersion)}`);
  }
  if (shopify.apps === undefined) return;
  if (!isPlainObject(shopify.apps) || Object.keys(shopify.apps).length === 0) {
    problems.add(
      'shopify.apps',
      `must be a non-empty object mapping app handles to app configs (omit it for single-app mode) ${got(shopify.apps)}`,
    );
    return;
  }
  for (const [handle, app] of Object.entries(shopify.apps)) checkPlatformApp(problems, at('shopify.apps', handle), handle, app);
}

function checkPlatformApp(problems: Problems, path: string, handle: string, app: unknown): void {
  if (!APP_HANDLE.test(handle)) problems.add(path, `${JSON.stringify(handle)} is not a valid app handle (letters, digits, _ and - only)`);
  if (!isPlainObject(app)) {
    problems.add(path, `must be an app config object { toml | apiKey, apiSecret, appUrl? } ${got(app)}`);
    return;
  }
  checkKnownKeys(problems, path, app, APP_KEYS, 'app option');
  const hasToml = app.toml !== undefined;
  const hasKey = app.apiKey !== undefined;
  if (hasToml && hasKey) problems.add(path, 'set either toml or apiKey, not both');
  else if (!hasToml && !hasKey) problems.add(path, 'needs toml (a project-relative TOML path) or apiKey (the client ID); neither is set');
  if (hasToml && !isNonEmptyString(app.toml)) problems.add(at(path, 'toml'), `must be a non-empty path string ${got(app.toml)}`);
  if (hasKey && !isNonEmptyString(app.apiKey)) problems.add(at(path, 'apiKey'), `must be a non-empty string ${got(app.apiKey)}`);
  // The secret's value is never echoed in a message.
  if (app.apiSecret === undefined)
    problems.add(at(path, 'apiSecret'), 'is required: a non-empty string (if it is read from the environment, is the variable set?)');
  else if (typeof app.apiSecret !== 'string') problems.add(at(path, 'apiSecret'), `must be a non-empty string ${got(app.apiSecret)}`);
  else if (app.apiSecret.trim() === '') problems.add(at(path, 'apiSecret'), 'must not be empty');
  if (app.appUrl !== undefined && !isHttpUrl(app.appUrl))
    problems.add(at(path, 'appUrl'), `must be an absolute http(s) URL ${got(app.appUrl)}`);
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const { protocol, hostname } = new URL(value);
  return (protocol === 'http:' || protocol === 'https:') && hostname !== '';
}

export function checkWebhooks(problems: Problems, webhooks: unknown): void {
  if (webhooks === undefined) return;
  if (!isPlainObject(webhooks)) {
    problems.add('webhooks', `must be an object mapping topics to webhook definitions ${got(webhooks)}`);
    return;
  }
  for (const [topic, webhook] of Object.entries(webhooks)) {
    const path = at('webhooks', topic);
    if (!WEBHOOK_TOPIC.test(topic))
      problems.add(path, `${JSON.stringify(topic)} is not a webhook topic (lower-case "resource/event", e.g. "orders/create")`);
    if (!isPlainObject(webhook)) {
      problems.add(path, `must be a webhook definition object ${got(webhook)}`);
      continue;
    }
    if (webhook.topic !== topic) problems.add(at(path, 'topic'), `must equal its key ${JSON.stringify(topic)} ${got(webhook.topic)}`);
    if (webhook.description !== undefined && typeof webhook.description !== 'string') {
      problems.add(at(path, 'description'), `must be a string ${got(webhook.description)}`);
    }
    if (!isFunction(webhook.handler)) problems.add(at(path, 'handler'), `is required: a function ${got(webhook.handler)}`);
    checkShaping(problems, path, webhook, false);
  }
}

/** `path` is `pages` for the config and `defineApp.pages` for the base definition. */
export function checkPages(problems: Problems, path: string, pages: unknown): void {
  if (pages === undefined) return;
  if (!isPlainObject(pages)) {
    problems.add(path, `must be an object mapping pages (${PAGE_KEYS.join(', ')}) to modes ${got(pages)}`);
    return;
  }
  checkKnownKeys(problems, path, pages, PAGE_KEYS, 'page');
  for (const key of PAGE_KEYS) {
    const mode = pages[key];
    if (mode !== undefined && (typeof mode !== 'string' || !(PAGE_MODES as readonly string[]).includes(mode))) {
      problems.add(at(path, key), `must be one of ${PAGE_MODES.join(', ')} ${got(mode)}`);
    }
  }
}

export function checkExperimental(problems: Problems, experimental: unknown): void {
  if (experimental === undefined) return;
  if (!isPlainObject(experimental)) {
    problems.add('experimental', `must be an object ${got(experimental)}`);
    return;
  }
  checkKnownKeys(problems, 'experimental', experimental, ['customPages', 'pages'], 'experimental option');
  if (experimental.customPages !== undefined && typeof experimental.customPages !== 'boolean') {
    problems.add('experimental.customPages', `must be a boolean ${got(experimental.customPages)}`);
  }
  checkCustomPages(problems, experimental);
}

export function checkOnError(problems: Problems, onError: unknown): void {
  if (onError !== undefined && !isFunction(onError)) problems.add('onError', `must be a function (error, context?) ${got(onError)}`);
}
