/** /api/mcp: token administration with the session token (page `mcp`). */
import { Hono } from 'hono';
import { RISK_LEVELS } from '../app/types.ts';
import { readJsonBody } from '../http/body.ts';
import type { ApiEnv, ApiRouteGroup } from '../http/types.ts';
import type { McpCatalog } from './catalog.ts';
import { offeredPermissions } from './permissions.ts';
import { DEFAULT_EXPIRY_DAYS, type TokenService } from './tokens.ts';

export const EXPIRY_OPTIONS = [
  { label: '7 days', expiresInDays: 7, default: false },
  { label: '30 days', expiresInDays: 30, default: false },
  { label: '90 days', expiresInDays: 90, default: true },
  { label: '1 year', expiresInDays: 365, default: false },
  { label: 'Never', expiresInDays: null, default: false },
];

export function capabilitiesBody(catalog: McpCatalog, options: { enabled: boolean; crossShopAccess: boolean }) {
  return {
    enabled: options.enabled,
    crossShopAccess: options.crossShopAccess,
    // reserved permissions (no capability uses them) are not offered; tokens that hold one keep it
    permissions: offeredPermissions(catalog.permissions),
    tools: [...catalog.tools.values()].map((t) => ({
      name: t.name,
      title: t.title ?? null,
      description: t.description,
      requiredPermissions: t.requiredPermissions,
      riskLevel: t.riskLevel,
      builtIn: t.builtIn,
    })),
    resources: [...catalog.resources.values()].map((r) => ({
      uri: r.uri,
      name: r.name,
      description: r.description ?? null,
      mimeType: r.mimeType ?? null,
      requiredPermissions: r.requiredPermissions,
      builtIn: r.builtIn,
    })),
    riskLevels: RISK_LEVELS,
    expiryOptions: EXPIRY_OPTIONS,
    defaultExpiresInDays: DEFAULT_EXPIRY_DAYS,
  };
}

export function mcpApi(deps: { catalog: McpCatalog; tokens: TokenService; enabled: boolean; crossShopAccess: boolean }): ApiRouteGroup[] {
  const { tokens } = deps;
  const app = new Hono<ApiEnv>();
  const capabilities = capabilitiesBody(deps.catalog, deps);
  app.get('/capabilities', (c) => c.json(capabilities));
  app.get('/tokens', async (c) => c.json({ tokens: await tokens.list(c.get('tenant')) }));
  app.post('/tokens', async (c) => c.json(await tokens.create(c.get('tenant'), await readJsonBody(c)), 201));
  app.get('/tokens/:id', async (c) => c.json(await tokens.detail(c.get('tenant'), c.req.param('id'))));
  app.patch('/tokens/:id', async (c) => {
    await tokens.patch(c.get('tenant'), c.req.param('id'), await readJsonBody(c));
    return c.json({ ok: true });
  });
  app.put('/tokens/:id/permissions', async (c) => {
    const token = await tokens.setPermissions(c.get('tenant'), c.req.param('id'), await readJsonBody(c));
    return c.json({ ok: true, permissions: token.permissions });
  });
  app.post('/tokens/:id/rotate', async (c) => c.json(await tokens.rotate(c.get('tenant'), c.req.param('id'))));
  app.post('/tokens/:id/revoke', async (c) => {
    await tokens.revoke(c.get('tenant'), c.req.param('id'));
    return c.json({ ok: true });
  });
  return [{ prefix: '/api/mcp', page: 'mcp', app }];
}
