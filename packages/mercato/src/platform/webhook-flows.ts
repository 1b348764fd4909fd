/**
 * Webhook handlers run as durable runs: every topic with a handler (the app's `webhooks`, plus the built-in topics
 * below) becomes an internal flow `webhook:<topic>` in the flow registry, dispatched only by POST /webhooks (trigger
 * `webhook`), with no concurrency limit, under the app's retry policy. See docs/webhooks.md.
 *
 * Built-in topics and their default handlers:
 * - `app/uninstalled`: marks the installation uninstalled and forgets its token (before the app's own handler);
 * - `shop/redact`: erases the shop's data (after the app's own handler, which may still read it);
 * - `customers/redact`, `customers/data_request`: logged (Mercato keeps no customer records of its own; an app that
 *   stores customer data defines these topics to erase or export it).
 */
import { z } from 'zod';
import type { FlowContext, FlowDefinition, ResolvedConfig, ShapingKey, WebhookContext, WebhookDefinition } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { InternalFlow } from '../flows/registry.ts';
import { markUninstalled } from './store.ts';
import { redactShopData } from './redact.ts';

export const WEBHOOK_FLOW_PREFIX = 'webhook:';
export const WEBHOOK_TRIGGER = 'webhook';
export const COMPLIANCE_TOPICS = ['customers/data_request', 'customers/redact', 'shop/redact'] as const;
export const BUILTIN_TOPICS = ['app/uninstalled', ...COMPLIANCE_TOPICS] as const;

export function webhookFlowName(topic: string): string {
  return `${WEBHOOK_FLOW_PREFIX}${topic}`;
}

export const webhookInput = z.object({
  topic: z.string(),
  webhookId: z.string(),
  eventId: z.string().nullable().default(null),
  triggeredAt: z.string().nullable().default(null),
  apiVersion: z.string().nullable().default(null),
  payload: z.unknown(),
});
export type WebhookInput = z.output<typeof webhookInput>;

interface DefaultHandler {
  /** Run before or after the app's own handler. */
  order: 'before' | 'after';
  run(ctx: WebhookContext, payload: any, db: Database): Promise<void>;
}

export const DEFAULT_HANDLERS: Readonly<Record<(typeof BUILTIN_TOPICS)[number], DefaultHandler>> = {
  'app/uninstalled': {
    order: 'before',
    async run(ctx, _payload, db) {
      const changed = await markUninstalled(db.query, ctx.appHandle, ctx.shop, ctx.triggeredAt);
      await ctx.log.info(
        changed
          ? 'app uninstalled: installation marked uninstalled, access token forgotten'
          : 'app uninstalled: no active installation older than the event',
        {
          triggeredAt: ctx.triggeredAt,
        },
      );
    },
  },
  'shop/redact': {
    order: 'after',
    async run(ctx, _payload, db) {
      const removed = await redactShopData(db.query, { appHandle: ctx.appHandle, shop: ctx.shop, keepRunId: ctx.runId });
      await ctx.log.info('shop data erased (shop/redact)', { removed });
    },
  },
  'customers/redact': {
    order: 'after',
    async run(ctx, payload) {
      await ctx.log.info(
        'customers/redact received: Mercato keeps no customer records; an app storing customer data handles this topic itself',
        {
          customerId: payload?.customer?.id ?? null,
          ordersToRedact: Array.isArray(payload?.orders_to_redact) ? payload.orders_to_redact.length : 0,
        },
      );
    },
  },
  'customers/data_request': {
    order: 'after',
    async run(ctx, payload) {
      await ctx.log.info(
        'customers/data_request received: Mercato keeps no customer records; an app storing customer data handles this topic itself',
        {
          customerId: payload?.customer?.id ?? null,
          dataRequestId: payload?.data_request?.id ?? null,
        },
      );
    },
  },
};

function webhookContext(ctx: FlowContext<any>, input: WebhookInput): WebhookContext {
  return {
    appHandle: ctx.appHandle,
    shop: ctx.shop!,
    topic: input.topic,
    webhookId: input.webhookId,
    eventId: input.eventId,
    triggeredAt: input.triggeredAt,
    apiVersion: input.apiVersion,
    runId: ctx.runId,
    attempt: ctx.attempt,
    signal: ctx.signal,
    log: ctx.log,
    step: ctx.step,
    dispatchFlow: ctx.dispatchFlow,
    get admin() {
      return ctx.admin;
    },
  };
}

function webhookFlow(
  topic: string,
  definition: WebhookDefinition | undefined,
  builtin: DefaultHandler | undefined,
  db: Database,
): FlowDefinition<string, typeof webhookInput> {
  return {
    name: webhookFlowName(topic),
    description: definition?.description ?? `Handles the ${topic} webhook`,
    input: webhookInput,
    concurrency: definition?.concurrency ? { ...definition.concurrency, key: onPayload(definition.concurrency.key) } : null,
    rateLimit: definition?.rateLimit ? { ...definition.rateLimit, key: onPayload(definition.rateLimit.key) } : undefined,
    debounce: definition?.debounce ? { ...definition.debounce, key: onPayload(definition.debounce.key) } : undefined,
    priority: definition?.priority,
    async run(ctx, input) {
      if (!ctx.shop) throw new Error('A webhook run needs a shop');
      const wctx = webhookContext(ctx, input);
      // The default handler is a step: when the app's handler fails and the run is retried, it is not done twice.
      const runDefault = () =>
        builtin ? ctx.step(`mercato:${topic}`, async () => (await builtin.run(wctx, input.payload, db), true)) : undefined;
      if (builtin?.order === 'before') await runDefault();
      if (definition) await definition.handler(wctx, input.payload);
      if (builtin?.order === 'after') await runDefault();
      return { topic, webhookId: input.webhookId };
    },
  };
}

/** A webhook definition's shaping key takes the payload; the flow's takes the run's input (the payload is inside). */
function onPayload(key: ShapingKey | undefined): ShapingKey<WebhookInput> | undefined {
  return key ? (input, tenant) => key(input.payload, tenant) : undefined;
}

/** The internal flows for every handled topic: the app's `webhooks` and the built-in topics. */
export function webhookFlows(config: Pick<ResolvedConfig, 'webhooks'>, db: Database): Record<string, InternalFlow> {
  const topics = new Set<string>([...Object.keys(config.webhooks), ...BUILTIN_TOPICS]);
  const flows: Record<string, InternalFlow> = {};
  for (const topic of topics) {
    const definition = Object.hasOwn(config.webhooks, topic) ? config.webhooks[topic] : undefined;
    const builtin = Object.hasOwn(DEFAULT_HANDLERS, topic) ? DEFAULT_HANDLERS[topic as keyof typeof DEFAULT_HANDLERS] : undefined;
    flows[webhookFlowName(topic)] = { definition: webhookFlow(topic, definition, builtin, db), trigger: WEBHOOK_TRIGGER };
  }
  return flows;
}
