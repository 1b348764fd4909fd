/**
 * `POST /mcp`: the HTTP side of the endpoint, in this order — endpoint switch (404 when `mcp.enabled` is false, before any
 * token work), method (405), Origin (403), MCP-Protocol-Version (400), declared size (413), bearer token (401/403), the
 * optional per-token rate limit (429 with Retry-After), body read with the 1,000,000-byte limit counted while streaming
 * (413), JSON and JSON-RPC shape (400 + -32600), then the method (HTTP 200, result or JSON-RPC error). While the database
 * cannot be reached the answer is 503 with Retry-After (logged once at warn); anything else unexpected is a generic 500.
 * Every answer carries `MCP-Protocol-Version: 2025-11-25`.
 */
import type { Context } from 'hono';
import type { RateLimit } from '../app/types.ts';
import { databaseUnavailableReason } from '../db/unavailable.ts';
import { errorMessage, eventMs, type RuntimeEvents } from '../events.ts';
import { unavailableResponse } from '../http/errors.ts';
import { TokenBuckets, describeLimit } from '../http/rate-limit.ts';
import type { ApiEnv } from '../http/types.ts';
import type { Logger } from '../logger.ts';
import { activeTraceId } from '../telemetry/tracing.ts';
import type { McpCatalog } from './catalog.ts';
import type { Caller } from './execute.ts';
import type { AuditKind } from './store.ts';
import { type ProtocolDeps, handleRequest } from './protocol.ts';
import {
  MAX_REQUEST_BYTES,
  PROTOCOL_HEADER,
  PROTOCOL_VERSION,
  RPC,
  type RequestId,
  RpcError,
  classify,
  rpcError,
  rpcResult,
} from './rpc.ts';
import type { TokenService } from './tokens.ts';

export interface EndpointDeps extends ProtocolDeps {
  enabled: boolean;
  tokens: Pick<TokenService, 'authenticate'>;
  /** Origins of the configured app URLs (HOST / PLATFORM_APP_URL / appUrl). */
  appOrigins: ReadonlySet<string>;
  logger: Logger;
  /** Told about every answered request (runtime.events). */
  events?: RuntimeEvents;
  /** Requests per MCP token (`rateLimits.mcp.perToken`); undefined = no limit. */
  rateLimit?: RateLimit;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
const isLoopback = (hostname: string) => LOOPBACK.has(hostname.toLowerCase()) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);

function hostnameOf(host: string | undefined): string | null {
  if (!host) return null;
  try {
    return new URL(`http://${host}`).hostname;
  } catch {
    return null;
  }
}

/**
 * An Origin is ours when it is the origin of a configured app URL, or when both it and the Host the request came to
 * are loopback (local development and local inspectors). Anything else, `null` included, is foreign.
 */
export function originAllowed(origin: string, host: string | undefined, appOrigins: ReadonlySet<string>): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin !== 'null' && appOrigins.has(url.origin)) return true;
  const requestHost = hostnameOf(host);
  return isLoopback(url.hostname) && requestHost !== null && isLoopback(requestHost);
}

