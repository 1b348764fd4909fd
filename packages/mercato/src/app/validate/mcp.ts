/** The `mcp` option: custom permissions, tools and resources, checked against the built-in ones. */
import { schemaProblems } from '../json-schema.ts';
import { RISK_LEVELS } from '../types.ts';
import { at, checkKnownKeys, got, isFunction, isNonEmptyString, isPlainObject, type Problems } from './util.ts';

export const CORE_PERMISSIONS: readonly string[] = [
  'read_logs',
  'read_flows',
  'run_flows',
  'read_crons',
  'manage_crons',
  'read_runs',
  'cancel_runs',
  'retry_runs',
  'read_providers',
  'write_providers',
  'read_functions',
  'manage_mcp_tokens',
  'platform_admin_graphql',
];

export const BUILTIN_TOOLS: readonly string[] = [
  'service.shops.list',
  'service.admin.graphql',
  'service.logs.search',
  'service.flows.list',
  'service.flows.run',
  'service.crons.list',
  'service.crons.set_enabled',
  'service.runs.get',
  'service.runs.cancel',
  'service.runs.retry',
];

export const BUILTIN_RESOURCES: readonly string[] = [
  'service://docs/log-search',
  'service://permissions',
  'service://tools/service.logs.search',
  'service://runs/recent',
];

/** Names that would read as blanket grants. Forbidden as a whole key and as any part of one (namespace, action, resource, or action_resource). */
export const FORBIDDEN_PERMISSION_NAMES: readonly string[] = ['*', 'all', 'admin', 'root', 'full_access'];

/** `namespace:action_resource` — namespace `[a-z][a-z0-9_]*`, action `[a-z][a-z0-9]*` (no `_`), resource `[a-z][a-z0-9_]*`. */
export const CUSTOM_PERMISSION = /^([a-z][a-z0-9_]*):([a-z][a-z0-9]*)_([a-z][a-z0-9_]*)$/;
/** Lower-case alphanumeric segments separated by `.`, `_` or `-`. */
export const TOOL_NAME = /^[a-z0-9]+(?:[._-][a-z0-9]+)*$/;

const MCP_KEYS = ['enabled', 'crossShopAccess', 'permissions', 'tools', 'resources'] as const;

export function checkMcp(problems: Problems, mcp: unknown): void {
  if (mcp === undefined) return;
  if (!isPlainObject(mcp)) {
    problems.add('mcp', `must be an object ${got(mcp)}`);
    return;
  }
  checkKnownKeys(problems, 'mcp', mcp, MCP_KEYS, 'mcp option');
  for (const flag of ['enabled', 'crossShopAccess'] as const) {
    if (mcp[flag] !== undefined && typeof mcp[flag] !== 'boolean') problems.add(at('mcp', flag), `must be a boolean ${got(mcp[flag])}`);
  }
  const declared = checkPermissions(problems, mcp.permissions);
  const known = new Set([...CORE_PERMISSIONS, ...declared]);
  checkTools(problems, mcp.tools, known);
  checkResources(problems, mcp.resources, known);
}

/** Returns the declared custom permission keys (even malformed ones, so references to them are not reported twice). */
function checkPermissions(problems: Problems, permissions: unknown): string[] {
  if (permissions === undefined) return [];
  if (!isPlainObject(permissions)) {
    problems.add('mcp.permissions', `must be an object mapping permission keys to definitions ${got(permissions)}`);
    return [];
  }
  for (const [key, definition] of Object.entries(permissions)) {
    const path = at('mcp.permissions', key);
    const keyProblem = permissionKeyProblem(key);
    if (keyProblem) problems.add(path, keyProblem);
    if (!isPlainObject(definition)) {
      problems.add(path, `must be an object { label, group?, riskLevel?, description? } ${got(definition)}`);
      continue;
    }
    if (!isNonEmptyString(definition.label)) problems.add(at(path, 'label'), `must be a non-empty string ${got(definition.label)}`);
    if (definition.group !== undefined && !isNonEmptyString(definition.group)) {
      problems.add(at(path, 'group'), `must be a non-empty string (default: the key's namespace) ${got(definition.group)}`);
    }
    if (definition.description !== undefined && typeof definition.description !== 'string') {
      problems.add(at(path, 'description'), `must be a string ${got(definition.description)}`);
    }
    checkRiskLevel(problems, at(path, 'riskLevel'), definition.riskLevel);
  }
  return Object.keys(permissions);
}

export function permissionKeyProblem(key: string): string | undefined {
  if (FORBIDDEN_PERMISSION_NAMES.includes(key)) return `${JSON.stringify(key)} is a forbidden permission name`;
  if (CORE_PERMISSIONS.includes(key)) return `${JSON.stringify(key)} is a core permission and cannot be redefined`;
  const match = CUSTOM_PERMISSION.exec(key);
  if (!match) {
    return `${JSON.stringify(key)} does not match namespace:action_resource (for example "orders:read_orders": lower-case namespace, then an action and a resource joined by _)`;
  }
  const [, namespace, action, resource] = match;
  const parts: Array<[string, string]> = [
    ['namespace', namespace],
    ['action', action],
    ['resource', resource],
    ['action_resource part', `${action}_${resource}`],
  ];
  for (const [part, value] of parts) {
    if (FORBIDDEN_PERMISSION_NAMES.includes(value))
      return `the ${part} ${JSON.stringify(value)} is a forbidden name (${FORBIDDEN_PERMISSION_NAMES.join(', ')})`;
  }
  if (namespace === 'service') return 'the namespace "service" is reserved for built-in capabilities';
  return undefined;
}

