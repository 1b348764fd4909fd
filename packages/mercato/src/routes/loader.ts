/**
 * Finds route files and maps them to paths: `index.ts` → the folder's path, `callback.ts` → `/routes/callback`,
 * `[id].ts` → `:id`; names starting with `_` are ignored. Two files on one path, a file without `auth`, or a
 * `bodyLimit` that is not a whole number of bytes above 0, fail start-up
 * (every problem is listed; `mercato check` reports them too). Static segments are matched before parameters, depth by depth.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROUTE_METHODS, type RouteDefinition, type RouteMethod } from './types.ts';

const ROUTE_FILE_RE = /\.(ts|mts|js|mjs)$/;
const SEGMENT_RE = /^[A-Za-z0-9._~-]+$/;
const PARAM_RE = /^\[([A-Za-z_][A-Za-z0-9_]*)\]$/;

export class RouteLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RouteLoadError';
  }
}

export interface RouteFile {
  file: string;
  /** Hono pattern, e.g. `/routes/orders/:id`. */
  path: string;
}

export interface LoadedRoute extends RouteFile {
  definition: RouteDefinition;
  methods: RouteMethod[];
}

function walk(dir: string, out: string[]) {
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('_') || name.startsWith('.')) continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else if (ROUTE_FILE_RE.test(name) && !/\.(test|spec|d)\.[mc]?[jt]s$/.test(name)) out.push(full);
  }
}

export function routePathOf(relativeFile: string): string {
  const parts = relativeFile.split(sep).join('/').replace(ROUTE_FILE_RE, '').split('/');
  if (parts.at(-1) === 'index') parts.pop();
  const segments = parts.map((part) => {
    const param = PARAM_RE.exec(part);
    if (param) return `:${param[1]}`;
    if (!SEGMENT_RE.test(part))
      throw new RouteLoadError(`routes/${relativeFile}: "${part}" is not a valid path segment (letters, digits, . _ ~ - or [param])`);
    return part;
  });
  return ['/routes', ...segments].join('/');
}

/** The shape of a path for clash detection: parameters are interchangeable. */
const shapeOf = (path: string) => path.replace(/:[^/]+/g, ':');

const fileName = (routesDir: string, file: string) => `routes/${relative(routesDir, file).split(sep).join('/')}`;

/** Every route file with its path, and the problems found (bad segment names, two files on one path). */
export function scanRouteFiles(routesDir: string): { routes: RouteFile[]; problems: string[] } {
  const routes: RouteFile[] = [];
  const problems: string[] = [];
  if (!existsSync(routesDir)) return { routes, problems };
  const files: string[] = [];
  walk(routesDir, files);
  const byShape = new Map<string, RouteFile>();
  for (const file of files) {
    let route: RouteFile;
    try {
      route = { file, path: routePathOf(relative(routesDir, file)) };
    } catch (error) {
      if (!(error instanceof RouteLoadError)) throw error;
      problems.push(error.message);
      continue;
    }
    const clash = byShape.get(shapeOf(route.path));
    if (clash) {
      const names = [fileName(routesDir, clash.file), fileName(routesDir, file)].sort();
      problems.push(`${names[0]} and ${names[1]} both map to ${route.path}: rename or remove one of them`);
      continue;
    }
    byShape.set(shapeOf(route.path), route);
    routes.push(route);
  }
  return { routes, problems };
}

const invalid = (problems: string[]) => new RouteLoadError(`Invalid public routes:\n${problems.map((p) => `  - ${p}`).join('\n')}`);

export function findRouteFiles(routesDir: string): RouteFile[] {
  const { routes, problems } = scanRouteFiles(routesDir);
  if (problems.length > 0) throw invalid(problems);
  return routes;
}

/**
 * Segment by segment, a static segment comes before a parameter at the same depth: `/routes/orders/new` before
 * `/routes/orders/:id`, and `/routes/shops/:shop/orders/new` before `/routes/shops/:shop/orders/:orderId`.
 */
export function compareRoutePaths(a: string, b: string): number {
  const sa = a.split('/');
  const sb = b.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const pa = sa[i].startsWith(':');
    const pb = sb[i].startsWith(':');
    if (pa !== pb) return pa ? 1 : -1;
  }
  return sa.length - sb.length;
}

/** Imports a route file; the CLI passes one that imports it from the app's bundle (src/cli/load-config.ts). */
export type RouteModuleLoader = (file: string) => Promise<Record<string, any>>;
const importModule: RouteModuleLoader = (file) => import(pathToFileURL(file).href);

/** Imports every route file and checks its shape, collecting every problem. A default export (defineRoute) or named exports are accepted. */
export async function inspectRoutes(
  routesDir: string,
  loadModule: RouteModuleLoader = importModule,
): Promise<{ routes: LoadedRoute[]; problems: string[] }> {
  const { routes: files, problems } = scanRouteFiles(routesDir);
  const loaded: LoadedRoute[] = [];
  for (const route of files) {
    const name = fileName(routesDir, route.file);
    const mod = await loadModule(route.file);
    const definition = (mod.default && typeof mod.default === 'object' ? mod.default : mod) as RouteDefinition;
    if (definition.auth === undefined) {
      problems.push(`${name}: declares no auth; export auth = 'none' or an auth function (every route must choose)`);
      continue;
    }
    if (definition.auth !== 'none' && typeof definition.auth !== 'function') {
      problems.push(`${name}: auth must be 'none' or a function`);
      continue;
    }
    const { bodyLimit } = definition as { bodyLimit?: unknown };
    if (bodyLimit !== undefined && !(typeof bodyLimit === 'number' && Number.isSafeInteger(bodyLimit) && bodyLimit > 0))
      problems.push(`${name}: bodyLimit must be a whole number of bytes above 0`);
    const methods = ROUTE_METHODS.filter((m) => (definition as Record<string, unknown>)[m] !== undefined);
    for (const m of methods)
      if (typeof (definition as Record<string, unknown>)[m] !== 'function') problems.push(`${name}: ${m} must be a function`);
    if (methods.length === 0) problems.push(`${name}: exports no handler (one of ${ROUTE_METHODS.join(', ')})`);
    loaded.push({ ...route, definition, methods });
  }
  return { routes: loaded.sort((a, b) => compareRoutePaths(a.path, b.path)), problems };
}

/** inspectRoutes, failing start-up with one RouteLoadError that lists every problem. */
export async function loadRoutes(routesDir: string, loadModule: RouteModuleLoader = importModule): Promise<LoadedRoute[]> {
  const { routes, problems } = await inspectRoutes(routesDir, loadModule);
  if (problems.length > 0) throw invalid(problems);
  return routes;
}