/** Reads the body, counting bytes as they arrive; null once the limit is passed (the rest is not read). */
async function readLimited(request: Request, limit: number): Promise<string | null> {
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // not cancel(): the rest of the body is left to the server's lingering close (http/server.ts), so the 413 reaches
      // a client still sending instead of a reset
      reader.releaseLock();
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** What a refused request asked for: the tool or resource of a call, else the JSON-RPC method (kind `request`). */
export function refusedTarget(
  text: string | null,
  catalog: Pick<McpCatalog, 'tools' | 'resources'>,
): { kind: AuditKind; capability: string; requiredPermissions: readonly string[] } {
  let body: unknown;
  try {
    body = text === null ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  const message = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const method = typeof message.method === 'string' && message.method !== '' ? message.method.slice(0, 100) : null;
  const params = typeof message.params === 'object' && message.params !== null ? (message.params as Record<string, unknown>) : {};
  if (method === 'tools/call' && typeof params.name === 'string' && params.name !== '') {
    return { kind: 'tool', capability: params.name, requiredPermissions: catalog.tools.get(params.name)?.requiredPermissions ?? [] };
  }
  if (method === 'resources/read' && typeof params.uri === 'string' && params.uri !== '') {
    return { kind: 'resource', capability: params.uri, requiredPermissions: catalog.resources.get(params.uri)?.requiredPermissions ?? [] };
  }
  const capability =
    method ?? (text === null ? '(body over the size limit)' : Array.isArray(body) ? '(batch)' : '(not a JSON-RPC request)');
  return { kind: 'request', capability, requiredPermissions: [] };
}

export function createEndpoint(deps: EndpointDeps) {
  const headers = (extra: Record<string, string> = {}) => ({ [PROTOCOL_HEADER]: PROTOCOL_VERSION, ...extra });
  const plain = (c: Context, status: 400 | 401 | 403 | 404 | 405 | 413 | 429 | 500, body: unknown, extra?: Record<string, string>) =>
    c.json(body, status, headers(extra));
  const buckets = deps.rateLimit ? new TokenBuckets(deps.rateLimit) : undefined;
  const limitMessage = deps.rateLimit ? `Rate limit exceeded: this token may make ${describeLimit(deps.rateLimit)}; retry later` : '';
  const invalid = (c: Context, id: RequestId | null, message: string) => c.json(rpcError(id, RPC.INVALID_REQUEST, message), 400, headers());
  const tooLarge = (c: Context) =>
    plain(c, 413, { error: `Request body must be at most ${MAX_REQUEST_BYTES} bytes` }, { Connection: 'close' });

  async function serve(c: Context<ApiEnv>): Promise<Response> {
    if (!deps.enabled) return plain(c, 404, { error: 'Not found' });
    if (c.req.method !== 'POST')
      return plain(c, 405, { error: 'Method not allowed: the MCP endpoint answers POST only' }, { Allow: 'POST' });
    const origin = c.req.header('origin');
    if (origin !== undefined && !originAllowed(origin, c.req.header('host'), deps.appOrigins))
      return plain(c, 403, { error: 'Origin not allowed' });
    const version = c.req.header(PROTOCOL_HEADER);
    if (version !== undefined && version.trim() !== PROTOCOL_VERSION) {
      return invalid(c, null, `Unsupported ${PROTOCOL_HEADER} "${version.slice(0, 40)}" (this server speaks ${PROTOCOL_VERSION})`);
    }
    const declared = c.req.header('content-length');
    if (declared !== undefined && Number(declared) > MAX_REQUEST_BYTES) return tooLarge(c);

    const authStartedAt = performance.now();
    const auth = await deps.tokens.authenticate(c.req.header('authorization'));
    if (!auth.ok) {
      if (auth.status === 403) {
        // the secret was right but the token may not be used: audit what was asked for and why it was refused
        const text = await readLimited(c.req.raw, MAX_REQUEST_BYTES).catch(() => null);
        const target = refusedTarget(text, deps.catalog);
        await deps.executor.refused(auth.token, c.get('requestId'), target, auth.message, authStartedAt);
        return plain(c, 403, { error: auth.message });
      }
      return plain(c, 401, { error: auth.message }, { 'WWW-Authenticate': 'Bearer realm="mcp", error="invalid_token"' });
    }
    const taken = buckets?.take(auth.token.id);
    if (taken && !taken.ok) {
      const retryAfterSeconds = taken.retryAfterSeconds;
      return plain(c, 429, { retryAfterSeconds, error: limitMessage }, { 'Retry-After': String(retryAfterSeconds) });
    }

    // with a Content-Length (checked above; Node reads no more than it) the body is read straight from the Node
    // request (@hono/node-server's direct path, no WHATWG stream); a chunked one is counted while it streams
    const text =
      declared !== undefined && c.req.header('transfer-encoding') === undefined
        ? await c.req.raw.text()
        : await readLimited(c.req.raw, MAX_REQUEST_BYTES);
    if (text === null) return tooLarge(c);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return invalid(c, null, 'The body is not valid JSON');
    }
    const message = classify(body);
    if (message.kind === 'invalid') return invalid(c, message.id, message.message);
    if (message.kind === 'accepted') return c.body(null, 202, headers());

    const { request } = message;
    const caller: Caller = { token: auth.token, requestId: c.get('requestId'), signal: c.req.raw.signal };
    const startedAt = performance.now();
    const answered = (ok: boolean, error?: unknown) => {
      const target =
        request.method === 'tools/call' ? request.params.name : request.method === 'resources/read' ? request.params.uri : null;
      deps.events?.emit('mcp.call', {
        method: request.method,
        target: typeof target === 'string' ? target.slice(0, 200) : null,
        tokenId: auth.token.id,
        app: auth.token.appHandle,
        shop: auth.token.shop,
        status: ok ? 'ok' : 'error',
        durationMs: eventMs(performance.now() - startedAt),
        error: ok ? null : errorMessage(error),
        requestId: caller.requestId ?? null,
        traceId: activeTraceId(),
      });
    };
    try {
      const result = await handleRequest(deps, caller, request);
      answered(true);
      return c.json(rpcResult(request.id, result), 200, headers());
    } catch (error) {
      answered(false, error);
      if (error instanceof RpcError) return c.json(rpcError(request.id, error.code, error.message, error.data), 200, headers());
      throw error;
    }
  }

  return async (c: Context<ApiEnv>): Promise<Response> => {
    try {
      return await serve(c);
    } catch (error) {
      const unavailable = databaseUnavailableReason(error);
      if (unavailable !== undefined) return unavailableResponse(c, deps.logger, unavailable, headers());
      const requestId = c.get('requestId');
      deps.logger.error({ err: error, requestId }, 'unhandled error in the MCP endpoint');
      return plain(c, 500, { error: 'Internal server error', requestId });
    }
  };
}
