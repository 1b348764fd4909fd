/**
 * The HTTP server: request ids, the access log and the security headers of the server's own answers on everything,
 * a 64 KB body limit on every path that has none of its own, `GET /healthz` and `GET /readyz` without auth (health.ts), and under `/api` the
 * session-token check, the optional per-shop rate limit, page gating, a 1 MB body limit, `GET /api/pages` and every
 * capability's router. http/ only mounts routers; the capabilities own them. See docs/admin-api.md and docs/security.md.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { Hono, type MiddlewareHandler } from 'hono';
import type { PageKey, RateLimitsConfig } from '../app/types.ts';
import { sessionAuth } from './auth.ts';
import { createErrorHandler, notFoundHandler } from './errors.ts';
import { bodyLimitOf } from './body.ts';
import { type ReadinessChecks, databaseCheck, healthRouter } from './health.ts';
import { DEFAULT_HTTP_LIMITS, type HttpLimits } from '../app/env.ts';
import { isUnderPrefix, pageGate, pagesBody } from './pages.ts';
import { perShopRateLimit, resolveRateLimits } from './rate-limit.ts';
import { accessLog, apiSecurityHeaders, requestId } from './request.ts';
import type { ApiEnv, ApiRouteGroup, HttpRuntime } from './types.ts';
import { httpTracing } from './tracing.ts';

/** Largest request body accepted under /api (the same figure as the MCP endpoint's limit). */
export const MAX_API_BODY_BYTES = 1_000_000;
/** Largest request body on any path without a limit of its own (the dev preview's POST, unknown paths). */
export const MAX_OTHER_BODY_BYTES = 64 * 1024;
/**
 * Paths whose body limit is set where they are served: /api (below, after authentication), /mcp (mcp/endpoint.ts, after
 * authentication), /webhooks (platform/webhooks.ts, 5 MB) and /routes (routes/, per route). Every other path gets
 * MAX_OTHER_BODY_BYTES. docs/security.md has the table.
 */
export const OWN_BODY_LIMIT_PREFIXES = ['/api', '/mcp', '/webhooks', '/routes'] as const;

const GROUP_PREFIX_RE = /^\/api(\/[A-Za-z0-9._~-]+)+$/;

export interface HttpAppOptions {
  /** Capability routers, mounted at their prefix and gated by their page when set. */
  groups?: ApiRouteGroup[];
  /** Anything else to mount (dev preview, admin UI assets, public routes); runs after the core middleware. */
  extra?: (app: Hono<ApiEnv>) => void;
  /** Middleware run on /api/* after session auth (the tenant is set), e.g. installation on first contact. */
  afterAuth?: MiddlewareHandler<ApiEnv>[];
  /** The app's `rateLimits` (only `api.perShop` is used here; `/mcp` counts per token in mcp/endpoint.ts). Default: off. */
  rateLimits?: RateLimitsConfig;
  /** The checks of `GET /readyz` (health.ts). Default: the database answers. */
  readiness?: ReadinessChecks;
  /** Middleware run first on every request, around everything else (the request metrics of metrics/). */
  observe?: MiddlewareHandler<ApiEnv>;
}

export function createHttpApp(runtime: HttpRuntime, options: HttpAppOptions = {}): Hono<ApiEnv> {
  const { logger } = runtime;
  const groups = options.groups ?? [];
  for (const group of groups) {
    if (!GROUP_PREFIX_RE.test(group.prefix)) throw new Error(`API group prefix must look like /api/<name> (got "${group.prefix}")`);
  }

  const app = new Hono<ApiEnv>();
  app.onError(createErrorHandler(logger));
  app.notFound(notFoundHandler);
  if (runtime.tracing) app.use('*', httpTracing(runtime.tracing));
  if (options.observe) app.use('*', options.observe);
  app.use('*', requestId(), accessLog(logger, { byStatus: runtime.mode !== 'dev' }), apiSecurityHeaders());
  const otherBodyLimit = bodyLimitOf(MAX_OTHER_BODY_BYTES);
  app.use('*', async (c, next) => {
    if (OWN_BODY_LIMIT_PREFIXES.some((prefix) => isUnderPrefix(c.req.path, prefix))) return next();
    return otherBodyLimit(c, next);
  });

  app.route('/', healthRouter({ version: runtime.version, checks: options.readiness ?? { database: databaseCheck(runtime.db) }, logger }));

  const gatedGroups = groups.filter((g): g is ApiRouteGroup & { page: PageKey } => g.page !== undefined);
  const { apiPerShop } = resolveRateLimits(options.rateLimits);
  app.use(
    '/api/*',
    sessionAuth(runtime.platform),
    ...(apiPerShop ? [perShopRateLimit(apiPerShop)] : []),
    pageGate(runtime.config.pages, gatedGroups),
    bodyLimitOf(MAX_API_BODY_BYTES),
    ...(options.afterAuth ?? []),
  );
  app.get('/api/pages', (c) => c.json(pagesBody(runtime.config.pages)));
  for (const group of groups) app.route(group.prefix, group.app);

  options.extra?.(app);
  return app;
}

