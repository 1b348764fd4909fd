/** The built-in tools (spec, "Built-in MCP tools"). Each returns a plain object: formatted text plus structuredContent. */
import { LATEST_STABLE_API_VERSION } from '../../app/platform.ts';
import { normalizeShopDomain } from '../../app/shop.ts';
import { isUuid } from '../../db/sql.ts';
import { InvalidDispatchError } from '../../flows/errors.ts';
import { describeFlows } from '../../flows/service.ts';
import type { CallContext, ToolSpec } from '../catalog.ts';
import type { LogLevelName, McpDeps } from '../deps.ts';
import { RPC, RpcError } from '../rpc.ts';
import { invalidArguments } from '../execute.ts';
import { type ValidationIssue, preview, shownKey } from '../../app/json-schema.ts';
import { MAX_PRIORITY, MIN_PRIORITY } from '../../app/validate/shaping.ts';
import { OUTPUT_SCHEMAS } from './output-schemas.ts';
import { runTools } from './runs.ts';

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

/** The value at a path of zod issue segments inside `root` (undefined when a segment is missing). */
function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const segment of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

const pointerOf = (path: readonly PropertyKey[]) => path.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** What a zod issue asks for, in the words of the JSON Schema issues (`expected`). */
function expectedOf(issue: Record<string, unknown>): string {
  switch (issue.code) {
    case 'invalid_type':
      return String(issue.expected);
    case 'invalid_value':
      return Array.isArray(issue.values) ? `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}` : 'another value';
    case 'too_small':
      return `${issue.origin === 'string' || issue.origin === 'array' ? 'length ' : ''}${issue.inclusive === false ? '>' : '>='} ${String(issue.minimum)}`;
    case 'too_big':
      return `${issue.origin === 'string' || issue.origin === 'array' ? 'length ' : ''}${issue.inclusive === false ? '<' : '<='} ${String(issue.maximum)}`;
    case 'invalid_format':
      return `a ${String(issue.format)} string`;
    case 'unrecognized_keys':
      return 'no such property';
    default:
      return String(issue.message);
  }
}

/** A flow input's zod issues as argument issues (`/input/...` paths), so flows.run answers like every argument check. */
function flowInputIssues(issues: ReadonlyArray<Record<string, unknown> & { path: PropertyKey[]; message: string }>, input: unknown) {
  return issues.flatMap((issue): ValidationIssue[] => {
    if (issue.code === 'unrecognized_keys' && Array.isArray(issue.keys)) {
      return (issue.keys as string[]).map((key) => ({
        path: `/input${pointerOf([...issue.path, shownKey(key)])}`,
        message: 'is not an allowed property',
        expected: 'no such property',
        received: `property "${shownKey(key)}"`,
      }));
    }
    const received = valueAt(input, issue.path);
    return [
      {
        path: `/input${pointerOf(issue.path)}`,
        message: received === undefined && issue.code === 'invalid_type' ? 'is required' : issue.message,
        expected: expectedOf(issue),
        received: preview(received),
      },
    ];
  });
}

