/**
 * Webhook delivery as the platform does it: a POST of the JSON body to the app's URL, signed with the app's secret
 * (base64 HMAC-SHA256 of the exact body bytes in `X-Shopify-Hmac-Sha256`), with the topic, shop, API version,
 * webhook id, event id and trigger time in headers. A redelivery sends the same bytes, ids and trigger time again.
 */
import { randomUUID } from 'node:crypto';
import { webhookHmac } from './jwt.ts';
import type { SimState, WebhookDelivery } from './state.ts';

/** How long the platform waits for the app's answer. */
export const DELIVERY_TIMEOUT_MS = 5000;
export const DEFAULT_WEBHOOK_PATH = '/webhooks';

export interface DeliverOptions {
  /** Default: the only app. */
  apiKey?: string;
  shop: string;
  /** For example `orders/create`. */
  topic: string;
  /** Serialised with JSON.stringify unless `rawBody` is given. */
  payload?: unknown;
  /** The exact body to send (to check that the receiver signs the raw bytes, not a re-serialisation). */
  rawBody?: string;
  /** Default: the latest stable version the simulator knows. */
  apiVersion?: string;
  /** Default `<appUrl>/webhooks`. */
  url?: string;
  /** Override the generated ids. */
  webhookId?: string;
  eventId?: string;
  /** Sign with this secret instead of the app's (to test refusals). */
  signWith?: string;
}

export function latestStable(state: SimState): string {
  const stable = state.apiVersions.filter((v) => /^\d{4}-\d{2}$/.test(v)).sort();
  return stable[stable.length - 1] ?? 'unstable';
}

export function headersFor(delivery: WebhookDelivery, secret: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-shopify-topic': delivery.topic,
    'x-shopify-hmac-sha256': webhookHmac(Buffer.from(delivery.body, 'utf8'), secret),
    'x-shopify-shop-domain': delivery.shop,
    'x-shopify-api-version': delivery.apiVersion,
    'x-shopify-webhook-id': delivery.webhookId,
    'x-shopify-event-id': delivery.eventId,
    'x-shopify-triggered-at': delivery.triggeredAt,
  };
}

async function attempt(state: SimState, delivery: WebhookDelivery, secret: string): Promise<WebhookDelivery> {
  const started = Date.now();
  const at = new Date(started).toISOString();
  try {
    const res = await fetch(delivery.url, {
      method: 'POST',
      headers: headersFor(delivery, secret),
      body: delivery.body,
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => undefined);
    delivery.attempts.push({ at, status: res.status, durationMs: Date.now() - started });
    delivery.status = res.status;
  } catch (error) {
    const reason = (error as { cause?: { code?: string } })?.cause?.code ?? (error as Error)?.name ?? 'error';
    delivery.attempts.push({ at, status: null, error: String(reason), durationMs: Date.now() - started });
    delivery.status = null;
  }
  return delivery;
}

/** Sends a new webhook; resolves with its delivery record once the app has answered (or the attempt failed). */
export async function deliverWebhook(state: SimState, options: DeliverOptions): Promise<WebhookDelivery> {
  const app = state.app(options.apiKey);
  const shop = state.shop(options.shop);
  const url = options.url ?? (app.appUrl ? `${app.appUrl}${DEFAULT_WEBHOOK_PATH}` : undefined);
  if (!url) throw new Error(`platform-sim: app "${app.apiKey}" has no appUrl; set one (setAppUrl) or pass url`);
  const delivery: WebhookDelivery = {
    webhookId: options.webhookId ?? randomUUID(),
    eventId: options.eventId ?? randomUUID(),
    apiKey: app.apiKey,
    shop: shop.domain,
    topic: options.topic,
    apiVersion: options.apiVersion ?? latestStable(state),
    url,
    body: options.rawBody ?? JSON.stringify(options.payload ?? {}),
    triggeredAt: new Date().toISOString(),
    attempts: [],
    status: null,
  };
  state.webhookDeliveries.push(delivery);
  return attempt(state, delivery, options.signWith ?? app.apiSecret);
}

/** Sends an earlier webhook again: same id, event id, body and trigger time. */
export async function redeliverWebhook(state: SimState, webhookId: string): Promise<WebhookDelivery> {
  const delivery = state.webhookDeliveries.find((d) => d.webhookId === webhookId);
  if (!delivery) throw new Error(`platform-sim: no webhook with id "${webhookId}"`);
  return attempt(state, delivery, state.app(delivery.apiKey).apiSecret);
}

/** The `app/uninstalled` payload: the shop resource. */
export function shopPayload(state: SimState, domain: string): Record<string, unknown> {
  const shop = state.shop(domain);
  return {
    id: shop.id,
    name: shop.name,
    email: shop.email,
    domain: shop.domain,
    myshopify_domain: shop.domain,
    currency: shop.currencyCode,
  };
}
