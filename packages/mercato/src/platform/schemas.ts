/**
 * The request checks of `POST /webhooks`, as zod schemas parsed with parseInput (src/input.ts): after the HMAC
 * matched, a missing or malformed header is a 400 naming it (`{ error: "<header>: <rule>", field: "<header>" }`).
 */
import { z } from 'zod';
import { normalizeShopDomain } from '../app/shop.ts';

const TOPIC_RE = /^[a-z0-9_]+\/[a-z0-9_]+$/;
const TOPIC_RULE = 'missing or not a topic';
const SHOP_RULE = 'missing or not a shop domain';
const WEBHOOK_ID_RULE = 'missing';

/** An optional header: trimmed, empty → null (see `webhookHeadersOf`). */
const optionalHeader = z.string().nullable();

/**
 * The webhook headers, by their canonical names. Values are given trimmed, with null for a missing or empty header.
 * The shop domain is normalised; the event id is cut at 255 characters; an unparsable `X-Shopify-Triggered-At` is null.
 */
export const webhookHeaders = z.object({
  'X-Shopify-Topic': z.string({ error: TOPIC_RULE }).regex(TOPIC_RE, { error: TOPIC_RULE }),
  'X-Shopify-Shop-Domain': z
    .string({ error: SHOP_RULE })
    .transform((value) => normalizeShopDomain(value))
    .refine((shop) => shop !== null, { error: SHOP_RULE })
    .transform((shop) => shop!),
  'X-Shopify-Webhook-Id': z.string({ error: WEBHOOK_ID_RULE }).max(255, { error: WEBHOOK_ID_RULE }),
  'X-Shopify-Event-Id': optionalHeader.transform((id) => id?.slice(0, 255) ?? null),
  'X-Shopify-Triggered-At': optionalHeader.transform((at) => (at && !Number.isNaN(Date.parse(at)) ? new Date(at).toISOString() : null)),
  'X-Shopify-Api-Version': optionalHeader,
});

export type WebhookHeaders = z.output<typeof webhookHeaders>;

/** The headers `webhookHeaders` checks, trimmed; a missing or empty one is null. */
export function webhookHeadersOf(headers: Headers): Record<keyof WebhookHeaders, string | null> {
  const get = (name: string) => headers.get(name)?.trim() || null;
  return {
    'X-Shopify-Topic': get('x-shopify-topic'),
    'X-Shopify-Shop-Domain': get('x-shopify-shop-domain'),
    'X-Shopify-Webhook-Id': get('x-shopify-webhook-id'),
    'X-Shopify-Event-Id': get('x-shopify-event-id'),
    'X-Shopify-Triggered-At': get('x-shopify-triggered-at'),
    'X-Shopify-Api-Version': get('x-shopify-api-version'),
  };
}
