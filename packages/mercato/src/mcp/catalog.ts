/**
 * The capability registry: built-in and custom tools and resources with their required permissions, and the permission
 * catalog. Built once per process; tools/list and resources/list filter it by a token's grants.
 */
import type { McpConfig, McpResourceDefinition, McpToolContext, McpToolDefinition, RiskLevel } from '../app/types.ts';
import { type PermissionInfo, buildPermissions, covers, highestRisk } from './permissions.ts';
import type { JsonSchema } from '../app/json-schema.ts';

/** What a tool or resource runs with. The token scope (appHandle, shop, tokenId) is immutable. */
/** What a tool or resource handler gets: the public McpToolContext (app/types.ts) plus the request id. */
export interface CallContext extends McpToolContext {
  requestId: string;
}

export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface ToolSpec {
  name: string;
  title?: string;
  description: string;
  requiredPermissions: readonly string[];
  riskLevel: RiskLevel;
  inputSchema: JsonSchema;
  /** When set, every successful result carries `structuredContent` conforming to it (MCP 2025-11-25). */
  outputSchema?: JsonSchema;
  annotations?: ToolAnnotations;
  builtIn: boolean;
  /** Receives the validated arguments. */
  run(ctx: CallContext, input: Record<string, unknown>): unknown;
  /** The shop the call acts on, for the audit record (default: the token's shop). */
  targetShop?(ctx: CallContext, input: Record<string, unknown>): string | null;
}

export type ResourceContent = string | { text: string; mimeType?: string };

export interface ResourceSpec {
  uri: string;
  name: string;
  description?: string;
  mimeType?: string;
  requiredPermissions: readonly string[];
  builtIn: boolean;
  read(ctx: CallContext): unknown;
}

export interface McpCatalog {
  permissions: ReadonlyMap<string, PermissionInfo>;
  tools: ReadonlyMap<string, ToolSpec>;
  resources: ReadonlyMap<string, ResourceSpec>;
  /** tools/list entries for a grant set (computed once per distinct set). */
  listTools(granted: readonly string[]): unknown[];
  /** resources/list entries for a grant set. */
  listResources(granted: readonly string[]): unknown[];
}

/** Thrown at start-up when a custom tool's input schema uses what the validator cannot enforce. */
function customTool(name: string, def: McpToolDefinition, permissions: ReadonlyMap<string, PermissionInfo>): ToolSpec {
  const required = [...def.requiredPermissions];
  return {
    name,
    title: def.title,
    description: def.description,
    requiredPermissions: required,
    riskLevel: def.riskLevel ?? highestRisk(required.map((p) => permissions.get(p)?.riskLevel ?? 'medium')),
    inputSchema: (def.inputSchema as JsonSchema | undefined) ?? { type: 'object' },
    builtIn: false,
    run: (ctx, input) =>
      def.run(
        { appHandle: ctx.appHandle, shop: ctx.shop, tokenId: ctx.tokenId, permissions: ctx.permissions, signal: ctx.signal, db: ctx.db },
        input,
      ),
  };
}

function customResource(uri: string, def: McpResourceDefinition): ResourceSpec {
  return {
    uri,
    name: def.name,
    description: def.description,
    mimeType: def.mimeType,
    requiredPermissions: [...def.requiredPermissions],
    builtIn: false,
    read: (ctx) =>
      def.read({
        appHandle: ctx.appHandle,
        shop: ctx.shop,
        tokenId: ctx.tokenId,
        permissions: ctx.permissions,
        signal: ctx.signal,
        db: ctx.db,
      }),
  };
}

function toolEntry(tool: ToolSpec): Record<string, unknown> {
  const entry: Record<string, unknown> = { name: tool.name, description: tool.description, inputSchema: tool.inputSchema };
  if (tool.title !== undefined) entry.title = tool.title;
  if (tool.outputSchema !== undefined) entry.outputSchema = tool.outputSchema;
  if (tool.annotations !== undefined) entry.annotations = tool.annotations;
  return entry;
}

function resourceEntry(resource: ResourceSpec): Record<string, unknown> {
  const entry: Record<string, unknown> = { uri: resource.uri, name: resource.name };
  if (resource.description !== undefined) entry.description = resource.description;
  if (resource.mimeType !== undefined) entry.mimeType = resource.mimeType;
  return entry;
}

export function createCatalog(
  mcp: Required<Pick<McpConfig, 'permissions' | 'tools' | 'resources'>>,
  builtIns: { tools: ToolSpec[]; resources: ResourceSpec[] },
): McpCatalog {
  const permissions = buildPermissions(mcp.permissions);
  const tools = new Map<string, ToolSpec>();
  for (const tool of builtIns.tools) tools.set(tool.name, tool);
  // inputSchema keywords are checked by the config validation (app/validate/mcp.ts) before the catalog is built
  for (const [name, def] of Object.entries(mcp.tools)) tools.set(name, customTool(name, def, permissions));
  const resources = new Map<string, ResourceSpec>();
  for (const resource of builtIns.resources) resources.set(resource.uri, resource);
  for (const [uri, def] of Object.entries(mcp.resources)) resources.set(uri, customResource(uri, def));

  const toolLists = new Map<string, unknown[]>();
  const resourceLists = new Map<string, unknown[]>();
  const cached = (cache: Map<string, unknown[]>, granted: readonly string[], build: (set: Set<string>) => unknown[]) => {
    const key = [...granted].sort().join(',');
    let list = cache.get(key);
    if (!list) {
      list = build(new Set(granted));
      // Grant sets are few in practice; the bound only protects memory from pathological churn.
      if (cache.size > 1000) cache.clear();
      cache.set(key, list);
    }
    return list;
  };
  return {
    permissions,
    tools,
    resources,
    listTools: (granted) =>
      cached(toolLists, granted, (set) => [...tools.values()].filter((t) => covers(set, t.requiredPermissions)).map(toolEntry)),
    listResources: (granted) =>
      cached(resourceLists, granted, (set) => [...resources.values()].filter((r) => covers(set, r.requiredPermissions)).map(resourceEntry)),
  };
}
