/** Reading JSON request bodies in routers: a body that is not JSON is a 400, never a 500. */
import type { Context } from 'hono';
import { InvalidInputError } from '../errors.ts';

export async function readJsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') throw new InvalidInputError('Request body must be JSON');
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidInputError('Request body must be JSON');
  }
}
