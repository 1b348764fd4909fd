/**
 * Finds route files and maps them to paths: `index.ts` → the folder's path, `callback.ts` → `/routes/callback`,
 * `[id].ts` → `:id`; names starting with `_` are ignored. Two files on one path, or a file without `auth`, fail start-up.
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
    if (!SEGMENT_RE.test(part)) throw new RouteLoadError(`routes/${relativeFile}: "${part}" is not a valid path segment (letters, digits, . _ ~ - or [param])`);
    return part;
  });
  return ['/routes', ...segments].join('/');
}

/** The shape of a path for clash detection: parameters are interchangeable. */
const shapeOf = (path: string) => path.replace(/:[^/]+/g, ':');

export function findRouteFiles(routesDir: string): RouteFile[] {
  if (!existsSync(routesDir)) return [];
  const files: string[] = [];
  walk(routesDir, files);
  const byShape = new Map<string, RouteFile>();
  const result: RouteFile[] = [];
  for (const file of files) {
    const rel = relative(routesDir, file);
    const route = { file, path: routePathOf(rel) };
    const clash = byShape.get(shapeOf(route.path));
    if (clash) {
      const names = [relative(routesDir, clash.file), rel].map((f) => `routes/${f.split(sep).join('/')}`).sort();
      throw new RouteLoadError(`${names[0]} and ${names[1]} both map to ${route.path}: rename or remove one of them`);
    }
    byShape.set(shapeOf(route.path), route);
    result.push(route);
  }
  return result;
}

/** Imports every route file and checks its shape. A default export (defineRoute) or named exports are accepted. */
export async function loadRoutes(routesDir: string): Promise<LoadedRoute[]> {
  const loaded: LoadedRoute[] = [];
  const problems: string[] = [];
  for (const route of findRouteFiles(routesDir)) {
    const name = `routes/${relative(routesDir, route.file).split(sep).join('/')}`;
    const mod = await import(pathToFileURL(route.file).href);
    const definition = (mod.default && typeof mod.default === 'object' ? mod.default : mod) as RouteDefinition;
    if (definition.auth === undefined) {
      problems.push(`${name}: declares no auth; export auth = 'none' or an auth function (every route must choose)`);
      continue;
    }
    if (definition.auth !== 'none' && typeof definition.auth !== 'function') {
      problems.push(`${name}: auth must be 'none' or a function`);
      continue;
    }
    const methods = ROUTE_METHODS.filter((m) => (definition as Record<string, unknown>)[m] !== undefined);
    for (const m of methods) if (typeof (definition as Record<string, unknown>)[m] !== 'function') problems.push(`${name}: ${m} must be a function`);
    if (methods.length === 0) problems.push(`${name}: exports no handler (one of ${ROUTE_METHODS.join(', ')})`);
    loaded.push({ ...route, definition, methods });
  }
  if (problems.length > 0) throw new RouteLoadError(`Invalid public routes:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  // static paths before parameterised ones, so /routes/orders/new wins over /routes/orders/:id
  return loaded.sort((a, b) => (a.path.includes(':') ? 1 : 0) - (b.path.includes(':') ? 1 : 0));
}
