/**
 * Admin pages on the API (docs/admin-api.md, "Pages"): `GET /api/pages` reports the resolved mode of each page and
 * is never gated; a `disabled` page makes its API prefixes answer 404 `{ error: "Not found" }`; `hidden` changes
 * nothing here (it only hides the page in the admin navigation).
 */
import type { MiddlewareHandler } from 'hono';
import { PAGE_KEYS, type PageKey, type PageMode } from '../app/types.ts';
import { NotFoundError } from '../errors.ts';
import type { ApiEnv } from './types.ts';

/** The API prefixes each page gates (spec, "Pages"); each prefix also covers its sub-paths. */
export const PAGE_API_PREFIXES: Readonly<Record<PageKey, readonly string[]>> = Object.freeze({
  flows: ['/api/flows', '/api/runs'],
  providers: ['/api/providers'],
  crons: ['/api/crons'],
  functions: ['/api/functions'],
  mcp: ['/api/mcp'],
});

/** True when `path` is `prefix` or below it, on path-segment boundaries (`/api/flowsX` is not under `/api/flows`). */
export function isUnderPrefix(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`);
}

/** The five pages and their modes, in the documented order. */
export function pagesBody(pages: Readonly<Record<PageKey, PageMode>>): { pages: Record<PageKey, PageMode> } {
  const out = {} as Record<PageKey, PageMode>;
  for (const key of PAGE_KEYS) out[key] = pages[key] ?? 'visible';
  return { pages: out };
}

/**
 * 404 for every path under a prefix of a disabled page. `extra` adds (prefix, page) pairs of mounted groups
 * beyond the spec's table. Runs after authentication.
 */
export function pageGate(
  pages: Readonly<Record<PageKey, PageMode>>,
  extra: ReadonlyArray<{ prefix: string; page: PageKey }> = [],
): MiddlewareHandler<ApiEnv> {
  const gated: string[] = [];
  for (const key of PAGE_KEYS) if (pages[key] === 'disabled') gated.push(...PAGE_API_PREFIXES[key]);
  for (const { prefix, page } of extra) if (pages[page] === 'disabled') gated.push(prefix);
  return async (c, next) => {
    const path = c.req.path;
    if (gated.some((prefix) => isUnderPrefix(path, prefix))) throw new NotFoundError();
    await next();
  };
}