export function builtInTools(deps: McpDeps): ToolSpec[] {
  // MCP tool annotations: destructiveHint and idempotentHint only mean something when readOnlyHint is false.
  const readOnly = { readOnlyHint: true, openWorldHint: false };
  return [
    {
      name: 'service.shops.list',
      title: 'List shops',
      description:
        "Lists the shops this token can reach: by default only the token's own shop; every shop installed for the app when the app enables mcp.crossShopAccess.",
      requiredPermissions: [],
      riskLevel: 'low',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      outputSchema: OUTPUT_SCHEMAS['service.shops.list'],
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
      outputSchema: OUTPUT_SCHEMAS['service.admin.graphql'],
      // a mutation may change or delete shop data; the same document sent twice may act twice
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
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
      outputSchema: OUTPUT_SCHEMAS['service.logs.search'],
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
      outputSchema: OUTPUT_SCHEMAS['service.flows.list'],
      annotations: readOnly,
      builtIn: true,
      run: () => ({ flows: describeFlows({ registry: deps.registry, config: deps.config }) }),
    },
    {
      name: 'service.flows.run',
      title: 'Run a flow',
      description:
        "Dispatches a flow for the token's shop (never another shop) and returns the new run's id; the run executes in the background. Inputs are checked against the flow's input schema. " +
        "A debounced flow may join the run already waiting (`joined: true`, that run's id); `priority` orders the run among the shop's runs.",
      requiredPermissions: ['run_flows'],
      riskLevel: 'high',
      inputSchema: {
        type: 'object',
        properties: {
          flow: { type: 'string', description: 'The flow name (see service.flows.list). Required unless flowName is given.' },
          flowName: { type: 'string', description: 'Alias of flow (the name the admin API uses). Give one of the two.' },
          input: { type: 'object', description: 'The flow input. Default {}.' },
          priority: {
            type: 'integer',
            minimum: MIN_PRIORITY,
            maximum: MAX_PRIORITY,
            description: `Overrides the flow's priority for this run: ${MIN_PRIORITY} to ${MAX_PRIORITY}, higher first among the shop's runs (never ahead of another shop's). Default: the flow's.`,
          },
        },
        additionalProperties: false,
      },
      outputSchema: OUTPUT_SCHEMAS['service.flows.run'],
      // every call starts a new run, and a flow may act outside the service
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      builtIn: true,
      async run(ctx, input) {
        const name = flowNameOf(input);
        const flow = deps.registry.get(name);
        if (!flow) {
          const known = deps.registry.list().map((f) => f.name);
          throw invalidArguments('service.flows.run', [
            {
              path: input.flow !== undefined ? '/flow' : '/flowName',
              message: `is not a registered flow (see service.flows.list)`,
              expected: known.length > 0 ? `one of ${known.map((n) => JSON.stringify(n)).join(', ')}` : 'a registered flow (none is)',
              received: preview(name),
            },
          ]);
        }
        const flowInput = input.input ?? {};
        // the dispatcher checks the input again; checking here first answers with paths, expected and received values
        const parsed = await flow.definition.input.safeParseAsync(flowInput);
        if (!parsed.success) {
          throw invalidArguments('service.flows.run', flowInputIssues(parsed.error.issues as never, flowInput).slice(0, 20));
        }
        let result;
        try {
          result = await deps.dispatch({
            appHandle: ctx.appHandle,
            shop: ctx.shop,
            flowName: name,
            input: flowInput,
            trigger: 'mcp',
            priority: input.priority,
            requestId: ctx.requestId,
          });
        } catch (error) {
          // the dispatcher checks the priority too: its refusal answers like every argument check
          if (error instanceof InvalidDispatchError && error.field === 'priority') {
            throw invalidArguments('service.flows.run', [
              {
                path: '/priority',
                message: error.message.replace(/^priority: /, ''),
                expected: `integer from ${MIN_PRIORITY} to ${MAX_PRIORITY}`,
                received: preview(input.priority),
              },
            ]);
          }
          throw error;
        }
        // a debounced flow's dispatch may join the run already waiting: `joined: true` and that run's id
        return { ...result, flow: name, shop: ctx.shop };
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
      outputSchema: OUTPUT_SCHEMAS['service.crons.list'],
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
      outputSchema: OUTPUT_SCHEMAS['service.crons.set_enabled'],
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
    ...runTools(deps),
  ];
}

/** `flow`, or its alias `flowName` (the admin API's name); both given must agree, one is required. */
function flowNameOf(input: Record<string, unknown>): string {
  const { flow, flowName } = input as { flow?: string; flowName?: string };
  if (flow !== undefined && flowName !== undefined && flow !== flowName) {
    throw invalidArguments('service.flows.run', [
      { path: '/flowName', message: 'must equal flow when both are given', expected: preview(flow), received: preview(flowName) },
    ]);
  }
  const name = flow ?? flowName;
  if (name === undefined) {
    throw invalidArguments('service.flows.run', [
      { path: '/flow', message: 'is required', expected: 'string, or flowName as an alias (required)', received: 'nothing' },
    ]);
  }
  return name;
}
