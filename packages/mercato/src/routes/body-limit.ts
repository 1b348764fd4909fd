/**
 * The body limit of public routes: 1,000,000 bytes unless the route file sets `bodyLimit`. A declared
 * `Content-Length` over the limit is refused before the auth step; any other body (chunked included) is counted
 * while the route reads it, and the read fails as soon as the count passes the limit: nothing past the limit (plus
 * the chunk in hand) is ever read or held, whatever the route does with the body. The router then answers 413.
 */

/** Bytes a route accepts when its file sets no `bodyLimit` (the same figure as the /api and /mcp limits). */
export const DEFAULT_ROUTE_BODY_LIMIT = 1_000_000;

/** The error a body read fails with once the limit is passed (the route sees it if it catches the read's rejection). */
export class RouteBodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`Request body must be at most ${limit} bytes`);
    this.name = 'RouteBodyTooLargeError';
  }
}

export interface LimitedRequest {
  /** The request to hand to the route: same method, URL, headers and signal; its body counts bytes as they are read. */
  request: Request;
  /** True once a read went past the limit. */
  exceeded(): boolean;
}

/** The declared Content-Length when it is the framing of the body (not chunked) and over `limit`. */
export function declaredTooLarge(request: Request, limit: number): boolean {
  const declared = request.headers.get('content-length');
  if (declared === null || request.headers.has('transfer-encoding')) return false;
  return Number(declared) > limit;
}

/** Wraps the body of `request` in a stream that errors once more than `limit` bytes have come through. */
export function limitRequestBody(request: Request, limit: number): LimitedRequest {
  const source = request.body;
  if (!source) return { request, exceeded: () => false };
  let size = 0;
  let over = false;
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        reader ??= source.getReader();
        const { done, value } = await reader.read();
        if (done) return controller.close();
        size += value.byteLength;
        if (size > limit) {
          over = true;
          // The rest is left unread: the 413 closes the connection (the HTTP server drains or cuts it).
          controller.error(new RouteBodyTooLargeError(limit));
          return;
        }
        controller.enqueue(value);
      },
      cancel(reason) {
        return reader ? reader.cancel(reason) : source.cancel(reason);
      },
    },
    // pull only when the route reads: nothing is read ahead of the route
    { highWaterMark: 0 },
  );
  return { request: new Request(request, { body, duplex: 'half' } as RequestInit), exceeded: () => over };
}
