/**
 * The one dispatch door: the API, the instance's dispatchFlow, routes, custom pages, ctx.dispatchFlow, MCP, crons and
 * webhooks all come here. It resolves and checks the app handle for every caller, and refuses with the typed errors of
 * flows/errors.ts (FlowNotFoundError, InvalidDispatchError, FlowConcurrencyError) before anything is written.
 */
import { normalizeShopDomain } from '../app/shop.ts';
import type { DispatchOptions, DispatchResult, ResolvedConfig, RetryPolicy } from '../app/types.ts';
import type { Database } from '../db/engine.ts';
import type { Exec, Tenant } from '../db/sql.ts';
import type { RuntimeEvents } from '../events.ts';
import { FlowConcurrencyError, FlowNotFoundError, InvalidDispatchError } from './errors.ts';
import { MAX_TIMER_MS, mergeRetryPolicy } from './policy.ts';
import type { FlowRegistry } from './registry.ts';
import { activeRunIds, debounceRun, debouncedRunId, insertRun, lockFlowKey, recordDeliveryRow, runsWakeUp } from './store/runs.ts';
import { storedKey } from './store/claim.ts';
import { type DeliveryRecord, DuplicateDeliveryError, intakeBatcher } from './intake.ts';
import type { RegisteredFlow } from './registry.ts';
import { MAX_PRIORITY, MIN_PRIORITY, isPriority } from '../app/validate/shaping.ts';
import type { ShapingKey, ShapingTenant } from '../app/types.ts';
import { findBadText } from '../db/text.ts';
import { ATTR, SpanKind, type Tracing, activeTraceId, tenantAttributes } from '../telemetry/tracing.ts';
import type { Trigger } from '../api/types.ts';

/** What made a run: the API contract's (api/types.ts). */
export type { Trigger } from '../api/types.ts';

export interface DispatchRequest {
  /** The app that owns the run: one of the config's apps; undefined means the only app (refused in multi-app mode). */
  appHandle: string | undefined;
  /** null for a global run. */
  shop: string | null;
  flowName: string;
  input?: unknown;
  trigger: Trigger;
  retryPolicy?: Partial<RetryPolicy>;
  /** Overrides the flow's priority (validated: an integer from -100 to 100). */
  priority?: unknown;
  parentRunId?: string;
  /** Runs inside the dispatch transaction once the run row exists; throwing rolls the dispatch back. */
  within?: (exec: Exec, runId: string) => Promise<void>;
  /**
   * A webhook's delivery record, written with the run in the same commit; a duplicate (same webhook id, or event id)
   * gets no run and the dispatch rejects with DuplicateDeliveryError.
   */
  delivery?: DeliveryRecord;
  /** The HTTP request that asked for the run (its X-Request-Id), told in `run.dispatched`; unset outside a request. */
  requestId?: string;
}

export type DispatchFn = (request: DispatchRequest) => Promise<DispatchResult>;

/** Schema issues as the 400 bodies carry them: `{ path: "a.0.b", message, code }` (also used by custom pages). */
export function schemaIssuesBody(
  issues: ReadonlyArray<{ path: PropertyKey[]; message: string; code: string }>,
): Array<{ path: string; message: string; code: string }> {
  return issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message, code: i.code }));
}

const POLICY_KEYS = ['maxAttempts', 'initialIntervalMs', 'backoffCoefficient', 'maxIntervalMs'] as const;

export function validateDispatchPolicy(policy: unknown): Partial<RetryPolicy> | undefined {
  if (policy === undefined || policy === null) return undefined;
  if (typeof policy !== 'object' || Array.isArray(policy))
    throw new InvalidDispatchError('retryPolicy: must be an object', { field: 'retryPolicy' });
  for (const [key, value] of Object.entries(policy)) {
    if (!(POLICY_KEYS as readonly string[]).includes(key))
      throw new InvalidDispatchError(`retryPolicy.${key}: unknown field`, { field: `retryPolicy.${key}` });
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || (key === 'maxAttempts' && !Number.isInteger(value))) {
      throw new InvalidDispatchError(`retryPolicy.${key}: must be a positive ${key === 'maxAttempts' ? 'integer' : 'number'}`, {
        field: `retryPolicy.${key}`,
      });
    }
    if (key.endsWith('Ms') && value > MAX_TIMER_MS) {
      throw new InvalidDispatchError(`retryPolicy.${key}: must be at most ${MAX_TIMER_MS} ms`, { field: `retryPolicy.${key}` });
    }
  }
  return policy as Partial<RetryPolicy>;
}

