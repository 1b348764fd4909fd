/**
 * Experimental custom pages (docs/custom-pages.md): the per-request context, authorization (run on every request,
 * never cached; a throw or a time-out counts as "not authorized" and is logged), the listing, and one loader or
 * action call with input validation, a time limit and a JSON-serialisable result.
 */
import type { CustomPageEntry, CustomPagesResponse } from '../api/types.ts';
import type { CustomPageContext, CustomPageDefinition, CustomPageOperation, ResolvedConfig } from '../app/types.ts';
import { customPagePath, MAX_OPERATION_TIMEOUT_MS } from '../app/validate/custom-pages.ts';
import type { Database } from '../db/engine.ts';
import { type DispatchFn, dispatchFlowFor, schemaIssuesBody } from '../flows/dispatch.ts';
import { InvalidInputError, NotFoundError, UpstreamError } from '../errors.ts';
import { parseInput } from '../input.ts';
/** The answer of an unexpected failure (the same words as the HTTP layer's generic 500). */
const INTERNAL_ERROR_MESSAGE = 'Internal server error';
import type { Logger } from '../logger.ts';
import { createConnectors } from '../providers/service.ts';
import type { Secrets } from '../secrets/types.ts';
import { RPC_NOT_AN_OBJECT, rpcBody } from './schemas.ts';

export interface CustomPagesDeps {
  config: Pick<ResolvedConfig, 'experimental' | 'providers'>;
  db: Database;
  secrets: Secrets;
  logger: Logger;
  dispatch: DispatchFn;
}

/** Who asks: the authenticated tenant, the request id and the request's abort signal (client gone). */
export interface PageRequest {
  appHandle: string;
  shop: string;
  requestId: string;
  signal?: AbortSignal;
}

export const OPERATION_KINDS = { loader: 'loaders', action: 'actions' } as const;
export type OperationKind = keyof typeof OPERATION_KINDS;

export type { CustomPageEntry } from '../api/types.ts';

/** GET /api/pages/custom (the admin API contract, src/api/types.ts). */
export type CustomPagesList = CustomPagesResponse;

class TimeLimitError extends Error {
  constructor(readonly ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = 'TimeLimitError';
  }
}

/** Runs `fn` with a signal that aborts after `ms` or when `parent` aborts; settles when either happens, even if `fn` never does. */
async function withTimeLimit<T>(ms: number, parent: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T> | T): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onParentAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new TimeLimitError(ms);
      controller.abort(error);
      reject(error);
    }, ms);
    onParentAbort = () => {
      controller.abort(parent?.reason);
      reject(parent?.reason instanceof Error ? parent.reason : new Error('The request was aborted'));
    };
    if (parent?.aborted) onParentAbort();
    else parent?.addEventListener('abort', onParentAbort, { once: true });
  });
  stopped.catch(() => {}); // settled either way below
  try {
    return await Promise.race([Promise.resolve().then(() => fn(controller.signal)), stopped]);
  } finally {
    clearTimeout(timer);
    if (onParentAbort) parent?.removeEventListener('abort', onParentAbort);
  }
}

function contextFor(
  deps: CustomPagesDeps,
  req: PageRequest,
  page: string,
  signal: AbortSignal,
  operation?: { kind: OperationKind; name: string },
): CustomPageContext {
  const child = deps.logger.child({
    requestId: req.requestId,
    appHandle: req.appHandle,
    shop: req.shop,
    customPage: page,
    ...(operation ?? {}),
  });
  const log = (level: 'info' | 'warn' | 'error') => (message: string, data?: Record<string, unknown>) => child[level]({ data }, message);
  return {
    appHandle: req.appHandle,
    shop: req.shop,
    page,
    requestId: req.requestId,
    signal,
    providers: createConnectors(
      { db: deps.db, secrets: deps.secrets, providers: deps.config.providers },
      req.appHandle,
      req.shop,
    ) as CustomPageContext['providers'],
    dispatchFlow: (options) =>
      dispatchFlowFor(deps.dispatch, 'page', { appHandle: req.appHandle, shop: req.shop, requestId: req.requestId })({
        flowName: options.flowName,
        input: options.input,
        retryPolicy: options.retryPolicy,
      }),
    log: { info: log('info'), warn: log('warn'), error: log('error') },
  };
}

/** `authorize` for this request: no callback allows; false, a throw or a time-out refuses (the last two are logged). */
async function isAuthorized(deps: CustomPagesDeps, req: PageRequest, key: string, page: CustomPageDefinition): Promise<boolean> {
  const authorize = page.authorize;
  if (!authorize) return true;
  try {
    return (await withTimeLimit(MAX_OPERATION_TIMEOUT_MS, req.signal, (signal) => authorize(contextFor(deps, req, key, signal)))) === true;
  } catch (error) {
    if (req.signal?.aborted) return false;
    deps.logger.error(
      { err: error, requestId: req.requestId, appHandle: req.appHandle, shop: req.shop, customPage: key },
      'custom page authorize failed; the page is treated as not authorized',
    );
    return false;
  }
}

