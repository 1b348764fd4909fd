/**
 * The errors of /api/functions: 400 with `userErrors` (ours or the platform's, same shape), and the mapping of the
 * Admin GraphQL client's errors to domain errors (not installed → ConflictError, 409; any other platform failure →
 * UpstreamError, 500 with its message).
 */
import { ConflictError, InvalidInputError, UpstreamError } from '../errors.ts';
import { AdminApiError, AdminGraphqlError, AdminHttpError, NotInstalledError } from '../platform/index.ts';
import type { UserError } from '../api/types.ts';

/**
 * 400 `{ error, userErrors, source }`: `source` is `mercato` for problems found before calling the platform (config
 * fields, owner-field shapes) and `platform` for the mutation's userErrors; `error` is the first message.
 */
export class FunctionInputError extends InvalidInputError {
  constructor(
    readonly userErrors: UserError[],
    source: 'mercato' | 'platform',
    extra: Record<string, unknown> = {},
  ) {
    super(userErrors[0]?.message ?? 'Invalid input', { details: { ...extra, source, userErrors } });
  }
}

/** A single problem with a request field (mode, id, …) in the userErrors shape. */
export function fieldError(field: string[] | null, message: string, code = 'INVALID'): FunctionInputError {
  return new FunctionInputError([{ field, message, code }], 'mercato');
}

/** Runs a platform call and maps the client's errors to HTTP errors. */
export async function platformCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof NotInstalledError) throw new ConflictError(error.message);
    if (error instanceof AdminApiError) {
      const platform: Record<string, unknown> = {};
      if (error instanceof AdminGraphqlError) platform.codes = error.codes;
      if (error instanceof AdminHttpError) platform.status = error.status;
      throw new UpstreamError(`The platform request failed: ${error.message}`, { platform });
    }
    throw error;
  }
}