export interface DispatcherDeps {
  db: Database;
  registry: FlowRegistry;
  config: Pick<ResolvedConfig, 'retryPolicy'>;
  /** The handles of the config's apps: a run is only ever written under one of them. */
  appHandles: readonly string[];
  events?: RuntimeEvents;
  /** A `dispatch <flow>` span per dispatch; its trace context is stored with the run (the run's span continues it). */
  tracing?: Tracing;
}

/** The app a dispatch is for: the named one, or the only app in single-app mode. */
export function resolveAppHandle(appHandles: readonly string[], requested: string | undefined): string {
  if (requested === undefined) {
    if (appHandles.length === 1) return appHandles[0];
    throw new InvalidDispatchError('shopifyApp: required in multi-app mode', { field: 'shopifyApp' });
  }
  if (!appHandles.includes(requested))
    throw new InvalidDispatchError(`shopifyApp: unknown app handle "${requested}"`, { field: 'shopifyApp' });
  return requested;
}

export function createDispatcher(deps: DispatcherDeps): DispatchFn {
  const dispatch = dispatcher(deps);
  const tracing = deps.tracing;
  if (!tracing) return dispatch;
  return (request) =>
    tracing.span(
      `dispatch ${request.flowName}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          ...tenantAttributes({ flow: request.flowName, app: request.appHandle, shop: request.shop }),
          [ATTR.trigger]: request.trigger,
        },
      },
      async (span) => {
        const result = await dispatch(request, tracing.currentContext());
        span.setAttribute(ATTR.runId, result.runId);
        return result;
      },
    );
}

function dispatcher(deps: DispatcherDeps) {
  const wakeUp = runsWakeUp(deps.db);
  // concurrent plain dispatches share one insert statement and one commit
  const intake = intakeBatcher(deps.db.query);
  return async (request: DispatchRequest, traceContext: string | null = null): Promise<DispatchResult> => {
    const appHandle = resolveAppHandle(deps.appHandles, request.appHandle);
    const flow = deps.registry.get(request.flowName);
    if (!flow || (flow.internalTrigger !== undefined && flow.internalTrigger !== request.trigger)) {
      throw new FlowNotFoundError(`Flow "${request.flowName}" is not registered`, request.flowName);
    }
    let shop: string | null = null;
    if (request.shop !== null && request.shop !== undefined) {
      shop = normalizeShopDomain(request.shop);
      if (!shop) throw new InvalidDispatchError(`shop: "${String(request.shop)}" is not a shop domain`, { field: 'shop' });
    }
    // PostgreSQL cannot store a NUL character (or a lone surrogate) in jsonb: a clear 400 instead of a database error.
    const bad = findBadText(request.input ?? {}, 'input');
    if (bad) throw new InvalidDispatchError(`${bad.path}: contains ${bad.what}, which cannot be stored`, { field: bad.path });
    const parsed = await flow.definition.input.safeParseAsync(request.input ?? {});
    if (!parsed.success) {
      throw new InvalidDispatchError(`Invalid input for flow "${flow.name}"`, { issues: schemaIssuesBody(parsed.error.issues) });
    }
    const retryPolicy = mergeRetryPolicy(deps.config.retryPolicy, flow.definition.retryPolicy, validateDispatchPolicy(request.retryPolicy));
    if (request.priority !== undefined && request.priority !== null && !isPriority(request.priority)) {
      throw new InvalidDispatchError(`priority: must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY} (higher runs first)`, {
        field: 'priority',
      });
    }
    const priority = (request.priority as number | undefined | null) ?? flow.shaping.priority;
    const keys = shapingKeys(flow, parsed.data, { shop, appHandle });
    // Store the input as given (defaults are applied again when the run executes), so a retry replays the same request.
    const input = request.input ?? {};
    const tenant: Tenant = { appHandle, shop };
    const newRun = {
      appHandle,
      shop,
      flowName: flow.name,
      trigger: request.trigger,
      input,
      retryPolicy,
      parentRunId: request.parentRunId,
      traceContext,
      priority,
      concurrencyKey: keys.concurrency,
      rateKey: keys.rate,
    };
    const debounce = flow.shaping.debounce && keys.debounce !== null ? { ...flow.shaping.debounce, key: keys.debounce } : null;
    const simple = flow.concurrency === null && !request.within && !(request.delivery && debounce);
    let joined = false;
    const write = async (exec: typeof deps.db.query, solo: boolean, batched = false): Promise<string> => {
      if (!debounce && batched) return intake.insert(newRun, solo, request.delivery);
      if (!debounce) return insertRun(exec, newRun, solo);
      const row = await debounceRun(exec, newRun, debounce);
      joined = row.joined;
      return row.id;
    };
    const runId = await wakeUp.around(
      (solo) =>
        simple
          ? write(deps.db.query, solo, true) // alone, or in the next batch of concurrent dispatches: committed before it returns
          : deps.db.transaction(async (exec) => {
              if (flow.concurrency !== null) {
                await lockFlowKey(exec, tenant, flow.name);
                // a debounced run still waiting is joined, whatever the limit (no new active run)
                const waiting = debounce ? await debouncedRunId(exec, debounce.key) : undefined;
                const active = waiting ? [] : await activeRunIds(exec, tenant, flow.name, flow.concurrency);
                if (active.length >= flow.concurrency) {
                  const message = `Flow "${flow.name}" already has ${active.length} active run(s) for this shop (limit ${flow.concurrency})`;
                  throw new FlowConcurrencyError(message, flow.name, active[0]);
                }
              }
              const id = await write(exec, solo);
              if (request.within) await request.within(exec, id);
              if (request.delivery) {
                if (!(await recordDeliveryRow(exec, request.delivery, tenant, id))) throw new DuplicateDeliveryError();
              }
              return id;
            }),
      !request.delivery, // the batch statement that writes a delivery does not notify: the workers are woken after it
    );
    deps.events?.emit('run.dispatched', {
      runId,
      flow: flow.name,
      shop,
      app: appHandle,
      trigger: request.trigger,
      parentRunId: request.parentRunId ?? null,
      ...(joined ? { joined: true } : {}),
      requestId: request.requestId ?? null,
      traceId: activeTraceId(),
    });
    return joined ? { runId, status: 'pending', joined: true } : { runId, status: 'pending' };
  };
}

/** A shaping key may be this long at most (it is stored with every run of the key). */
export const MAX_SHAPING_KEY_CHARS = 500;

/**
 * The stored keys of a run's shaping rules (keyed concurrency, rate limit, debounce), from the flow's key functions and
 * the run's parsed input. A key function that throws or gives no usable string refuses the dispatch (400, naming the
 * rule): nothing is written.
 */
function shapingKeys(
  flow: RegisteredFlow,
  input: unknown,
  tenant: ShapingTenant,
): { concurrency: string | null; rate: string | null; debounce: string | null } {
  const { shaping } = flow;
  const one = (rule: 'concurrency' | 'rateLimit' | 'debounce', key: ShapingKey | undefined): string | null => {
    if (!key) return null;
    let value: unknown;
    try {
      value = key(input, tenant);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new InvalidDispatchError(`${rule}.key: the flow's key function threw for this input: ${reason.slice(0, 200)}`, {
        field: `${rule}.key`,
      });
    }
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_SHAPING_KEY_CHARS || findBadText(value, 'key')) {
      throw new InvalidDispatchError(
        `${rule}.key: the flow's key function must return a non-empty string of at most ${MAX_SHAPING_KEY_CHARS} characters (got ${typeof value === 'string' ? `${value.length} characters` : typeof value})`,
        { field: `${rule}.key` },
      );
    }
    return storedKey(tenant.appHandle, flow.name, value);
  };
  return {
    concurrency: one('concurrency', shaping.concurrency?.key),
    rate: one('rateLimit', shaping.rateLimit?.key),
    debounce: one('debounce', shaping.debounce?.key),
  };
}

/**
 * The dispatchFlow of user code (the instance, routes, custom pages, ctx.dispatchFlow): DispatchOptions → the one door,
 * with the caller's trigger (and parent run). `shopifyApp` is checked by the dispatcher like every app handle.
 */
export function dispatchFlowFor(
  dispatch: DispatchFn,
  trigger: Trigger,
  defaults: { appHandle?: string; shop?: string | null; parentRunId?: string; requestId?: string } = {},
): (options: DispatchOptions) => Promise<DispatchResult> {
  return (o) =>
    dispatch({
      appHandle: o.shopifyApp ?? defaults.appHandle,
      shop: o.shop !== undefined ? o.shop : (defaults.shop ?? null),
      flowName: o.flowName,
      input: o.input,
      trigger,
      retryPolicy: o.retryPolicy,
      priority: o.priority,
      parentRunId: defaults.parentRunId,
      requestId: defaults.requestId,
    });
}
