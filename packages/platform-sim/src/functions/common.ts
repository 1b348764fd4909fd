/**
 * What the function-instance schema shares: input checks (the platform refuses unknown input fields and values of the
 * wrong type before running a mutation), cursor connections, user-error helpers, the function of a create mutation,
 * and which instances an app may see and change.
 */
import type { TypeDef } from '../graphql/execute.ts';
import type { AdminContext } from '../schema.ts';
import type { SimUserError } from './metafields.ts';
import { API_TYPES_OF, type SimFunction } from './registry.ts';
import type { InstanceRecord } from './store.ts';

// ---------------------------------------------------------------------------------------------
// Input objects

/** Field name → type reference (`String`, `Boolean!`, `[MetafieldInput!]`, an input or enum name). */
export type InputSpec = Record<string, string>;

export const INPUT_SPECS: Record<string, InputSpec> = {
  MetafieldInput: { id: 'ID', namespace: 'String', key: 'String', type: 'String', value: 'String', description: 'String' },
  MetafieldsSetInput: { ownerId: 'ID!', namespace: 'String', key: 'String!', type: 'String', value: 'String!', compareDigest: 'String' },
  DiscountCombinesWithInput: { orderDiscounts: 'Boolean', productDiscounts: 'Boolean', shippingDiscounts: 'Boolean' },
};

export const INPUT_ENUMS: Record<string, readonly string[]> = {
  DeliveryMethodType: ['SHIPPING', 'PICK_UP', 'RETAIL', 'LOCAL', 'PICKUP_POINT', 'NONE'],
};

const SCALARS: Record<string, (v: unknown) => boolean> = {
  String: (v) => typeof v === 'string',
  ID: (v) => typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v)),
  Boolean: (v) => typeof v === 'boolean',
  Int: (v) => typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= 2 ** 31 - 1,
  DateTime: (v) => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(Date.parse(v)),
};

/** Refuses a value that does not fit `ref`, with the platform's variable-coercion wording. */
export function checkInput(argument: string, ref: string, value: unknown): void {
  const problem = inputProblem(ref, value, []);
  if (problem) {
    const where = problem.path.length > 0 ? ` for ${problem.path.join('.')}` : '';
    throw new Error(`Variable $${argument} of type ${ref} was provided invalid value${where} (${problem.reason})`);
  }
}

