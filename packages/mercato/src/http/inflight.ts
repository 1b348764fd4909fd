/**
 * Request bodies in flight, per process (docs/security.md, "Bodies in flight"). The doors that read a large body before
 * they can judge it (`/webhooks`: up to 5 MiB before its HMAC can be checked; `/routes/*`: up to a route's limit) reserve
 * what they may read first: the declared Content-Length, or the door's limit for a chunked body. Above the bound the
 * request is answered 503 with `Retry-After` before any byte of its body is read (the platform retries a webhook
 * delivery), so a burst of large bodies cannot take the process's memory. A body alone is always let in, even one over
 * the bound, so a bound below a door's limit never refuses everything.
 */
import { HttpError } from './errors.ts';

/** What the 503 asks the client to wait, in seconds. */
export const BODIES_RETRY_AFTER_SECONDS = 1;

export class BodyBudget {
  private used = 0;
  private peakBytes = 0;

  /** `max`: MERCATO_MAX_BODY_BYTES_IN_FLIGHT (app/env.ts DEFAULT_HTTP_LIMITS: 64 MiB). */
  constructor(readonly max: number) {}

  /** Reserves `bytes`; returns the function that gives them back (idempotent), or null when the bound would be passed. */
  reserve(bytes: number): (() => void) | null {
    const n = Math.max(0, Math.ceil(bytes));
    if (this.used > 0 && this.used + n > this.max) return null;
    this.used += n;
    this.peakBytes = Math.max(this.peakBytes, this.used);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= n;
    };
  }

  /** Bytes reserved now. */
  get inFlight(): number {
    return this.used;
  }

  /** The most bytes reserved at once since the start (tests, diagnostics). */
  get peak(): number {
    return this.peakBytes;
  }
}

/** The body a request may bring: its declared Content-Length, else (chunked) `limit`; 0 when it declares none and is not chunked. */
export function bodyBytesOf(headers: { get(name: string): string | null }, limit: number): number {
  if (headers.get('transfer-encoding') !== null) return limit;
  const declared = headers.get('content-length');
  if (declared === null) return 0;
  const n = Number(declared);
  return Number.isFinite(n) && n >= 0 ? Math.min(n, limit) : limit;
}

/** 503 `{ error, retryAfterSeconds }` with `Retry-After`: too many bodies are being received right now. */
export class BodiesInFlightError extends HttpError {
  constructor() {
    super(503, 'Too many request bodies are being received right now; retry shortly', {
      extra: { retryAfterSeconds: BODIES_RETRY_AFTER_SECONDS },
      headers: { 'Retry-After': String(BODIES_RETRY_AFTER_SECONDS) },
    });
  }
}
