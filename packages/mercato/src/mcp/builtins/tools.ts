/** The built-in tools (spec, "Built-in MCP tools"). Each returns a plain object: formatted text plus structuredContent. */
import { LATEST_STABLE_API_VERSION } from '../../app/platform.ts';
import { normalizeShopDomain } from '../../app/shop.ts';
import { isUuid } from '../../db/sql.ts';
import { describeFlows } from '../../flows/router.ts';
import type { CallContext, ToolSpec } from '../catalog.ts';
import type { LogLevelName, McpDeps } from '../deps.ts';
import { RPC, RpcError } from '../rpc.ts';

export const LOG_SEARCH_DEFAULT_LIMIT = 50;
export const LOG_SEARCH_MAX_LIMIT = 200;
const LEVELS: readonly LogLevelName[] = ['info', 'warn', 'error'];
const API_VERSION_RE = /^(\d{4}-(01|04|07|10)|unstable)$/;

export function unavailable(what: string): RpcError {
  return new RpcError(RPC.EXECUTION_FAILED, `${what} is not available in this deployment`);
}

const invalid = (message: string) => new RpcError(RPC.INVALID_PARAMS, message);

/** Shops the token may reach with the shop-scoped tools: its own, or (crossShopAccess) every shop installed for its app. */
async function reachableShops(deps: McpDeps, ctx: CallContext): Promise<string[]> {
  const installed = deps.platformApi ? await deps.platformApi.installations.activeShops(ctx.appHandle) : null;
  const normalized = installed?.map((s) => normalizeShopDomain(s)).filter((s): s is string => s !== null) ?? null;
  if (!deps.config.mcp.crossShopAccess) return normalized === null || normalized.includes(ctx.shop) ? [ctx.shop] : [];
  if (normalized === null) throw unavailable('The installations list');
  return [...new Set(normalized)].sort();
}

export const LOG_SEARCH_SCHEMA = {
  type: 'object',
  properties: {
    runId: { type: 'string', description: 'The run whose logs to search (a run of this shop).' },
    query: {
      type: 'string',
      description: 'A query in the log query language (see the resource service://docs/log-search). Empty: every line.',
    },
    levels: {
      type: ['array', 'string'],
      items: { type: 'string', enum: ['info', 'warn', 'error'] },
      description: 'Levels to include, as an array or a comma-separated string. Default info,warn,error.',
    },
    context: { type: 'boolean', description: 'Include the lines around each match, marked as context. Default true.' },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: LOG_SEARCH_MAX_LIMIT,
      description: `Most lines returned, newest first. Default ${LOG_SEARCH_DEFAULT_LIMIT}.`,
    },
  },
  required: ['runId'],
  additionalProperties: false,
};

function parseLevels(raw: unknown): LogLevelName[] {
  if (raw === undefined) return [...LEVELS];
  const list =
    typeof raw === 'string'
      ? raw
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : (raw as string[]);
  const unknown = list.filter((l) => !LEVELS.includes(l as LogLevelName));
  if (unknown.length > 0) throw invalid(`levels: unknown level ${JSON.stringify(unknown[0])} (use info, warn, error)`);
  if (list.length === 0) throw invalid('levels: name at least one of info, warn, error');
  return [...new Set(list)] as LogLevelName[];
}

