/**
 * The Admin GraphQL client of one tenant (app, shop). `request()` returns `data` and:
 * - waits and retries when the platform answers HTTP 200 with a `THROTTLED` error, for as long as the cost extension
 *   says the bucket needs to hold the requested cost (`(requested - available) / restoreRate` seconds);
 *   each such wait is a `throttled` span event, an `admin.throttled` runtime event and, for `ctx.admin`, a `warn` line
 *   in the run's logs (docs/platform.md, "Throttling");
 * - retries HTTP 429, 5xx and network failures with exponential backoff, honouring `Retry-After`;
 * - honours the caller's AbortSignal (and the client's own, e.g. the run's) during requests and waits;
 * - throws AdminGraphqlError for GraphQL errors, AdminHttpError for other HTTP failures, NotInstalledError without an
 *   active installation.
 * `raw()` sends once and returns `{ status, body }` untouched (the MCP GraphQL tool passes errors back as they are).
 */
import type { AdminGraphqlClient, AdminRawResponse, AdminRequestOptions, FlowLogger } from '../app/types.ts';
import { SINGLE_APP_HANDLE } from '../app/platform.ts';
import type { RuntimeEvents } from '../events.ts';
import type { Logger } from '../logger.ts';
import { ATTR, type Span, SpanKind, type Tracing } from '../telemetry/tracing.ts';
import { AdminGraphqlError, AdminHttpError, AdminThrottledError, type GraphqlErrorEntry, type QueryCost } from './errors.ts';
import { adminGraphqlUrl } from './origin.ts';

export interface AdminRetryOptions {
  /** Retries of HTTP 429, 5xx and network failures. Default 4. */
  maxRetries: number;
  /** First backoff delay; doubled each retry. Default 500 ms. */
  initialDelayMs: number;
  /** Upper bound of a backoff delay (not of Retry-After). Default 30 s. */
  maxDelayMs: number;
  /** Waits for a THROTTLED answer before giving up. Default 10. */
  maxThrottleRetries: number;
  /** Time limit of one HTTP attempt. Default 30 s. */
  timeoutMs: number;
}

export const DEFAULT_ADMIN_RETRY: Readonly<AdminRetryOptions> = Object.freeze({
  maxRetries: 4,
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  maxThrottleRetries: 10,
  timeoutMs: 30_000,
});

export type RequestOptions = AdminRequestOptions;
export type RawResponse = AdminRawResponse;

export interface AdminClientOptions {
  shop: string;
  apiVersion: string;
  platformOrigin?: string;
  /** Resolves the access token for each request (throws NotInstalledError when there is none). */
  accessToken: () => Promise<string>;
  /** Aborts every request of this client (for `ctx.admin`: the run's signal). */
  signal?: AbortSignal;
  retry?: Partial<AdminRetryOptions>;
  logger?: Logger;
  /** An `admin graphql` client span per request()/raw() call (docs/tracing.md). */
  tracing?: Tracing;
  /** The app handle of the tenant, named in `admin.throttled` (default: `default`, the handle of a one-app config). */
  app?: string;
  /** Told of each throttle wait (`admin.throttled`), before the client waits. */
  events?: RuntimeEvents;
  /** The run this client serves (`ctx.admin`): each throttle wait is a `warn` line in its logs, and its event names it. */
  run?: AdminClientRun;
}

/** The run a client serves: its id, its flow, and the run's logger (ctx.log). */
export interface AdminClientRun {
  runId: string;
  flow: string;
  log: Pick<FlowLogger, 'warn'>;
}

/** One wait for the shop's query-cost budget. */
export interface AdminThrottleWait {
  waitMs: number;
  /** The cost the request asked for, and what the bucket had when it answered (null when the answer did not say). */
  requestedCost: number | null;
  availableCost: number | null;
  /** The 1-based attempt of the request that was throttled. */
  attempt: number;
}