function pagesOf(deps: CustomPagesDeps): Array<[string, CustomPageDefinition]> {
  return deps.config.experimental.customPages ? Object.entries(deps.config.experimental.pages) : [];
}

/** GET /api/pages/custom: the pages authorized for this tenant (callbacks run concurrently), in definition order. */
export async function listCustomPages(deps: CustomPagesDeps, req: PageRequest): Promise<CustomPagesList> {
  const entries = pagesOf(deps);
  const allowed = await Promise.all(entries.map(([key, page]) => isAuthorized(deps, req, key, page)));
  const pages: CustomPageEntry[] = [];
  const navigation: CustomPagesList['navigation'] = [];
  entries.forEach(([key, page], i) => {
    if (!allowed[i]) return;
    const path = customPagePath(key, page);
    pages.push({ key, title: page.title, path, loaders: Object.keys(page.loaders ?? {}), actions: Object.keys(page.actions ?? {}) });
    if (page.nav !== false) navigation.push({ label: page.title, path });
  });
  return { pages, navigation };
}

/** `{ input }` and nothing else; a missing `input` is `undefined`. */
export function parseRpcBody(body: unknown): { input: unknown } {
  const { input } = parseInput(rpcBody, body, { notAnObject: RPC_NOT_AN_OBJECT });
  return { input };
}

const own = <T>(map: Record<string, T> | undefined, key: string): T | undefined => (map && Object.hasOwn(map, key) ? map[key] : undefined);

/**
 * Finds the page's loader or action for this tenant: an unknown kind, page or name, or a page `authorize` refuses,
 * is the same 404.
 */
export async function resolveOperation(
  deps: CustomPagesDeps,
  req: PageRequest,
  key: string,
  kind: string,
  name: string,
): Promise<CustomPageOperation> {
  const page = deps.config.experimental.customPages ? own(deps.config.experimental.pages, key) : undefined;
  const operation =
    page && Object.hasOwn(OPERATION_KINDS, kind) ? own<CustomPageOperation>(page[OPERATION_KINDS[kind as OperationKind]], name) : undefined;
  if (!page || !operation || !(await isAuthorized(deps, req, key, page))) throw new NotFoundError();
  return operation;
}

/** Runs the operation: input validated (400 with `issues`), the time limit (500 saying so: the admin API answers no 504), the result as JSON text (`{ "result": … }`). */
export async function callOperation(
  deps: CustomPagesDeps,
  req: PageRequest,
  key: string,
  kind: OperationKind,
  name: string,
  operation: CustomPageOperation,
  input: unknown,
): Promise<string> {
  let value = input;
  if (operation.input) {
    const parsed = await operation.input.safeParseAsync(input);
    if (!parsed.success)
      throw new InvalidInputError(`Invalid input for ${kind} "${name}" of custom page "${key}"`, {
        issues: schemaIssuesBody(parsed.error.issues),
      });
    value = parsed.data;
  }
  const where = { requestId: req.requestId, appHandle: req.appHandle, shop: req.shop, customPage: key, kind, name };
  const timeout = operation.timeout ?? MAX_OPERATION_TIMEOUT_MS;
  let result: unknown;
  try {
    result = await withTimeLimit(timeout, req.signal, (signal) => operation.run(contextFor(deps, req, key, signal, { kind, name }), value));
  } catch (error) {
    if (error instanceof TimeLimitError) {
      deps.logger.warn(where, `custom page ${kind} timed out after ${timeout} ms`);
      throw new UpstreamError(
        `${kind === 'loader' ? 'Loader' : 'Action'} "${name}" of custom page "${key}" timed out after ${timeout} ms`,
        { requestId: req.requestId },
      );
    }
    if (req.signal?.aborted) deps.logger.info(where, `custom page ${kind} aborted: the client went away`);
    else deps.logger.error({ ...where, err: error }, `custom page ${kind} failed`);
    throw internalError(req.requestId);
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(result === undefined ? null : result);
  } catch (error) {
    deps.logger.error({ ...where, err: error }, `custom page ${kind} returned a result that is not JSON-serialisable`);
    throw internalError(req.requestId);
  }
  if (text === undefined) {
    deps.logger.error(where, `custom page ${kind} returned a ${typeof result}, which is not JSON-serialisable`);
    throw internalError(req.requestId);
  }
  return `{"result":${text}}`;
}

/** The generic 500 of the admin API, once the cause is logged here (with more context than the global handler has). */
function internalError(requestId: string): UpstreamError {
  return new UpstreamError(INTERNAL_ERROR_MESSAGE, { requestId });
}
