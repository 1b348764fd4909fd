/** The built-in resources: the log query docs, the token's permissions, the log search tool's reference, recent runs. */
import { listRuns } from '../../flows/list.ts';
import type { McpCatalog, ResourceSpec } from '../catalog.ts';
import type { McpDeps } from '../deps.ts';
import { covers, offeredPermissions } from '../permissions.ts';
import { LOG_SEARCH_DEFAULT_LIMIT, LOG_SEARCH_MAX_LIMIT, LOG_SEARCH_SCHEMA, unavailable } from './tools.ts';

export const RECENT_RUNS_LIMIT = 20;
const json = (value: unknown) => ({ text: JSON.stringify(value, null, 2), mimeType: 'application/json' });

export function builtInResources(deps: McpDeps, catalog: () => McpCatalog): ResourceSpec[] {
  return [
    {
      uri: 'service://docs/log-search',
      name: 'Log query language',
      description: 'Reference of the query language of service.logs.search: text and field filters, time bounds, context.',
      mimeType: 'text/markdown',
      requiredPermissions: ['read_logs'],
      builtIn: true,
      read() {
        if (!deps.logs) throw unavailable('Log search');
        return deps.logs.queryLanguageDocs;
      },
    },
    {
      uri: 'service://permissions',
      name: 'Token permissions',
      description: 'The permissions this token holds, every permission the app knows, and which tools and resources the grants cover.',
      mimeType: 'application/json',
      requiredPermissions: [],
      builtIn: true,
      read(ctx) {
        const c = catalog();
        const granted = new Set(ctx.permissions);
        return json({
          token: { id: ctx.tokenId, appHandle: ctx.appHandle, shop: ctx.shop },
          granted: [...ctx.permissions],
          permissions: offeredPermissions(c.permissions).map((p) => ({ ...p, granted: granted.has(p.key) })),
          tools: [...c.tools.values()].map((t) => ({
            name: t.name,
            requiredPermissions: t.requiredPermissions,
            riskLevel: t.riskLevel,
            available: covers(granted, t.requiredPermissions),
          })),
          resources: [...c.resources.values()].map((r) => ({
            uri: r.uri,
            requiredPermissions: r.requiredPermissions,
            available: covers(granted, r.requiredPermissions),
          })),
        });
      },
    },
    {
      uri: 'service://tools/service.logs.search',
      name: 'service.logs.search reference',
      description: 'Inputs, defaults and limits of the log search tool.',
      mimeType: 'application/json',
      requiredPermissions: ['read_logs'],
      builtIn: true,
      read() {
        const tool = catalog().tools.get('service.logs.search')!;
        return json({
          name: tool.name,
          description: tool.description,
          requiredPermissions: tool.requiredPermissions,
          inputSchema: LOG_SEARCH_SCHEMA,
          defaults: { query: '', levels: ['info', 'warn', 'error'], context: true, limit: LOG_SEARCH_DEFAULT_LIMIT },
          limits: { limit: { min: 1, max: LOG_SEARCH_MAX_LIMIT } },
          queryLanguage: 'service://docs/log-search',
          result: '{ runId, logs: [...], total } — logs newest first; context lines are marked as such.',
        });
      },
    },
    {
      uri: 'service://runs/recent',
      name: 'Recent runs',
      description: `The ${RECENT_RUNS_LIMIT} most recent runs of this shop, newest first, with status, error summary and why a pending or sleeping run waits (\`waiting\`).`,
      mimeType: 'application/json',
      requiredPermissions: ['read_flows'],
      builtIn: true,
      async read(ctx) {
        const { runs, total } = await listRuns(
          deps.db,
          { appHandle: ctx.appHandle, shop: ctx.shop },
          { limit: RECENT_RUNS_LIMIT, offset: 0 },
        );
        return json({ shop: ctx.shop, total, runs });
      },
    },
  ];
}
