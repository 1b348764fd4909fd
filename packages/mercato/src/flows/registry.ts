/** The registered flows of an app, with their input JSON schemas (computed once). */
import { z } from 'zod';
import type { CronEntry, FlowDefinition, ResolvedConfig } from '../app/types.ts';

export interface RegisteredFlow {
  name: string;
  description?: string;
  definition: FlowDefinition<string, any, any, any>;
  inputSchema: Record<string, unknown>;
  /** Max active runs per (app, shop, flow); null = unlimited. */
  concurrency: number | null;
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
      concurrency: definition.concurrency === undefined ? 1 : definition.concurrency,
    });
  }
  const internalFlows = new Map<string, RegisteredFlow>();
  for (const [key, { definition, trigger }] of Object.entries(internal)) {
    internalFlows.set(key, {
      name: key,
      description: definition.description,
      definition,
      inputSchema: toJsonSchema(definition.input),
      concurrency: definition.concurrency ?? null,
      internalTrigger: trigger,
    });
  }
  return {
    get: (name) => (Object.hasOwn(config.flows, name) ? flows.get(name) : internalFlows.get(name)),
    list: () => [...flows.values()],
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
