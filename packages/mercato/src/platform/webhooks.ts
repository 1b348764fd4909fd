/**
 * `POST /webhooks`: the platform's webhook deliveries. Not under /api and without session auth; instead:
 * 1. the body is read as bytes, at most 5 MB (413 while reading, before a signature can be computed); the HMAC
 *    (`X-Shopify-Hmac-Sha256`, base64 HMAC-SHA256 of the raw body bytes) must match one of the apps' secrets — 401
 *    before any header is looked at or the body parsed;
 * 2. the headers are checked (topic, shop domain, webhook id) and the body must be JSON nested at most 256 levels
 *    (MAX_JSON_DEPTH of http/body.ts) — else 400;
 * 3. a topic with a handler is dispatched as a run of `webhook:<topic>` (trigger `webhook`) in the same transaction
 *    that records the delivery id, so a delivery is enqueued exactly once: a webhook id (or an event id of the same
 *    topic) already accepted for the app is acknowledged with 200 and ignored;
 * 4. an unknown topic is recorded, logged and acknowledged with 200.
 * The answer is sent as soon as the run is committed; the handler runs in a worker. See docs/webhooks.md.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Hono, type MiddlewareHandler } from 'hono';
import type { ResolvedApp, ResolvedPlatform } from '../app/platform.ts';
import type { RuntimeEvents } from '../events.ts';
import type { DispatchFn } from '../flows/dispatch.ts';
import type { FlowRegistry } from '../flows/registry.ts';
import { bodyLimitOf, parseJsonText } from '../http/body.ts';
import { UnauthorizedError } from '../http/errors.ts';
import { InvalidInputError } from '../errors.ts';
import type { ApiEnv } from '../http/types.ts';
import { parseInput } from '../input.ts';
import type { Logger } from '../logger.ts';
import { ATTR, type Span, SpanKind, type Tracing, activeTraceId } from '../telemetry/tracing.ts';
import { BodiesInFlightError, type BodyBudget, bodyBytesOf } from '../http/inflight.ts';
import { webhookHeaders, webhookHeadersOf } from './schemas.ts';
import { type WebhookDeliveryRecord } from './store.ts';
import { DuplicateDeliveryError } from '../flows/intake.ts';
import { WEBHOOK_TRIGGER, type WebhookInput, webhookFlowName } from './webhook-flows.ts';

export const WEBHOOK_PATH = '/webhooks';
/** Largest webhook body accepted. */
export const MAX_WEBHOOK_BODY_BYTES = 5 * 1024 * 1024;
export const HMAC_HEADER = 'x-shopify-hmac-sha256';

/** The app whose secret signed these bytes, compared in constant time; undefined when none did. */
export function verifyWebhookHmac(apps: readonly ResolvedApp[], body: Uint8Array, header: string | undefined): ResolvedApp | undefined {
  if (!header || !/^[A-Za-z0-9+/]+={0,2}$/.test(header.trim())) return undefined;
  const given = Buffer.from(header.trim(), 'base64');
  let match: ResolvedApp | undefined;
  for (const app of apps) {
    if (!app.apiSecret) continue;
    const expected = createHmac('sha256', app.apiSecret).update(body).digest();
    // every app is checked, so the time taken does not tell which one matched
    if (given.length === expected.length && timingSafeEqual(given, expected) && !match) match = app;
  }
  return match;
}

export interface WebhookRouterDeps {
  /** The delivery log (platform/store.ts webhookDeliveries): records a delivery that has no handler. */
  deliveries: { record(delivery: WebhookDeliveryRecord): Promise<boolean> };
  platform: Pick<ResolvedPlatform, 'apps'>;
  registry: Pick<FlowRegistry, 'get'>;
  dispatch: DispatchFn;
  logger: Logger;
  /** Told about every accepted delivery (runtime.events). */
  events?: RuntimeEvents;
  /** A `webhook <topic>` span per verified delivery (docs/tracing.md). */
  tracing?: Tracing;
  /** The process's bound of request bodies in flight (http/inflight.ts); unbounded when absent. */
  bodies?: BodyBudget;
}

/** A webhook HMAC as the platform sends it: the base64 of a 32-byte HMAC-SHA256 digest (44 characters). */
const HMAC_FORM = /^[A-Za-z0-9+/]{43}=$/;

/** The delivery's headers, validated (400 naming the header otherwise). */
const parseWebhookHeaders = (headers: Headers) => parseInput(webhookHeaders, webhookHeadersOf(headers));

