/** The registered flows of an app, with their input JSON schemas (computed once). */
import { z } from 'zod';
import type { CronEntry, FlowDefinition, ResolvedConfig, ShapingKey } from '../app/types.ts';
import { parseDuration } from '../app/duration.ts';

export interface RegisteredFlow {
  name: string;
  description?: string;
  definition: FlowDefinition<string, any, any, any>;
  inputSchema: Record<string, unknown>;
  /** Max active runs per (app, shop, flow), refused above it (the number form); null = unlimited. */
  concurrency: number | null;
  /** Keyed concurrency and rate limit (the claim enforces them), debounce (the dispatch), priority. */
  shaping: FlowShaping;
  /** Set on internal flows (webhook handlers): not listed, dispatched only with this trigger. */
  internalTrigger?: string;
}

/** A flow the runtime registers itself (e.g. `webhook:<topic>`), next to the app's flows. */
export interface InternalFlow {
  definition: FlowDefinition<string, any, any, any>;
  /** The only trigger that may dispatch it. */
  trigger: string;
}

export interface FlowRegistry {
  get(name: string): RegisteredFlow | undefined;
  list(): RegisteredFlow[];
  /** The internal flows (webhook handlers). */
  internal(): RegisteredFlow[];
  cronsOf(name: string): readonly CronEntry[];
}

export function createFlowRegistry(
  config: Pick<ResolvedConfig, 'flows' | 'crons'>,
  internal: Record<string, InternalFlow> = {},
): FlowRegistry {
  const flows = new Map<string, RegisteredFlow>();
  for (const [key, definition] of Object.entries(config.flows)) {
    flows.set(key, {
      name: key,
      description: definition.description,
      definition,
      inputSchema: toJsonSchema(definition.input),
      // a flow with load shaping waits instead of refusing: no refusing default of 1 unless it asks for a number
      concurrency: definition.concurrency === undefined ? (hasShaping(definition) ? null : 1) : refuseLimit(definition.concurrency),
      shaping: resolveShaping(definition),
    });
  }
  const internalFlows = new Map<string, RegisteredFlow>();
  for (const [key, { definition, trigger }] of Object.entries(internal)) {
    internalFlows.set(key, {
      name: key,
      description: definition.description,
      definition,
      inputSchema: toJsonSchema(definition.input),
      concurrency: refuseLimit(definition.concurrency),
      shaping: resolveShaping(definition),
      internalTrigger: trigger,
    });
  }
  return {
    get: (name) => (Object.hasOwn(config.flows, name) ? flows.get(name) : internalFlows.get(name)),
    list: () => [...flows.values()],
    internal: () => [...internalFlows.values()],
    cronsOf: (name) => config.crons.filter((c) => c.flow === name),
  };
}

function toJsonSchema(schema: z.ZodType): Record<string, unknown> {
  try {
    return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** The load shaping of a flow, resolved (docs/flows.md, "Fairness and load shaping"). */
export interface FlowShaping {
  /** At most `limit` runs execute at once per key; the others wait. */
  concurrency: { limit: number; key: ShapingKey } | null;
  /** At most `limit` executions start per `periodMs` per key. */
  rateLimit: { limit: number; periodMs: number; key: ShapingKey } | null;
  debounce: { periodMs: number; maxWaitMs: number | null; key: ShapingKey } | null;
  /** -100 to 100, default 0. */
  priority: number;
}

/** The default shaping key: the run's shop. */
export const shopKey: ShapingKey = (_input, tenant) => tenant.shop ?? '(global)';

function hasShaping(definition: FlowDefinition<string, any, any, any>): boolean {
  return definition.rateLimit !== undefined || definition.debounce !== undefined;
}

/** Periods in whole milliseconds (a fraction is rounded up). */
const wholeMs = (d: Parameters<typeof parseDuration>[0]) => Math.ceil(parseDuration(d));

function refuseLimit(concurrency: FlowDefinition['concurrency']): number | null {
  return typeof concurrency === 'number' ? concurrency : null;
}

function resolveShaping(definition: FlowDefinition<string, any, any, any>): FlowShaping {
  const c = definition.concurrency;
  const r = definition.rateLimit;
  const d = definition.debounce;
  return {
    concurrency: c !== null && typeof c === 'object' ? { limit: c.limit, key: c.key ?? shopKey } : null,
    rateLimit: r ? { limit: r.limit, periodMs: wholeMs(r.period), key: r.key ?? shopKey } : null,
    debounce: d
      ? { periodMs: wholeMs(d.period), maxWaitMs: d.maxWait === undefined ? null : wholeMs(d.maxWait), key: d.key ?? shopKey }
      : null,
    priority: definition.priority ?? 0,
  };
}

/** True when the claim must check a limit for the flow's runs (they are "gated"). */
export function isGated(shaping: FlowShaping): boolean {
  return shaping.concurrency !== null || shaping.rateLimit !== null;
}

/** A cron entry's key: its flow and schedule (the admin's and the API's name for it). */
export function cronKey(entry: { flow: string; schedule: string }): string {
  return `${entry.flow}:${entry.schedule}`;
}
