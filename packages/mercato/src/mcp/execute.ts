/**
 * Running one tool or resource call: grant check, argument validation, the 30 s time-out and client-disconnect abort,
 * result mapping, error mapping to JSON-RPC codes, and the audit record (written for every outcome).
 */
import type { Database } from '../db/engine.ts';
import { DomainError, InvalidInputError, NotFoundError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { ATTR, SpanKind, type Tracing, activeSpan } from '../telemetry/tracing.ts';
import type { CallContext, ResourceSpec, ToolSpec } from './catalog.ts';
import { covers } from './permissions.ts';
import { RPC, RpcError } from './rpc.ts';
import { type AuditKind, type AuditStatus, createAuditWriter } from './store.ts';
import { type ValidationIssue, preview, validate } from '../app/json-schema.ts';

export interface Caller {
  token: { id: string; appHandle: string; shop: string; permissions: string[] };
  requestId: string;
  /** Aborts when the client goes away. */
  signal: AbortSignal;
}

export interface ExecuteDeps {
  db: Database;
  logger: Logger;
  timeoutMs: number;
  /** A `tools/call <tool>` or `resources/read <uri>` span per call, with the audit status as `mercato.outcome`. */
  tracing?: Tracing;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

/** Spec result mapping: string → text; plain object → formatted text + structuredContent; `content`/`structuredContent` objects pass through. */
export function toToolResult(value: unknown): Record<string, unknown> {
  if (typeof value === 'string') return { content: [{ type: 'text', text: value }] };
  if (isPlainObject(value)) {
    if ('content' in value || 'structuredContent' in value) return value;
    return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value };
  }
  if (value === undefined) return { content: [] };
  const text = JSON.stringify(value, null, 2);
  return { content: [{ type: 'text', text: text ?? String(value) }] };
}

/** Spec MIME resolution: the returned type, then the definition's, then text/plain. */
export function toResourceResult(uri: string, spec: Pick<ResourceSpec, 'mimeType'>, value: unknown): Record<string, unknown> {
  let text: string;
  let mimeType: string | undefined;
  if (typeof value === 'string') text = value;
  else if (isPlainObject(value) && typeof value.text === 'string' && (value.mimeType === undefined || typeof value.mimeType === 'string')) {
    text = value.text;
    mimeType = value.mimeType as string | undefined;
  } else {
    throw new RpcError(RPC.EXECUTION_FAILED, `Resource ${uri} returned neither a string nor { text, mimeType? }`);
  }
  return { contents: [{ uri, mimeType: mimeType ?? spec.mimeType ?? 'text/plain', text }] };
}

/** One issue as the error message says it: the field (JSON Pointer), the rule, and what would be accepted when the rule alone does not say. */
function describeIssue(issue: ValidationIssue): string {
  const where = issue.path || '(root)';
  if (issue.message === 'is required') return `${where} is required (${issue.expected.replace(/ \(required\)$/, '')})`;
  if (issue.message === 'is not an allowed property') return `${where} is not an allowed property (expected ${issue.expected})`;
  return `${where} ${issue.message}`;
}

/**
 * The -32602 answer of arguments that fail the input schema: the message names each field and its rule (a client that
 * shows only the message still tells the model what to fix); `data.issues` has each issue with `path`, `message`,
 * `expected` and `received`. Received values are previews and appear in `data` only, never in the message (which the
 * audit record keeps).
 */
export function invalidArguments(tool: string, issues: readonly ValidationIssue[]): RpcError {
  const summary = issues.map(describeIssue).join('; ');
  return new RpcError(RPC.INVALID_PARAMS, `Invalid arguments for ${tool}: ${summary}`, { issues });
}

type Outcome = { status: AuditStatus; error: RpcError };

/** Maps anything thrown by a capability (or the abort) to a JSON-RPC error and an audit status. */
function outcomeOf(
  error: unknown,
  reason: 'timeout' | 'disconnect' | null,
  what: string,
  timeoutMs: number,
  builtIn: boolean,
  log: () => void,
): Outcome {
  if (reason === 'timeout')
    return { status: 'timeout', error: new RpcError(RPC.EXECUTION_FAILED, `${what} timed out after ${timeoutMs} ms`) };
  if (reason === 'disconnect')
    return { status: 'error', error: new RpcError(RPC.EXECUTION_FAILED, `${what} aborted: the client disconnected`) };
  if (error instanceof RpcError) return { status: error.code === RPC.PERMISSION_DENIED ? 'denied' : 'error', error };
  if (error instanceof DomainError) {
    // invalid input and "not found" are the caller's to fix (-32602); anything else the domain refused is a tool failure
    const code = error instanceof InvalidInputError || error instanceof NotFoundError ? RPC.INVALID_PARAMS : RPC.EXECUTION_FAILED;
    const data = error.details;
    return { status: 'error', error: new RpcError(code, error.message, Object.keys(data).length > 0 ? data : undefined) };
  }
  log();
  if (builtIn) return { status: 'error', error: new RpcError(RPC.EXECUTION_FAILED, `${what} failed with an internal error`) };
  const message = error instanceof Error ? error.message : String(error);
  return { status: 'error', error: new RpcError(RPC.EXECUTION_FAILED, `${what} failed: ${message.slice(0, 500)}`) };
}

export function createExecutor(deps: ExecuteDeps) {
  const writeAudit = createAuditWriter(deps.db);
  async function audit(
    caller: Pick<Caller, 'token' | 'requestId'>,
    kind: AuditKind,
    capability: string,
    required: readonly string[],
    status: AuditStatus,
    error: string | null,
    startedAt: number,
    targetShop: string | null,
  ) {
    try {
      await writeAudit({
        tokenId: caller.token.id,
        appHandle: caller.token.appHandle,
        shop: caller.token.shop,
        kind,
        capability,
        permissions: caller.token.permissions,
        requiredPermissions: required,
        status,
        error,
        durationMs: performance.now() - startedAt,
        requestId: caller.requestId,
        targetShop,
      });
    } catch (err) {
      deps.logger.error({ err, requestId: caller.requestId, tokenId: caller.token.id, capability }, 'could not write the MCP audit record');
    }
    if (deps.tracing) activeSpan()?.setAttribute(ATTR.outcome, status);
  }

  /** Runs `work` under the time-out and the client's signal; the abort wins even when `work` ignores the signal. */
  async function guarded<T>(
    caller: Caller,
    work: (signal: AbortSignal) => Promise<T>,
  ): Promise<{ value?: T; error?: unknown; reason: 'timeout' | 'disconnect' | null }> {
    const controller = new AbortController();
    let reason: 'timeout' | 'disconnect' | null = null;
    let onAbort: () => void = () => {};
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(new Error('aborted'));
    });
    aborted.catch(() => {});
    const stop = (why: 'timeout' | 'disconnect') => {
      if (reason) return;
      reason = why;
      controller.abort(new Error(why === 'timeout' ? `timed out after ${deps.timeoutMs} ms` : 'client disconnected'));
      onAbort();
    };
    const timer = setTimeout(() => stop('timeout'), deps.timeoutMs);
    const onDisconnect = () => stop('disconnect');
    if (caller.signal.aborted) stop('disconnect');
    else caller.signal.addEventListener('abort', onDisconnect, { once: true });
    try {
      const value = await Promise.race([Promise.resolve().then(() => work(controller.signal)), aborted]);
      return { value, reason: null };
    } catch (error) {
      return { error, reason };
    } finally {
      clearTimeout(timer);
      caller.signal.removeEventListener('abort', onDisconnect);
    }
  }

  type RunArgs<T> = [
    caller: Caller,
    kind: 'tool' | 'resource',
    name: string,
    spec: (ToolSpec | ResourceSpec) | undefined,
    work: (ctx: CallContext) => Promise<T> | T,
    options?: { prepare?: () => void; targetShop?: (ctx: CallContext) => string | null },
  ];

  function run<T>(...args: RunArgs<T>): Promise<T> {
    const tracing = deps.tracing;
    if (!tracing) return runCall(...args);
    const [caller, kind, name] = args;
    const method = kind === 'tool' ? 'tools/call' : 'resources/read';
    const attributes = {
      'mcp.method.name': method,
      [kind === 'tool' ? 'gen_ai.tool.name' : 'mcp.resource.uri']: name,
      [ATTR.app]: caller.token.appHandle,
      [ATTR.shop]: caller.token.shop,
    };
    return tracing.span(`${method} ${name}`, { kind: SpanKind.SERVER, attributes }, () => runCall(...args));
  }

  async function runCall<T>(...[caller, kind, name, spec, work, options = {}]: RunArgs<T>): Promise<T> {
    const startedAt = performance.now();
    const what = `${kind === 'tool' ? 'Tool' : 'Resource'} ${name}`;
    if (!spec) {
      await audit(caller, kind, name, [], 'error', `unknown ${kind}`, startedAt, caller.token.shop);
      throw new RpcError(RPC.INVALID_PARAMS, `Unknown ${kind}: ${name}`);
    }
    const required = spec.requiredPermissions;
    if (!covers(caller.token.permissions, required)) {
      const missing = required.filter((p) => !caller.token.permissions.includes(p));
      await audit(caller, kind, name, required, 'denied', `missing ${missing.join(', ')}`, startedAt, caller.token.shop);
      throw new RpcError(RPC.PERMISSION_DENIED, `Permission denied: ${what} requires ${missing.join(', ')}`, {
        requiredPermissions: required,
        missingPermissions: missing,
      });
    }
    let target: string | null = caller.token.shop;
    const outcome = await guarded(caller, async (signal) => {
      const ctx: CallContext = {
        appHandle: caller.token.appHandle,
        shop: caller.token.shop,
        tokenId: caller.token.id,
        permissions: [...caller.token.permissions],
        signal,
        db: deps.db,
        requestId: caller.requestId,
      };
      options.prepare?.();
      if (options.targetShop) target = options.targetShop(ctx);
      return work(ctx);
    });
    if (outcome.reason === null && outcome.error === undefined) {
      await audit(caller, kind, name, required, 'ok', null, startedAt, target);
      return outcome.value as T;
    }
    const { status, error } = outcomeOf(outcome.error, outcome.reason, what, deps.timeoutMs, spec.builtIn, () =>
      deps.logger.error({ err: outcome.error, requestId: caller.requestId, capability: name }, 'MCP capability failed'),
    );
    await audit(caller, kind, name, required, status, error.message, startedAt, target);
    throw error;
  }

  return {
    /**
     * Audits a request refused with HTTP 403 for the token's state (disabled, revoked, expired, app gone): what it asked
     * for (`target`, from the body) and why (`reason`, the answer's message; never the secret). Never throws.
     */
    async refused(
      token: Caller['token'],
      requestId: string,
      target: { kind: AuditKind; capability: string; requiredPermissions: readonly string[] },
      reason: string,
      startedAt: number,
    ): Promise<void> {
      await audit(
        { token, requestId },
        target.kind,
        target.capability,
        target.requiredPermissions,
        'refused',
        reason,
        startedAt,
        token.shop,
      );
    },
    async callTool(caller: Caller, tool: ToolSpec | undefined, name: string, rawArgs: unknown): Promise<Record<string, unknown>> {
      const args = rawArgs === undefined ? {} : rawArgs;
      return run(caller, 'tool', name, tool, async (ctx) => toToolResult(await tool!.run(ctx, args as Record<string, unknown>)), {
        prepare() {
          if (!isPlainObject(args)) {
            const issue = {
              path: '',
              message: 'must be object',
              expected: 'object',
              received: Array.isArray(args) ? 'array' : preview(args),
            };
            throw new RpcError(RPC.INVALID_PARAMS, `Invalid arguments for ${name}: arguments must be an object`, { issues: [issue] });
          }
          const issues = validate(tool!.inputSchema, args);
          if (issues.length > 0) throw invalidArguments(name, issues);
        },
        targetShop: tool?.targetShop ? (ctx) => tool.targetShop!(ctx, args as Record<string, unknown>) : undefined,
      });
    },
    async readResource(caller: Caller, resource: ResourceSpec | undefined, uri: string): Promise<Record<string, unknown>> {
      return run(caller, 'resource', uri, resource, async (ctx) => toResourceResult(uri, resource!, await resource!.read(ctx)));
    },
  };
}

export type Executor = ReturnType<typeof createExecutor>;
