/**
 * The update of cart transforms and fulfillment constraint rules, which the platform cannot update: the instance is
 * deleted and created again with the merged owner values and configuration (the platform allows one instance per
 * function, so the old one goes first). The answer names the id that now stands. If the new one is refused, the old
 * one is created again from what was read (its id changes), and the answer is the refusal with `restoredId`.
 */
import type { Adapter, AdapterContext, MutationOutcome } from './adapters/index.ts';
import { FunctionInputError, fieldError } from './errors.ts';
import type { OwnerValues } from './input.ts';
import { type FunctionInstance, toUserErrors } from './instance.ts';

export async function recreate(
  ctx: AdapterContext,
  adapter: Adapter,
  live: FunctionInstance,
  changes: OwnerValues,
  config: Record<string, unknown> | undefined,
) {
  if (config === undefined && live.configError)
    throw fieldError(['config'], `Field "config" is required: ${live.configError.toLowerCase()}, so it cannot be carried over`, 'BLANK');
  const nextConfig = config ?? live.config ?? {};
  const nextOwner: OwnerValues = { ...live.owner, ...changes };

  const removed = await adapter.remove(ctx, live);
  if (removed.userErrors.length > 0) throw new FunctionInputError(toUserErrors(removed.userErrors, adapter.inputArgs), 'platform');

  let created: MutationOutcome;
  try {
    created = await adapter.create(ctx, nextOwner, nextConfig);
  } catch (error) {
    await restore(ctx, adapter, live);
    throw error;
  }
  if (created.userErrors.length > 0 || !created.instance) {
    const restoredId = await restore(ctx, adapter, live);
    throw new FunctionInputError(toUserErrors(created.userErrors, adapter.inputArgs), 'platform', { restoredId, previousId: live.id });
  }
  return { ok: true as const, id: created.instance.id, previousId: live.id, recreated: true };
}

/** Creates the instance again as it was; its new id, or null if that failed too. */
async function restore(ctx: AdapterContext, adapter: Adapter, live: FunctionInstance): Promise<string | null> {
  try {
    const again = await adapter.create(ctx, live.owner, live.config ?? {});
    return again.instance?.id ?? null;
  } catch {
    return null;
  }
}