function checkRiskLevel(problems: Problems, path: string, riskLevel: unknown): void {
  if (riskLevel === undefined) return;
  if (typeof riskLevel !== 'string' || !(RISK_LEVELS as readonly string[]).includes(riskLevel)) {
    problems.add(path, `must be one of ${RISK_LEVELS.join(', ')} ${got(riskLevel)}`);
  }
}

function checkRequiredPermissions(problems: Problems, path: string, value: unknown, known: Set<string>): void {
  if (!Array.isArray(value)) {
    problems.add(path, `is required: an array of permission keys (may be empty) ${got(value)}`);
    return;
  }
  value.forEach((permission, i) => {
    if (typeof permission !== 'string') problems.add(at(path, i), `must be a permission key string ${got(permission)}`);
    else if (!known.has(permission)) {
      problems.add(at(path, i), `unknown permission ${JSON.stringify(permission)} (not a core permission nor declared in mcp.permissions)`);
    }
  });
}

const TOOL_KEYS = ['description', 'title', 'requiredPermissions', 'riskLevel', 'inputSchema', 'run'] as const;
const RESOURCE_KEYS = ['name', 'description', 'mimeType', 'requiredPermissions', 'read'] as const;

function checkTools(problems: Problems, tools: unknown, known: Set<string>): void {
  if (tools === undefined) return;
  if (!isPlainObject(tools)) {
    problems.add('mcp.tools', `must be an object mapping tool names to definitions ${got(tools)}`);
    return;
  }
  for (const [name, tool] of Object.entries(tools)) {
    const path = at('mcp.tools', name);
    if (BUILTIN_TOOLS.includes(name)) problems.add(path, `${JSON.stringify(name)} is a built-in tool name`);
    else if (!TOOL_NAME.test(name)) {
      problems.add(
        path,
        `${JSON.stringify(name)} is not a valid tool name (lower-case alphanumeric segments separated by ".", "_" or "-", e.g. "orders.lookup")`,
      );
    } else if (name.startsWith('service.')) problems.add(path, 'the "service." prefix is reserved for built-in tools');
    if (!isPlainObject(tool)) {
      problems.add(path, `must be a tool definition object ${got(tool)}`);
      continue;
    }
    checkKnownKeys(problems, path, tool, TOOL_KEYS, 'tool option');
    if (!isNonEmptyString(tool.description))
      problems.add(at(path, 'description'), `is required: a non-empty string ${got(tool.description)}`);
    if (tool.title !== undefined && typeof tool.title !== 'string') problems.add(at(path, 'title'), `must be a string ${got(tool.title)}`);
    checkRequiredPermissions(problems, at(path, 'requiredPermissions'), tool.requiredPermissions, known);
    checkRiskLevel(problems, at(path, 'riskLevel'), tool.riskLevel);
    if (tool.inputSchema !== undefined && (!isPlainObject(tool.inputSchema) || tool.inputSchema.type !== 'object')) {
      problems.add(
        at(path, 'inputSchema'),
        `must be a JSON schema object with type "object" ${got(isPlainObject(tool.inputSchema) ? tool.inputSchema.type : tool.inputSchema)}`,
      );
    } else if (tool.inputSchema !== undefined) {
      // only keywords the built-in validator enforces: a schema must not promise a check that would not happen
      problems.list.push(...schemaProblems(tool.inputSchema, at(path, 'inputSchema')));
    }
    if (!isFunction(tool.run)) problems.add(at(path, 'run'), `is required: a function ${got(tool.run)}`);
  }
}

function resourceKeyProblem(uri: string): string | undefined {
  if (BUILTIN_RESOURCES.includes(uri)) return `${JSON.stringify(uri)} is a built-in resource`;
  if (!/^[a-z][a-z0-9+.-]*:\S+$/i.test(uri) || !URL.canParse(uri)) {
    return `${JSON.stringify(uri)} is not a URI (scheme:rest, e.g. "orders://recent")`;
  }
  if (/^service:/i.test(uri)) return 'the "service:" scheme is reserved for built-in resources';
  return undefined;
}

function checkResources(problems: Problems, resources: unknown, known: Set<string>): void {
  if (resources === undefined) return;
  if (!isPlainObject(resources)) {
    problems.add('mcp.resources', `must be an object mapping resource URIs to definitions ${got(resources)}`);
    return;
  }
  for (const [uri, resource] of Object.entries(resources)) {
    const path = at('mcp.resources', uri);
    const keyProblem = resourceKeyProblem(uri);
    if (keyProblem) problems.add(path, keyProblem);
    if (!isPlainObject(resource)) {
      problems.add(path, `must be a resource definition object ${got(resource)}`);
      continue;
    }
    checkKnownKeys(problems, path, resource, RESOURCE_KEYS, 'resource option');
    if (!isNonEmptyString(resource.name)) problems.add(at(path, 'name'), `is required: a non-empty string ${got(resource.name)}`);
    for (const text of ['description', 'mimeType'] as const) {
      if (resource[text] !== undefined && typeof resource[text] !== 'string')
        problems.add(at(path, text), `must be a string ${got(resource[text])}`);
    }
    checkRequiredPermissions(problems, at(path, 'requiredPermissions'), resource.requiredPermissions, known);
    if (!isFunction(resource.read)) problems.add(at(path, 'read'), `is required: a function ${got(resource.read)}`);
  }
}
