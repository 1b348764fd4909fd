/** Reading JSON request bodies in routers: a body that is not JSON is a 400, never a 500. */
import type { Context } from 'hono';
import { BadRequestError } from './errors.ts';

export async function readJsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') throw new BadRequestError('Request body must be JSON');
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequestError('Request body must be JSON');
  }
}
