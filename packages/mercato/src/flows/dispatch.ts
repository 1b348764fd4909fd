/** The one dispatch function: API, instance.dispatchFlow, crons, MCP, webhooks and ctx.dispatchFlow all come here. */
import { normalizeShopDomain } from '../app/shop.ts';
import type { DispatchResult, ResolvedConfig, RetryPolicy } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { Exec, Tenant } from '../db/sql.ts';
import type { RuntimeEvents } from '../events.ts';
import { BadRequestError, ConflictError, NotFoundError } from '../http/errors.ts';
import { MAX_TIMER_MS, mergeRetryPolicy } from './policy.ts';
import type { FlowRegistry } from './registry.ts';
import { activeRunIds, insertRun, lockFlowKey, notifyRuns } from './store.ts';
import { findBadText } from '../db/text.ts';

export type Trigger = 'api' | 'dispatch' | 'cron' | 'mcp' | 'webhook' | 'flow' | 'route' | 'page';

export interface DispatchRequest {
  appHandle: string;
  /** null for a global run. */
  shop: string | null;
  flowName: string;
  input?: unknown;
  trigger: Trigger;
  retryPolicy?: Partial<RetryPolicy>;
  parentRunId?: string;
  /** Runs inside the dispatch transaction once the run row exists (webhook dedupe); throwing rolls the dispatch back. */
  within?: (exec: Exec, runId: string) => Promise<void>;
}

export type DispatchFn = (request: DispatchRequest) => Promise<DispatchResult>;

/** Schema issues as the 400 bodies carry them: `{ path: "a.0.b", message, code }` (also used by custom pages). */
export function schemaIssuesBody(issues: ReadonlyArray<{ path: PropertyKey[]; message: string; code: string }>): Array<{ path: string; message: string; code: string }> {
  return issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message, code: i.code }));
}

const POLICY_KEYS = ['maxAttempts', 'initialIntervalMs', 'backoffCoefficient', 'maxIntervalMs'] as const;

export function validateDispatchPolicy(policy: unknown): Partial<RetryPolicy> | undefined {
  if (policy === undefined || policy === null) return undefined;
  if (typeof policy !== 'object' || Array.isArray(policy)) throw new BadRequestError('retryPolicy: must be an object', { field: 'retryPolicy' });
  for (const [key, value] of Object.entries(policy)) {
    if (!(POLICY_KEYS as readonly string[]).includes(key)) throw new BadRequestError(`retryPolicy.${key}: unknown field`, { field: `retryPolicy.${key}` });
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || (key === 'maxAttempts' && !Number.isInteger(value))) {
      throw new BadRequestError(`retryPolicy.${key}: must be a positive ${key === 'maxAttempts' ? 'integer' : 'number'}`, { field: `retryPolicy.${key}` });
    }
    if (key.endsWith('Ms') && value > MAX_TIMER_MS) {
      throw new BadRequestError(`retryPolicy.${key}: must be at most ${MAX_TIMER_MS} ms`, { field: `retryPolicy.${key}` });
    }
  }
  return policy as Partial<RetryPolicy>;
}

export function createDispatcher(deps: { db: Database; registry: FlowRegistry; config: Pick<ResolvedConfig, 'retryPolicy'>; events?: RuntimeEvents }): DispatchFn {
  return async (request) => {
    const flow = deps.registry.get(request.flowName);
    if (!flow || (flow.internalTrigger !== undefined && flow.internalTrigger !== request.trigger)) throw new NotFoundError(`Flow "${request.flowName}" is not registered`);
    let shop: string | null = null;
    if (request.shop !== null && request.shop !== undefined) {
      shop = normalizeShopDomain(request.shop);
      if (!shop) throw new BadRequestError(`shop: "${String(request.shop)}" is not a shop domain`, { field: 'shop' });
    }
    // PostgreSQL cannot store a NUL character (or a lone surrogate) in jsonb: a clear 400 instead of a database error.
    const bad = findBadText(request.input ?? {}, 'input');
    if (bad) throw new BadRequestError(`${bad.path}: contains ${bad.what}, which cannot be stored`, { field: bad.path });
    const parsed = await flow.definition.input.safeParseAsync(request.input ?? {});
    if (!parsed.success) {
      throw new BadRequestError(`Invalid input for flow "${flow.name}"`, {
        issues: schemaIssuesBody(parsed.error.issues),
      });
    }
    const retryPolicy = mergeRetryPolicy(deps.config.retryPolicy, flow.definition.retryPolicy, validateDispatchPolicy(request.retryPolicy));
    // Store the input as given (defaults are applied again when the run executes), so a retry replays the same request.
    const input = request.input ?? {};
    const tenant: Tenant = { appHandle: request.appHandle, shop };
    const runId = await deps.db.transaction(async (exec) => {
      if (flow.concurrency !== null) {
        await lockFlowKey(exec, tenant, flow.name);
        const active = await activeRunIds(exec, tenant, flow.name, flow.concurrency);
        if (active.length >= flow.concurrency) {
          throw new ConflictError(`Flow "${flow.name}" already has ${active.length} active run(s) for this shop (limit ${flow.concurrency})`, {
            existingRunId: active[0],
          });
        }
      }
      const id = await insertRun(exec, { appHandle: request.appHandle, shop, flowName: flow.name, trigger: request.trigger, input, retryPolicy, parentRunId: request.parentRunId });
      if (request.within) await request.within(exec, id);
      await notifyRuns(exec, id);
      return id;
    });
    deps.events?.emit('run.dispatched', { runId, flow: flow.name, shop, app: request.appHandle, trigger: request.trigger, parentRunId: request.parentRunId ?? null });
    return { runId, status: 'pending' };
  };
}
