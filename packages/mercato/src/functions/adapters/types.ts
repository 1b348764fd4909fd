/**
 * An adapter speaks one function type's Admin GraphQL: list, read (by `node(id:)`), create, update (where the
 * platform has a mutation) and delete. Every mutation outcome carries the platform's payload and userErrors as they
 * came; the service decides the HTTP answer.
 */
import type { AdminGraphqlClient, FunctionDefinition } from '../../app/types.ts';
import type { OwnerValues } from '../input.ts';
import { type FunctionInstance, MAX_INSTANCES, type PlatformUserError } from '../instance.ts';

export interface DeployedFunction {
  id: string;
  handle: string;
  apiType: string;
}

export interface AdapterContext {
  client: Pick<AdminGraphqlClient, 'request'>;
  def: FunctionDefinition;
  /** The deployed function of the definition's handle, when `shopifyFunctions` lists it. */
  fn: DeployedFunction | null;
  signal?: AbortSignal;
}

export interface MutationOutcome {
  /** The mutation's name, e.g. `cartTransformCreate`. */
  mutation: string;
  /** Its payload as the platform answered (the selected fields and `userErrors`). */
  payload: Record<string, any>;
  /** The instance created or updated, when the mutation succeeded and returns one. */
  instance: FunctionInstance | null;
  userErrors: PlatformUserError[];
}

export interface Adapter {
  /** Argument names that prefix the platform's userError fields (`automaticAppDiscount`, `validation`, …). */
  readonly inputArgs: readonly string[];
  list(ctx: AdapterContext): Promise<FunctionInstance[]>;
  /** The instance with this id if it exists and runs this definition's function; else null. */
  read(ctx: AdapterContext, id: string): Promise<FunctionInstance | null>;
  create(ctx: AdapterContext, owner: OwnerValues, config: Record<string, unknown>): Promise<MutationOutcome>;
  /** Absent for types the platform cannot update (the service deletes and creates them again). */
  update?(
    ctx: AdapterContext,
    current: FunctionInstance,
    changes: OwnerValues,
    config: Record<string, unknown> | undefined,
  ): Promise<MutationOutcome>;
  remove(ctx: AdapterContext, current: FunctionInstance): Promise<MutationOutcome>;
}

/** The function identifier argument of a create: the id when known, else the handle (the platform answers userErrors). */
export function functionArg(ctx: AdapterContext): { functionId: string } | { functionHandle: string } {
  return ctx.fn ? { functionId: ctx.fn.id } : { functionHandle: ctx.def.handle };
}

/** True when an instance runs this definition's function (by id, or by handle when the platform gives it). */
export function runsFunction(ctx: AdapterContext, functionId: string | null | undefined, handle?: string | null): boolean {
  if (handle) return handle === ctx.def.handle;
  return ctx.fn !== null && functionId === ctx.fn.id;
}

export const USER_ERRORS = 'userErrors { field message code }';
export const PAGE_INFO = 'pageInfo { hasNextPage endCursor }';

/** Pages through a connection (50 per page, at most 10 pages) until `limit` instances matched. */
export async function collectPages<N>(
  fetchPage: (after: string | null) => Promise<{ nodes: N[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } }>,
  keep: (node: N) => FunctionInstance | null,
  limit = MAX_INSTANCES,
): Promise<FunctionInstance[]> {
  const out: FunctionInstance[] = [];
  let after: string | null = null;
  for (let page = 0; page < 10; page++) {
    const { nodes, pageInfo } = await fetchPage(after);
    for (const node of nodes) {
      const instance = keep(node);
      if (instance) out.push(instance);
      if (out.length >= limit) return out;
    }
    if (!pageInfo.hasNextPage || !pageInfo.endCursor) break;
    after = pageInfo.endCursor;
  }
  return out;
}

/** Runs a mutation and splits its payload: `root` is the mutation field, `objectKey` the payload's object field. */
export async function mutate(
  ctx: AdapterContext,
  root: string,
  document: string,
  variables: Record<string, unknown>,
): Promise<{ payload: Record<string, any>; userErrors: PlatformUserError[] }> {
  const data = await ctx.client.request<Record<string, any>>(document, { variables, signal: ctx.signal });
  const payload = (data?.[root] ?? {}) as Record<string, any>;
  return { payload, userErrors: Array.isArray(payload.userErrors) ? payload.userErrors : [] };
}