function inputProblem(ref: string, value: unknown, path: string[]): { path: string[]; reason: string } | undefined {
  const required = ref.endsWith('!');
  const inner = required ? ref.slice(0, -1) : ref;
  if (value === undefined || value === null) return required ? { path, reason: 'Expected value to not be null' } : undefined;
  if (inner.startsWith('[')) {
    if (!Array.isArray(value)) return inputProblem(inner.slice(1, -1), value, path); // a single value coerces to a list
    for (let i = 0; i < value.length; i++) {
      const p = inputProblem(inner.slice(1, -1), value[i], [...path, String(i)]);
      if (p) return p;
    }
    return undefined;
  }
  const scalar = SCALARS[inner];
  if (scalar) return scalar(value) ? undefined : { path, reason: `Could not coerce value ${JSON.stringify(value)} to ${inner}` };
  const enumValues = INPUT_ENUMS[inner];
  if (enumValues)
    return enumValues.includes(value as string)
      ? undefined
      : { path, reason: `Expected ${JSON.stringify(value)} to be one of: ${enumValues.join(', ')}` };
  const spec = INPUT_SPECS[inner];
  if (!spec) throw new Error(`platform-sim: unknown input type ${inner}`);
  if (typeof value !== 'object' || Array.isArray(value))
    return { path, reason: `Expected ${JSON.stringify(value)} to be a key-value object` };
  for (const key of Object.keys(value))
    if (!Object.hasOwn(spec, key)) return { path: [...path, key], reason: `Field is not defined on ${inner}` };
  for (const [key, fieldRef] of Object.entries(spec)) {
    const p = inputProblem(fieldRef, (value as Record<string, unknown>)[key], [...path, key]);
    if (p) return p;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Connections

export interface PageArgs {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
  reverse?: boolean | null;
}

export const PAGE_ARGS = { first: 'Int', after: 'String', last: 'Int', before: 'String', reverse: 'Boolean' } as const;
export const MAX_PAGE_SIZE = 250;

const encodeCursor = (key: string) => Buffer.from(JSON.stringify({ last_id: key })).toString('base64url');
function decodeCursor(cursor: string): string {
  try {
    const key = (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { last_id?: unknown }).last_id;
    if (typeof key === 'string') return key;
  } catch {
    /* below */
  }
  throw new Error(`Invalid cursor for current pagination sort.`);
}

/** A connection `{ nodes, edges, pageInfo }` over `items`, keyed by `keyOf` (the cursor). */
export function paginate<T>(items: readonly T[], args: PageArgs, keyOf: (item: T) => string) {
  const { first, last, after, before } = args;
  if ((first === undefined || first === null) && (last === undefined || last === null))
    throw new Error('you must provide one of first or last');
  for (const [name, n] of [
    ['first', first],
    ['last', last],
  ] as const) {
    if (n !== undefined && n !== null && (n < 0 || n > MAX_PAGE_SIZE))
      throw new Error(`The ${name} argument must be between 0 and ${MAX_PAGE_SIZE}`);
  }
  let list = args.reverse ? [...items].reverse() : [...items];
  if (after) {
    const key = decodeCursor(after);
    const at = list.findIndex((i) => keyOf(i) === key);
    list = at >= 0 ? list.slice(at + 1) : [];
  }
  if (before) {
    const key = decodeCursor(before);
    const at = list.findIndex((i) => keyOf(i) === key);
    list = at >= 0 ? list.slice(0, at) : list;
  }
  const total = list.length;
  let startIndex = 0;
  if (first !== undefined && first !== null) list = list.slice(0, first);
  if (last !== undefined && last !== null && list.length > last) {
    startIndex = list.length - last;
    list = list.slice(startIndex);
  }
  const edges = list.map((node) => ({ cursor: encodeCursor(keyOf(node)), node }));
  return {
    nodes: list,
    edges,
    pageInfo: {
      hasNextPage: first !== undefined && first !== null ? total > list.length + startIndex : Boolean(before),
      hasPreviousPage: startIndex > 0 || Boolean(after),
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

/** The object types of a connection of `node`: `<Node>Connection` and `<Node>Edge`. */
export function connectionTypes(node: string): Record<string, TypeDef> {
  return {
    [`${node}Connection`]: {
      kind: 'object',
      fields: { nodes: { type: `[${node}!]!` }, edges: { type: `[${node}Edge!]!` }, pageInfo: { type: 'PageInfo!' } },
    },
    [`${node}Edge`]: { kind: 'object', fields: { cursor: { type: 'String!' }, node: { type: `${node}!` } } },
  };
}

// ---------------------------------------------------------------------------------------------
// User errors and payload types

export function userErrorType(codeEnum: string, extra: Record<string, string> = {}): TypeDef {
  const fields: Record<string, { type: string }> = { field: { type: '[String!]' }, message: { type: 'String!' }, code: { type: codeEnum } };
  for (const [name, type] of Object.entries(extra)) fields[name] = { type };
  return { kind: 'object', fields };
}

export const err = (field: string[] | null, message: string, code: string): SimUserError => ({ field, message, code });

// ---------------------------------------------------------------------------------------------
// The function of a create mutation

export interface FunctionErrorCodes {
  missing: string;
  multiple: string;
  notFound: string;
  notImplemented: string;
}

/**
 * `functionId` or `functionHandle` (exactly one) of the calling app's functions, implementing one of the kind's API
 * types; otherwise the user error the platform gives (`prefix` is the input argument path, [] for top-level args).
 */
export function resolveFunction(
  ctx: AdminContext,
  input: { functionId?: unknown; functionHandle?: unknown },
  kind: keyof typeof API_TYPES_OF,
  prefix: string[],
  codes: FunctionErrorCodes,
): { fn: SimFunction } | { error: SimUserError } {
  const hasId = typeof input.functionId === 'string' && input.functionId !== '';
  const hasHandle = typeof input.functionHandle === 'string' && input.functionHandle !== '';
  if (hasId && hasHandle)
    return {
      error: err([...prefix, 'functionHandle'], 'Only one of functionId or functionHandle can be provided, not both.', codes.multiple),
    };
  if (!hasId && !hasHandle)
    return { error: err([...prefix, 'functionHandle'], 'Either functionId or functionHandle must be provided.', codes.missing) };
  const registry = ctx.state.functions.registry;
  const fn = hasId
    ? registry.byId(ctx.app.apiKey, input.functionId as string)
    : registry.byHandle(ctx.app.apiKey, input.functionHandle as string);
  const field = [...prefix, hasId ? 'functionId' : 'functionHandle'];
  if (!fn)
    return {
      error: err(
        field,
        hasId ? `Function ${String(input.functionId)} not found.` : `Function with handle '${String(input.functionHandle)}' not found.`,
        codes.notFound,
      ),
    };
  if (!(API_TYPES_OF[kind] as readonly string[]).includes(fn.apiType)) {
    return {
      error: err(field, `Function does not implement the required interface (its API type is ${fn.apiType}).`, codes.notImplemented),
    };
  }
  return { fn };
}

// ---------------------------------------------------------------------------------------------
// Visibility

/** Cart transforms and fulfillment constraint rules are listed for their app only; the rest for every app of the shop. */
export function visibleTo(record: InstanceRecord, ctx: AdminContext): boolean {
  if (record.shop !== ctx.shop.domain) return false;
  return record.kind === 'cartTransform' || record.kind === 'fulfillmentConstraintRule' ? record.apiKey === ctx.app.apiKey : true;
}

/** An app changes only the instances of its own functions. */
export function ownedBy(record: InstanceRecord | undefined, ctx: AdminContext): boolean {
  return record !== undefined && record.shop === ctx.shop.domain && record.apiKey === ctx.app.apiKey;
}

export function touch(record: InstanceRecord): void {
  record.updatedAt = new Date().toISOString();
}

/** The app's numeric id (the `app--<id>` namespace). */
export const appIdOf = (ctx: AdminContext) => ctx.app.id;
