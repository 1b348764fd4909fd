/**
 * Reading JSON request bodies in routers: a body that is not JSON, or that nests arrays and objects more than
 * MAX_JSON_DEPTH levels deep, is a 400, never a 500.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { InvalidInputError } from '../errors.ts';
import { PayloadTooLargeError } from './errors.ts';

/**
 * Deepest nesting of arrays and objects accepted in a JSON body (`{"a":1}` is 1 level, `[[1]]` is 2). Far beyond any
 * real input, and far below what recursive code (validators, JSON.stringify, PostgreSQL's jsonb parser) can take.
 */
export const MAX_JSON_DEPTH = 256;

/**
 * True when the JSON text nests arrays/objects more than `max` levels deep. One pass over the characters, no
 * recursion, no allocation (brackets inside strings are skipped, escapes included), so it runs before JSON.parse: a
 * body of a million `[` is refused without building a million arrays. On text that is not JSON the count means
 * little, but such text is refused either way.
 */
export function jsonDeeperThan(text: string, max: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: the next character is escaped
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x7b || ch === 0x5b) {
      if (++depth > max) return true;
    } else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return false;
}

/** JSON.parse with the depth rule: `what` names the body in the 400 message (`Request body`, `Webhook body`). */
export function parseJsonText(text: string, what = 'Request body'): unknown {
  if (jsonDeeperThan(text)) throw new InvalidInputError(`${what} must not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep`);
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidInputError(`${what} must be JSON`);
  }
}

export async function readJsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') throw new InvalidInputError('Request body must be JSON');
  return parseJsonText(text);
}

/**
 * A body limit answering 413 `{ error }` (the rest of the body is not read; the connection is closed). A request with a
 * Content-Length (and no Transfer-Encoding) is judged by that header alone, and one with neither has no body: neither
 * touches `c.req.raw.body`, so the body is later read straight from the Node request (@hono/node-server's fast path)
 * instead of through a WHATWG Request and stream, which cost about a fifth of the CPU of a dispatch (bench:frontdoor).
 * A chunked body (Transfer-Encoding) is read and counted by hono's bodyLimit.
 */
export function bodyLimitOf(maxSize: number, what = 'Request body'): MiddlewareHandler {
  const tooLarge = () => new PayloadTooLargeError(`${what} must be at most ${maxSize} bytes`);
  const chunked = bodyLimit({
    maxSize,
    onError: () => {
      throw tooLarge();
    },
  });
  return async (c, next) => {
    if (c.req.header('transfer-encoding') !== undefined) return chunked(c, next);
    const length = c.req.header('content-length');
    // Node's parser has refused a Content-Length that is not a number; it reads no more than that many bytes
    if (length !== undefined && Number(length) > maxSize) throw tooLarge();
    return next();
  };
}
