/** Helpers of the fuzz routes (not served: the name starts with `_`). */
import {
  FlowConcurrencyError,
  FlowNotFoundError,
  InvalidDispatchError,
  InvalidShopError,
  ShopNotInstalledError,
} from '../../../../src/routes/errors.ts';

export const fail = (status: number, error: string) => Response.json({ error }, { status });

/** The body as JSON, or a 400 Response the route returns as is. */
export async function jsonOf(request: Request): Promise<{ ok: true; value: unknown } | { ok: false; response: Response }> {
  const text = await request.text();
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, response: fail(400, 'body must be JSON') };
  }
}

/** Mercato's typed errors answered as docs/routes.md lists them; anything else is rethrown (a logged 500). */
export function answerTypedError(error: unknown): Response {
  if (error instanceof ShopNotInstalledError || error instanceof FlowNotFoundError) return fail(404, error.message);
  if (error instanceof InvalidShopError || error instanceof InvalidDispatchError) return fail(400, error.message);
  if (error instanceof FlowConcurrencyError) return fail(409, error.message);
  throw error;
}