export function builtInTools(deps: McpDeps): ToolSpec[] {
  const readOnly = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };
  return [
    {
      name: 'service.shops.list',
      title: 'List shops',
      description:
        "Lists the shops this token can reach: by default only the token's own shop; every shop installed for the app when the app enables mcp.crossShopAccess.",
      requiredPermissions: [],
      riskLevel: 'low',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      annotations: readOnly,
      builtIn: true,
      async run(ctx) {
        const shops = await reachableShops(deps, ctx);
        return { shops: shops.map((shop) => ({ shop, current: shop === ctx.shop })), crossShopAccess: deps.config.mcp.crossShopAccess };
      },
    },
    {
      name: 'service.admin.graphql',
      title: 'Run Admin GraphQL',
      description:
        'Runs an Admin GraphQL document (query or mutation) against a shop and returns the HTTP status and the parsed response, GraphQL errors included. ' +
        "`shop` must be the token's shop (or, with mcp.crossShopAccess, any shop installed for the app).",
      requiredPermissions: ['platform_admin_graphql'],
      riskLevel: 'critical',
      inputSchema: {
        type: 'object',
        properties: {
          shop: { type: 'string', description: 'Shop domain, e.g. example.myshopify.com.' },
          query: { type: 'string', description: 'The GraphQL document.' },
          variables: { type: 'object', description: 'GraphQL variables. Default {}.' },
          apiVersion: {
            type: 'string',
            description: `Admin API version (YYYY-MM or "unstable"). Default: the latest stable, ${LATEST_STABLE_API_VERSION}.`,
          },
        },
        required: ['shop', 'query'],
        additionalProperties: false,
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
      builtIn: true,
      targetShop: (_ctx, input) => normalizeShopDomain(input.shop) ?? String(input.shop).slice(0, 200),
      async run(ctx, input) {
        const shop = normalizeShopDomain(input.shop);
        if (!shop) throw invalid(`shop: "${String(input.shop)}" is not a shop domain`);
        const apiVersion = (input.apiVersion as string | undefined) ?? LATEST_STABLE_API_VERSION;
        if (!API_VERSION_RE.test(apiVersion)) throw invalid(`apiVersion: "${apiVersion}" is not an API version (YYYY-MM or "unstable")`);
        if (!deps.config.mcp.crossShopAccess && shop !== ctx.shop) {
          throw new RpcError(RPC.PERMISSION_DENIED, `shop ${shop} is outside this token's scope: it may only reach ${ctx.shop}`);
        }
        if (!deps.platformApi) throw unavailable('The Admin GraphQL client');
        if (!(await reachableShops(deps, ctx)).includes(shop)) {
          throw new RpcError(RPC.PERMISSION_DENIED, `shop ${shop} has no active installation of this app`);
        }
        const variables = (input.variables as Record<string, unknown> | undefined) ?? {};
        const { status, body } = await deps.platformApi.adminGraphql({
          appHandle: ctx.appHandle,
          shop,
          query: input.query as string,
          variables,
          apiVersion,
          signal: ctx.signal,
        });
        return { shop, apiVersion, status, body };
      },
    },
    {
      name: 'service.logs.search',
      title: 'Search run logs',
      description:
        'Searches the log lines of one run of this shop with the log query language (resource service://docs/log-search); newest first, with context lines around matches.',
      requiredPermissions: ['read_logs'],
      riskLevel: 'medium',
      inputSchema: LOG_SEARCH_SCHEMA,
      annotations: readOnly,
      builtIn: true,
      async run(ctx, input) {
        if (!isUuid(input.runId)) throw invalid(`runId: "${String(input.runId)}" is not a run id`);
        const levels = parseLevels(input.levels);
        if (!deps.logs) throw unavailable('Log search');
        const found = await deps.logs.search({ appHandle: ctx.appHandle, shop: ctx.shop }, input.runId, {
          query: (input.query as string | undefined) ?? '',
          levels,
          context: (input.context as boolean | undefined) ?? true,
          limit: (input.limit as number | undefined) ?? LOG_SEARCH_DEFAULT_LIMIT,
          signal: ctx.signal,
        });
        if (!found) throw invalid(`runId: run ${input.runId} not found`);
        return { runId: input.runId, ...found };
      },
    },
    {
      name: 'service.flows.list',
      title: 'List flows',
      description: 'Lists the registered flows with their descriptions, input JSON schemas, concurrency, time-outs and configured crons.',
      requiredPermissions: ['read_flows'],
      riskLevel: 'low',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      annotations: readOnly,
      builtIn: true,
      run: () => ({ flows: describeFlows({ registry: deps.registry, config: deps.config }) }),
    },
    {
      name: 'service.flows.run',
      title: 'Run a flow',
      description:
        "Dispatches a flow for the token's shop (never another shop) and returns the new run's id; the run executes in the background. Inputs are checked against the flow's input schema.",
      requiredPermissions: ['run_flows'],
      riskLevel: 'high',
      inputSchema: {
        type: 'object',
        properties: {
          flow: { type: 'string', description: 'The flow name (see service.flows.list).' },
          input: { type: 'object', description: 'The flow input. Default {}.' },
        },
        required: ['flow'],
        additionalProperties: false,
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      builtIn: true,
      async run(ctx, input) {
        const result = await deps.dispatch({
          appHandle: ctx.appHandle,
          shop: ctx.shop,
          flowName: input.flow as string,
          input: input.input ?? {},
          trigger: 'mcp',
        });
        return { ...result, flow: input.flow, shop: ctx.shop };
      },
    },
    {
      name: 'service.crons.list',
      title: 'List crons',
      description:
        "Lists the configured crons with their schedules and whether each is enabled for the token's shop (including its override state).",
      requiredPermissions: ['read_crons'],
      riskLevel: 'low',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      annotations: readOnly,
      builtIn: true,
      async run(ctx) {
        if (!deps.crons) throw unavailable('Crons');
        return { crons: await deps.crons.listCrons(ctx.appHandle, ctx.shop) };
      },
    },
    {
      name: 'service.crons.set_enabled',
      title: 'Enable or disable a cron',
      description: "Turns a cron on or off for the token's shop. `key` is the cron key from service.crons.list (`<flow>:<schedule>`).",
      requiredPermissions: ['manage_crons'],
      riskLevel: 'medium',
      inputSchema: {
        type: 'object',
        properties: { key: { type: 'string', description: 'The cron key.' }, enabled: { type: 'boolean' } },
        required: ['key', 'enabled'],
        additionalProperties: false,
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      builtIn: true,
      async run(ctx, input) {
        if (!deps.crons) throw unavailable('Crons');
        const result = await deps.crons.setCronEnabled(ctx.appHandle, ctx.shop, input.key as string, input.enabled as boolean);
        return typeof result === 'object' && result !== null && !Array.isArray(result)
          ? (result as Record<string, unknown>)
          : { ok: true, key: input.key, enabled: input.enabled };
      },
    },
  ];
}
