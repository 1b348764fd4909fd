/**
 * The one place that maps errors to responses (docs/admin-api.md, "Errors"). Domain code throws the domain errors of
 * src/errors.ts (no status); STATUS_OF below gives each class its status and the body is `{ ...details, error }`. The
 * HTTP layer's own errors (401 with its headers, 413, 429) are HttpErrors. An error that says the database cannot be
 * reached (db/unavailable.ts) is a 503 with `Retry-After`, logged once at warn without a stack. Anything else is logged
 * with the request id and answered with a generic 500 that leaks neither the message nor the stack.
 */
import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { DATABASE_RETRY_AFTER_SECONDS, databaseUnavailableReason } from '../db/unavailable.ts';
import { ConflictError, DomainError, ForbiddenError, InvalidInputError, NotFoundError, UpstreamError } from '../errors.ts';
import type { Logger } from '../logger.ts';

export type ErrorBody = { error: string } & Record<string, unknown>;

/** Base of every error answered as-is: a status, a JSON body `{ error, ...extra }` and optional headers. */
export class HttpError extends Error {
  readonly status: ContentfulStatusCode;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    status: ContentfulStatusCode,
    message: string,
    options: { extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }

  /** `error` always comes last so an `extra` field can never replace the message. */
  body(): ErrorBody {
    return { ...this.extra, error: this.message };
  }
}

export class UnauthorizedError extends HttpError {
  constructor(message = 'Unauthorized', options: { headers?: Record<string, string> } = {}) {
    super(401, message, { headers: options.headers });
  }
}

/**
 * The rest of the body is never read, so the response asks the client to close the connection
 * (a kept-alive socket with unread bytes would fail the client's next request).
 */
export class PayloadTooLargeError extends HttpError {
  constructor(message = 'Payload too large') {
    super(413, message, { headers: { Connection: 'close' } });
  }
}

/** Domain error class → HTTP status; the first class the error is an instance of wins (subclasses before bases). */
const STATUS_OF: ReadonlyArray<readonly [abstract new (...args: any[]) => DomainError, ContentfulStatusCode]> = [
  [InvalidInputError, 400],
  [ForbiddenError, 403],
  [NotFoundError, 404],
  [ConflictError, 409],
  [UpstreamError, 500],
];

/** The status a domain error is answered with (400 for a domain error of an unmapped class). */
export function statusOf(error: DomainError): ContentfulStatusCode {
  for (const [type, status] of STATUS_OF) if (error instanceof type) return status;
  return 400;
}

/** The JSON body of a domain error: its details, then `error` (last, so a detail can never replace the message). */
export function domainErrorBody(error: DomainError): ErrorBody {
  return { ...error.details, error: error.message };
}

export const INTERNAL_ERROR_MESSAGE = 'Internal server error';
export const UNAVAILABLE_MESSAGE = 'Service temporarily unavailable: retry later';

/**
 * The answer while the database cannot be reached: 503 `{ error, retryAfterSeconds, requestId }` with `Retry-After`.
 * Logged once, at warn, with the reason (an error code or the driver's message) and no stack: an outage is not a bug, and
 * one stack per request would drown the log.
 */
export function unavailableResponse(c: Context, logger: Logger, reason: string, headers: Record<string, string> = {}): Response {
  const requestId = requestIdOf(c);
  logger.warn({ requestId, method: c.req.method, path: c.req.path, reason }, 'database unavailable: request answered 503');
  c.header('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
  for (const [name, value] of Object.entries(headers)) c.header(name, value);
  return c.json({ error: UNAVAILABLE_MESSAGE, retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS, requestId }, 503);
}

/**
 * The mapping: HTTP errors → their status, headers and body; domain errors → STATUS_OF; Hono's own HTTPException → its status with
 * `{ error: <message> }`; anything else → logged with the request id, generic 500.
 */
export function errorResponse(err: unknown, c: Context, logger: Logger): Response {
  if (err instanceof HttpError) {
    for (const [name, value] of Object.entries(err.headers)) c.header(name, value);
    return c.json(err.body(), err.status);
  }
  if (err instanceof DomainError) return c.json(domainErrorBody(err), statusOf(err));
  if (err instanceof HTTPException && err.status < 500) {
    return c.json({ error: err.message || defaultMessage(err.status) }, err.status as ContentfulStatusCode);
  }
  const unavailable = databaseUnavailableReason(err);
  if (unavailable !== undefined) return unavailableResponse(c, logger, unavailable);
  const requestId = requestIdOf(c);
  logger.error({ err, requestId, method: c.req.method, path: c.req.path }, 'unhandled error while serving a request');
  return c.json({ error: INTERNAL_ERROR_MESSAGE, requestId }, 500);
}

export function createErrorHandler(logger: Logger): ErrorHandler<any> {
  return (err, c) => errorResponse(err, c, logger);
}

export const notFoundHandler: NotFoundHandler<any> = (c) => c.json({ error: 'Not found' }, 404);

export function requestIdOf(c: Context): string | undefined {
  const id = c.get('requestId' as never) as unknown;
  return typeof id === 'string' ? id : undefined;
}

function defaultMessage(status: number): string {
  if (status === 400) return 'Bad request';
  if (status === 401) return 'Unauthorized';
  if (status === 404) return 'Not found';
  if (status === 413) return 'Payload too large';
  return 'Request failed';
}
