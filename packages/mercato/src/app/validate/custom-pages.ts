/** `experimental.pages`: the custom page definitions (docs/custom-pages.md, docs/configuration-validation.md). */
import { at, checkKnownKeys, got, isFunction, isNonEmptyString, isPlainObject, isPositiveFinite, isSchema, type Problems } from './util.ts';

/** Keys of pages and names of loaders and actions: they are path segments of the RPC URL. */
export const CUSTOM_PAGE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
/** An admin path: one or more `/segment`, each of letters, digits, `_` and `-`. */
export const CUSTOM_PAGE_PATH = /^(\/[A-Za-z0-9_-]+)+$/;
/**
 * First path segments a custom page cannot take: the built-in admin pages and the server's own prefixes
 * (the admin UI is served on every other path).
 */
export const RESERVED_PAGE_SEGMENTS = [
  'flows',
  'runs',
  'providers',
  'crons',
  'functions',
  'mcp-tokens',
  'api',
  'mcp',
  'routes',
  'webhooks',
  '__mercato',
  'healthz',
  'readyz',
  'metrics',
  'assets',
];
/** Upper bound (and default) of a loader's or action's time limit, in ms. */
export const MAX_OPERATION_TIMEOUT_MS = 30_000;

const PAGE_KEYS = ['title', 'path', 'nav', 'authorize', 'loaders', 'actions'] as const;
const OPERATION_KEYS = ['description', 'input', 'timeout', 'run'] as const;
const NAME_RULE = 'a letter, then letters, digits, _ or -; at most 64 characters';

/** The admin path of a page: its `path`, or `/<key>`. */
export function customPagePath(key: string, page: { path?: unknown }): string {
  return typeof page.path === 'string' ? page.path : `/${key}`;
}

export function checkCustomPages(problems: Problems, experimental: Record<string, unknown>): void {
  const pages = experimental.pages;
  if (pages === undefined) return;
  if (!isPlainObject(pages)) {
    problems.add('experimental.pages', `must be an object mapping page keys to custom page definitions (defineCustomPage) ${got(pages)}`);
    return;
  }
  // a customPages that is not a boolean is already reported by checkExperimental
  const reportable = experimental.customPages === undefined || typeof experimental.customPages === 'boolean';
  if (Object.keys(pages).length > 0 && experimental.customPages !== true && reportable) {
    problems.add('experimental.pages', 'experimental.customPages must be true to define custom pages');
  }
  const paths = new Map<string, string>();
  for (const [key, page] of Object.entries(pages)) {
    const path = at('experimental.pages', key);
    if (!CUSTOM_PAGE_NAME.test(key)) problems.add(path, `${JSON.stringify(key)} is not a valid custom page key (${NAME_RULE})`);
    if (!isPlainObject(page)) {
      problems.add(path, `must be a custom page definition object { title, path?, nav?, authorize?, loaders?, actions? } ${got(page)}`);
      continue;
    }
    checkKnownKeys(problems, path, page, PAGE_KEYS, 'custom page option');
    if (!isNonEmptyString(page.title)) problems.add(at(path, 'title'), `is required: a non-empty string ${got(page.title)}`);
    checkPagePath(problems, path, key, page, paths);
    if (page.nav !== undefined && typeof page.nav !== 'boolean') problems.add(at(path, 'nav'), `must be a boolean ${got(page.nav)}`);
    if (page.authorize !== undefined && !isFunction(page.authorize))
      problems.add(at(path, 'authorize'), `must be a function (ctx) => boolean ${got(page.authorize)}`);
    checkOperations(problems, at(path, 'loaders'), 'loader', page.loaders);
    checkOperations(problems, at(path, 'actions'), 'action', page.actions);
  }
}

function checkPagePath(problems: Problems, path: string, key: string, page: Record<string, unknown>, seen: Map<string, string>): void {
  if (page.path !== undefined) {
    if (typeof page.path !== 'string' || !CUSTOM_PAGE_PATH.test(page.path)) {
      problems.add(
        at(path, 'path'),
        `must be an admin path such as "/reports" or "/reports/daily" (segments of letters, digits, _ and -) ${got(page.path)}`,
      );
      return;
    }
    const first = page.path.split('/')[1].toLowerCase();
    if (RESERVED_PAGE_SEGMENTS.includes(first)) {
      problems.add(
        at(path, 'path'),
        `"/${first}" is reserved for a built-in page or a server route (reserved: ${RESERVED_PAGE_SEGMENTS.join(', ')})`,
      );
      return;
    }
  } else if (!CUSTOM_PAGE_NAME.test(key) || RESERVED_PAGE_SEGMENTS.includes(key.toLowerCase())) {
    if (CUSTOM_PAGE_NAME.test(key))
      problems.add(path, `the default path "/${key}" is reserved for a built-in page or a server route: set path`);
    return;
  }
  const resolved = customPagePath(key, page);
  const owner = seen.get(resolved.toLowerCase());
  if (owner !== undefined)
    problems.add(
      page.path !== undefined ? at(path, 'path') : path,
      `the path "${resolved}" is already used by custom page ${JSON.stringify(owner)}`,
    );
  else seen.set(resolved.toLowerCase(), key);
}

function checkOperations(problems: Problems, path: string, kind: 'loader' | 'action', operations: unknown): void {
  if (operations === undefined) return;
  if (!isPlainObject(operations)) {
    problems.add(path, `must be an object mapping ${kind} names to { input?, run } ${got(operations)}`);
    return;
  }
  for (const [name, op] of Object.entries(operations)) {
    const opPath = at(path, name);
    if (!CUSTOM_PAGE_NAME.test(name)) problems.add(opPath, `${JSON.stringify(name)} is not a valid ${kind} name (${NAME_RULE})`);
    if (!isPlainObject(op)) {
      problems.add(opPath, `must be a ${kind} object { input?, run, description?, timeout? } ${got(op)}`);
      continue;
    }
    checkKnownKeys(problems, opPath, op, OPERATION_KEYS, `${kind} option`);
    if (!isFunction(op.run)) problems.add(at(opPath, 'run'), `is required: a function (ctx, input) ${got(op.run)}`);
    if (op.input !== undefined && !isSchema(op.input))
      problems.add(at(opPath, 'input'), `must be a schema (e.g. z.object({...})) ${got(op.input)}`);
    if (op.description !== undefined && typeof op.description !== 'string')
      problems.add(at(opPath, 'description'), `must be a string ${got(op.description)}`);
    if (op.timeout !== undefined && (!isPositiveFinite(op.timeout) || op.timeout > MAX_OPERATION_TIMEOUT_MS)) {
      problems.add(at(opPath, 'timeout'), `must be a positive number of ms, at most ${MAX_OPERATION_TIMEOUT_MS} ${got(op.timeout)}`);
    }
  }
}