/** The run log line of a throttle wait: `Admin GraphQL throttled: waiting 1.2 s for the shop's query cost budget (requested 120, available 30)`. */
export function throttleLogMessage(wait: Pick<AdminThrottleWait, 'waitMs' | 'requestedCost' | 'availableCost'>): string {
  const costs =
    wait.requestedCost !== null || wait.availableCost !== null
      ? ` (requested ${wait.requestedCost ?? 'unknown'}, available ${wait.availableCost ?? 'unknown'})`
      : '';
  return `Admin GraphQL throttled: waiting ${(wait.waitMs / 1000).toFixed(1)} s for the shop's query cost budget${costs}`;
}

/** Extra time added to a computed throttle wait, so the bucket has surely refilled. */
const THROTTLE_MARGIN_MS = 50;

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** `Retry-After` in ms: delta seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** How long until the bucket holds the requested cost, per the cost extension; undefined when it cannot tell. */
export function throttleWaitMs(cost: QueryCost | undefined): number | undefined {
  const status = cost?.throttleStatus;
  const requested = cost?.requestedQueryCost;
  if (!status || typeof requested !== 'number' || !(status.restoreRate > 0)) return undefined;
  const missing = Math.max(0, requested - status.currentlyAvailable);
  return Math.ceil((missing / status.restoreRate) * 1000) + THROTTLE_MARGIN_MS;
}

function isThrottled(body: { errors?: unknown }): boolean {
  return Array.isArray(body.errors) && body.errors.some((e) => (e as GraphqlErrorEntry)?.extensions?.code === 'THROTTLED');
}

export class AdminClient implements AdminGraphqlClient {
  readonly shop: string;
  readonly apiVersion: string;
  private readonly retry: AdminRetryOptions;

  constructor(private readonly options: AdminClientOptions) {
    this.shop = options.shop;
    this.apiVersion = options.apiVersion;
    this.retry = { ...DEFAULT_ADMIN_RETRY, ...options.retry };
  }

  private signalFor(signal?: AbortSignal): AbortSignal | undefined {
    const signals = [this.options.signal, signal].filter((s): s is AbortSignal => s !== undefined);
    return signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
  }