export interface StartedHttpServer {
  /** Base URL to reach the server, e.g. `http://127.0.0.1:54321`. */
  url: string;
  port: number;
  /** Stops accepting connections and resolves once the server is closed (idle keep-alive sockets are dropped). */
  close(): Promise<void>;
}

export interface StartOptions {
  /** 0 picks a free port. */
  port: number;
  hostname: string;
  /** After this long, connections still busy are cut (default 10 s). */
  closeTimeoutMs?: number;
  /** How the user picks another port, for the message of a port in use (default `--port <n> or PORT`). */
  portSetting?: string;
  /** Timeouts and the connection cap (MERCATO_HTTP_*; default DEFAULT_HTTP_LIMITS). */
  limits?: Pick<HttpLimits, 'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections'>;
}

/** How often Node looks for connections past their headers or request timeout (its default, 30 s, lets them live that much longer). */
export const TIMEOUT_CHECK_INTERVAL_MS = 1000;

/**
 * How long an answer given before its request body was read keeps its connection open for the rest of that body
 * (read and thrown away), and how much of it is read, before the connection is dropped. See lingerThenClose.
 */
export const LINGER_MS = 5000;
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The lingering close of an answer sent while its client is still sending the body (an early 413, a 401 before the
 * body, a handler that never read it). Node would destroy such a socket as soon as the answer is written; the kernel
 * then resets the connection on the client's next segment, and a client that writes before it reads (Node's fetch,
 * and so the official MCP SDK, mid-upload) fails with EPIPE / ECONNRESET and never sees the answer. Instead the answer
 * is followed by a FIN, the rest of the body is read and discarded, and the socket is dropped when the client closes
 * its side, after LINGER_MS, or past LINGER_MAX_BYTES, whichever comes first (what nginx and Apache call a lingering
 * close). Nothing read here is kept: memory does not grow.
 */
const lingering = new WeakSet<Socket>();
function lingerThenClose(socket: Socket, req: IncomingMessage): void {
  if (socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  let read = 0;
  const drop = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(drop, LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', drop);
  // the readers of the body (a WHATWG stream's adapter among them) would keep what arrives: drop them, count and discard
  req.removeAllListeners('data');
  req.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > LINGER_MAX_BYTES) drop();
  });
  req.resume();
  socket.end();
}

/** The port cannot be listened on: in use by another process, or reserved to privileged users. */
export class PortUnavailableError extends Error {
  constructor(
    readonly port: number,
    readonly hostname: string,
    readonly code: 'EADDRINUSE' | 'EACCES',
    portSetting = '--port <n> or PORT',
  ) {
    super(
      code === 'EADDRINUSE'
        ? `cannot listen on ${hostname}:${port}: the port is in use (another mercato process?). Stop that process, or pick another port with ${portSetting} (0 picks a free one)`
        : `cannot listen on ${hostname}:${port}: this user may not open that port (ports below 1024 need privileges). Pick another port with ${portSetting}`,
    );
    this.name = 'PortUnavailableError';
  }
}

export async function startHttpServer(app: Pick<Hono<any>, 'fetch'>, options: StartOptions): Promise<StartedHttpServer> {
  const limits = { ...DEFAULT_HTTP_LIMITS, ...options.limits };
  const server = createAdaptorServer({
    fetch: app.fetch,
    serverOptions: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_INTERVAL_MS, limits.headersTimeoutMs),
    },
  }) as Server;
  // beyond the cap a new connection is closed at once (Node drops it before any request is read)
  server.maxConnections = limits.maxConnections;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      if (error.code === 'EADDRINUSE' || error.code === 'EACCES')
        reject(new PortUnavailableError(options.port, options.hostname, error.code, options.portSetting));
      else reject(error);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(options.port, options.hostname);
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  // While closing, answers say `Connection: close` and each connection is dropped as soon as it falls idle,
  // so close() resolves when the requests in flight are answered rather than when keep-alive times out.
  const inFlight = new Set<ServerResponse>();
  // before the app's listener, which may write a whole answer synchronously
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    if (closing && !res.headersSent) res.setHeader('Connection', 'close');
    // an answer complete before its body: whoever closes this socket next (Node after a `Connection: close` answer,
    // @hono/node-server's drain) lingers instead of destroying it at once (lingerThenClose)
    res.once('prefinish', () => {
      const socket = req.socket;
      if (req.complete || socket.destroyed) return;
      socket.destroySoon = () => lingerThenClose(socket, req);
    });
    inFlight.add(res);
    res.on('close', () => {
      inFlight.delete(res);
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });
  return {
    url: `http://${urlHost(options.hostname)}:${port}`,
    port,
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => server.closeAllConnections(), options.closeTimeoutMs ?? 10_000);
        timer.unref();
        server.close((error) => {
          clearTimeout(timer);
          if (error) reject(error);
          else resolve();
        });
        for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}

/** A host usable in a URL: wildcard binds are reached over loopback; IPv6 literals get brackets. */
function urlHost(hostname: string): string {
  if (hostname === '' || hostname === '0.0.0.0') return '127.0.0.1';
  if (hostname === '::') return '[::1]';
  return hostname.includes(':') ? `[${hostname}]` : hostname;
}