export function webhookRouter(deps: WebhookRouterDeps): Hono<ApiEnv> {
  const app = new Hono<ApiEnv>();
  // Everything that can be judged without the body is judged before a byte of it is read (the body limit reads a
  // chunked body as it counts it): the signature's form (401), the headers (400), and room among the bodies in flight
  // (503 with Retry-After, which the platform retries), held until the answer.
  // the headers as parsed there, for the handler (one parse per delivery)
  const parsed = new WeakMap<Request, ReturnType<typeof parseWebhookHeaders>>();
  const beforeTheBody: MiddlewareHandler<ApiEnv> = async (c, next) => {
    const hmac = c.req.header(HMAC_HEADER)?.trim();
    if (!hmac || !HMAC_FORM.test(hmac)) throw new UnauthorizedError('Invalid webhook signature');
    parsed.set(c.req.raw, parseWebhookHeaders(c.req.raw.headers));
    const release = deps.bodies?.reserve(bodyBytesOf(c.req.raw.headers, MAX_WEBHOOK_BODY_BYTES));
    if (release === null) throw new BodiesInFlightError();
    try {
      await next();
    } finally {
      release?.();
    }
  };
  app.post('/', beforeTheBody, bodyLimitOf(MAX_WEBHOOK_BODY_BYTES, 'Webhook body'), async (c) => {
    const raw = new Uint8Array(await c.req.arrayBuffer());
    const signer = verifyWebhookHmac(deps.platform.apps, raw, c.req.header(HMAC_HEADER));
    const h = parsed.get(c.req.raw) ?? parseWebhookHeaders(c.req.raw.headers);
    if (!signer) throw new UnauthorizedError('Invalid webhook signature');
    const appHandle = signer.handle;

    const topic = h['X-Shopify-Topic'];
    const shop = h['X-Shopify-Shop-Domain'];
    const webhookId = h['X-Shopify-Webhook-Id'];
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch {
      throw new InvalidInputError('Webhook body must be JSON');
    }
    // JSON, nested at most MAX_JSON_DEPTH levels (deeper is a 400: nothing recursive downstream sees it)
    const payload = parseJsonText(text, 'Webhook body');
    if (!deps.tracing) return accept(undefined);
    const attributes = { [ATTR.app]: appHandle, [ATTR.shop]: shop, 'mercato.webhook.topic': topic, 'mercato.webhook.id': webhookId };
    return deps.tracing.span(`webhook ${topic}`, { kind: SpanKind.CONSUMER, attributes }, accept);

    /** Records the delivery and dispatches its handler's run (a duplicate or a topic without handler is acknowledged). */
    async function accept(span: Span | undefined) {
      const delivery: WebhookDeliveryRecord = {
        appHandle,
        webhookId,
        eventId: h['X-Shopify-Event-Id'],
        shop,
        topic,
        runId: null,
      };
      const flowName = webhookFlowName(topic);
      const log = { appHandle, shop, topic, webhookId };
      const received = (handled: boolean, duplicate: boolean, runId: string | null) =>
        deps.events?.emit('webhook.received', {
          topic,
          shop,
          app: appHandle,
          webhookId,
          duplicate,
          handled,
          runId,
          requestId: c.get('requestId') ?? null,
          traceId: activeTraceId(),
        });
      if (!deps.registry.get(flowName)) {
        const fresh = await deps.deliveries.record(delivery);
        deps.logger.info(log, fresh ? 'webhook with no handler for its topic: acknowledged and ignored' : 'duplicate webhook ignored');
        received(false, !fresh, null);
        span?.setAttribute(ATTR.outcome, fresh ? 'ignored' : 'duplicate');
        return c.json(fresh ? { ok: true, ignored: 'no handler for this topic' } : { ok: true, duplicate: true });
      }
      const input: WebhookInput = {
        topic,
        webhookId,
        eventId: delivery.eventId,
        triggeredAt: h['X-Shopify-Triggered-At'],
        apiVersion: h['X-Shopify-Api-Version'],
        payload,
      };
      try {
        const { runId } = await deps.dispatch({
          appHandle,
          shop,
          flowName,
          input,
          trigger: WEBHOOK_TRIGGER as 'webhook',
          // the record and the run commit together (concurrent deliveries share the statement); a duplicate gets no run
          delivery: { webhookId, eventId: delivery.eventId, topic },
          requestId: c.get('requestId'),
        });
        deps.logger.debug({ ...log, runId }, 'webhook accepted');
        received(true, false, runId);
        span?.setAttributes({ [ATTR.outcome]: 'dispatched', [ATTR.runId]: runId });
        return c.json({ ok: true, runId });
      } catch (error) {
        if (!(error instanceof DuplicateDeliveryError)) throw error;
        deps.logger.info(log, 'duplicate webhook ignored');
        received(true, true, null);
        span?.setAttribute(ATTR.outcome, 'duplicate');
        return c.json({ ok: true, duplicate: true });
      }
    }
  });
  return app;
}