  private async send(query: string, options: RequestOptions, signal: AbortSignal | undefined): Promise<Response> {
    const token = await this.options.accessToken();
    const timeout = AbortSignal.timeout(this.retry.timeoutMs);
    const body: Record<string, unknown> = { query, variables: options.variables ?? {} };
    if (options.operationName) body.operationName = options.operationName;
    return fetch(adminGraphqlUrl(this.shop, options.apiVersion ?? this.apiVersion, this.options.platformOrigin), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-shopify-access-token': token },
      body: JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  }

  private backoff(retry: number): number {
    const base = Math.min(this.retry.maxDelayMs, this.retry.initialDelayMs * 2 ** retry);
    return Math.min(this.retry.maxDelayMs, Math.round(base * (0.8 + Math.random() * 0.4)));
  }

  private traced<T>(options: RequestOptions, fn: (span?: Span) => Promise<T>): Promise<T> {
    const tracing = this.options.tracing;
    if (!tracing) return fn();
    const attributes: Record<string, string> = { [ATTR.shop]: this.shop, 'http.request.method': 'POST' };
    if (options.operationName) attributes['graphql.operation.name'] = options.operationName;
    return tracing.span('admin graphql', { kind: SpanKind.CLIENT, attributes }, fn);
  }

  /** Sends a query or mutation and returns its `data`. */
  request<T = any>(query: string, options: RequestOptions = {}): Promise<T> {
    return this.traced(options, (span) => this.requestWithRetries<T>(query, options, span));
  }

  private async requestWithRetries<T>(query: string, options: RequestOptions, span: Span | undefined): Promise<T> {
    const signal = this.signalFor(options.signal);
    let retries = 0;
    let throttles = 0;
    let attempt = 0;
    for (;;) {
      signal?.throwIfAborted();
      attempt++;
      let res: Response;
      try {
        res = await this.send(query, options, signal);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (!(error instanceof TypeError || (error as Error)?.name === 'TimeoutError')) throw error; // NotInstalledError, secrets errors
        if (retries >= this.retry.maxRetries) {
          throw new AdminHttpError(
            this.shop,
            null,
            null,
            `Admin API request to ${this.shop} failed after ${retries + 1} attempts: ${(error as Error).message}`,
          );
        }
        await sleep(this.backoff(retries++), signal);
        continue;
      }
      const text = await res.text();
      span?.setAttribute('http.response.status_code', res.status);
      if (res.status === 429 || res.status >= 500) {
        if (retries >= this.retry.maxRetries) throw new AdminHttpError(this.shop, res.status, parseBody(text));
        const delay = retryAfterMs(res.headers.get('retry-after')) ?? this.backoff(retries);
        retries++;
        span?.addEvent('retry', { 'http.response.status_code': res.status, 'mercato.retry.delay_ms': delay });
        this.options.logger?.debug({ shop: this.shop, status: res.status, delayMs: delay }, 'Admin API retry');
        await sleep(delay, signal);
        continue;
      }
      const body = parseBody(text);
      if (!res.ok) throw new AdminHttpError(this.shop, res.status, body);
      if (typeof body !== 'object' || body === null)
        throw new AdminHttpError(this.shop, res.status, body, `Admin API answer from ${this.shop} is not a JSON object`);
      const payload = body as { data?: unknown; errors?: unknown; extensions?: Record<string, unknown> };
      if (isThrottled(payload)) {
        const cost = payload.extensions?.cost as QueryCost | undefined;
        const errors = payload.errors as GraphqlErrorEntry[];
        if (cost && typeof cost.requestedQueryCost === 'number' && cost.requestedQueryCost > cost.throttleStatus?.maximumAvailable) {
          throw new AdminGraphqlError(this.shop, errors, null, payload.extensions); // can never fit in the bucket
        }
        if (throttles >= this.retry.maxThrottleRetries) throw new AdminThrottledError(this.shop, errors, payload.extensions, throttles + 1);
        const delay = throttleWaitMs(cost) ?? this.backoff(throttles);
        throttles++;
        span?.addEvent('throttled', { 'mercato.retry.delay_ms': delay });
        this.options.logger?.debug({ shop: this.shop, delayMs: delay, cost }, 'Admin API throttled; waiting');
        this.throttled({
          waitMs: delay,
          requestedCost: finite(cost?.requestedQueryCost),
          availableCost: finite(cost?.throttleStatus?.currentlyAvailable),
          attempt,
        });
        await sleep(delay, signal);
        continue;
      }
      if (Array.isArray(payload.errors) && payload.errors.length > 0) {
        throw new AdminGraphqlError(this.shop, payload.errors as GraphqlErrorEntry[], payload.data ?? null, payload.extensions);
      }
      return payload.data as T;
    }
  }

  /** A throttle wait: the run's log line (never awaited: its writes never reject) and the `admin.throttled` event. */
  private throttled(wait: AdminThrottleWait): void {
    const { run, events } = this.options;
    if (run) {
      try {
        void run.log.warn(throttleLogMessage(wait), { ...wait }).catch(() => {});
      } catch {
        // a run logger never throws; if one did, the request still waits and goes on
      }
    }
    events?.emit('admin.throttled', {
      runId: run?.runId ?? null,
      flow: run?.flow ?? null,
      shop: this.shop,
      app: this.options.app ?? SINGLE_APP_HANDLE,
      ...wait,
    });
  }

  /** Sends once and returns the status and the body as the platform answered (no retries, no error mapping). */
  raw(query: string, options: RequestOptions = {}): Promise<RawResponse> {
    return this.traced(options, (span) => this.rawOnce(query, options, span));
  }

  private async rawOnce(query: string, options: RequestOptions, span: Span | undefined): Promise<RawResponse> {
    const signal = this.signalFor(options.signal);
    let res: Response;
    try {
      res = await this.send(query, options, signal);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (error instanceof TypeError || (error as Error)?.name === 'TimeoutError') {
        throw new AdminHttpError(this.shop, null, null, `Admin API request to ${this.shop} failed: ${(error as Error).message}`);
      }
      throw error;
    }
    span?.setAttribute('http.response.status_code', res.status);
    return { status: res.status, body: parseBody(await res.text()) };
  }
}

function finite(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
