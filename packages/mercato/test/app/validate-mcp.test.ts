/** Start-up validation of the `mcp` option: custom permissions, tools and resources. One test per rule. */
import { describe, expect, it } from 'vitest';
import { CUSTOM_PERMISSION, permissionKeyProblem } from '../../src/app/validate/mcp.ts';
import { problemsAfter } from './validate-fixture.ts';

function rule(name: string, change: (config: any, base: any) => void, expected: string[]): void {
  it(name, () => {
    expect(problemsAfter(change)).toEqual(expected);
  });
}

const P = 'mcp.permissions';
const FORMAT =
  'does not match namespace:action_resource (for example "orders:read_orders": lower-case namespace, then an action and a resource joined by _)';

describe('configuration validation: mcp options', () => {
  rule(
    'mcp must be an object',
    (c) => {
      c.mcp = true;
    },
    ['mcp: must be an object (got true)'],
  );
  rule(
    'enabled and crossShopAccess must be booleans',
    (c) => {
      c.mcp.enabled = 'yes';
      c.mcp.crossShopAccess = 1;
    },
    ['mcp.enabled: must be a boolean (got "yes")', 'mcp.crossShopAccess: must be a boolean (got 1)'],
  );
  rule(
    'mcp rejects unknown keys',
    (c) => {
      c.mcp.tool = {};
    },
    ['mcp.tool: unknown mcp option (did you mean "tools"?); allowed: enabled, crossShopAccess, permissions, tools, resources'],
  );
});

describe('configuration validation: mcp permissions', () => {
  rule(
    'permissions must be an object',
    (c) => {
      c.mcp.permissions = ['orders:read_orders'];
      c.mcp.tools = {};
      c.mcp.resources = {};
    },
    [`${P}: must be an object mapping permission keys to definitions (got an array)`],
  );
  rule(
    'key must match namespace:action_resource',
    (c) => {
      c.mcp.permissions['Orders:read'] = { label: 'Orders' };
    },
    [`${P}["Orders:read"]: "Orders:read" ${FORMAT}`],
  );
  rule(
    'forbidden names are rejected as a whole key',
    (c) => {
      c.mcp.permissions['*'] = { label: 'Everything' };
      c.mcp.permissions.full_access = { label: 'Everything' };
    },
    [`${P}["*"]: "*" is a forbidden permission name`, `${P}.full_access: "full_access" is a forbidden permission name`],
  );
  rule(
    'forbidden names are rejected as namespace, action, resource or action_resource',
    (c) => {
      c.mcp.permissions['admin:read_orders'] = { label: 'a' };
      c.mcp.permissions['orders:all_orders'] = { label: 'b' };
      c.mcp.permissions['orders:read_all'] = { label: 'c' };
      c.mcp.permissions['orders:full_access'] = { label: 'd' };
    },
    [
      `${P}["admin:read_orders"]: the namespace "admin" is a forbidden name (*, all, admin, root, full_access)`,
      `${P}["orders:all_orders"]: the action "all" is a forbidden name (*, all, admin, root, full_access)`,
      `${P}["orders:read_all"]: the resource "all" is a forbidden name (*, all, admin, root, full_access)`,
      `${P}["orders:full_access"]: the action_resource part "full_access" is a forbidden name (*, all, admin, root, full_access)`,
    ],
  );
  rule(
    'a core permission name cannot be redefined',
    (c) => {
      c.mcp.permissions.read_logs = { label: 'Logs' };
    },
    [`${P}.read_logs: "read_logs" is a core permission and cannot be redefined`],
  );
  rule(
    'the service namespace is reserved',
    (c) => {
      c.mcp.permissions['service:read_things'] = { label: 'Things' };
    },
    [`${P}["service:read_things"]: the namespace "service" is reserved for built-in capabilities`],
  );
  rule(
    'a malformed (non-object) permission is rejected',
    (c) => {
      c.mcp.permissions['crm:write_customer_notes'] = 'Write notes';
    },
    [`${P}["crm:write_customer_notes"]: must be an object { label, group?, riskLevel?, description? } (got "Write notes")`],
  );
  rule(
    'label is required and non-empty',
    (c) => {
      c.mcp.permissions['crm:write_customer_notes'] = { riskLevel: 'high' };
    },
    [`${P}["crm:write_customer_notes"].label: must be a non-empty string (got undefined)`],
  );
  rule(
    'group must be a non-empty string',
    (c) => {
      c.mcp.permissions['orders:read_orders'].group = 3;
    },
    [`${P}["orders:read_orders"].group: must be a non-empty string (default: the key's namespace) (got 3)`],
  );
  rule(
    'riskLevel must be low, medium, high or critical',
    (c) => {
      c.mcp.permissions['orders:read_orders'].riskLevel = 'extreme';
    },
    [`${P}["orders:read_orders"].riskLevel: must be one of low, medium, high, critical (got "extreme")`],
  );
  rule(
    'description must be a string',
    (c) => {
      c.mcp.permissions['orders:read_orders'].description = {};
    },
    [`${P}["orders:read_orders"].description: must be a string (got an object)`],
  );

  it('key format', () => {
    for (const ok of ['orders:read_orders', 'crm:write_customer_notes', 'my_app:sync_order_notes', 'a1:b2_c3'])
      expect(permissionKeyProblem(ok), ok).toBeUndefined();
    for (const bad of [
      'orders',
      'orders:read',
      'orders:_read',
      ':read_orders',
      'orders:read-orders',
      'Orders:read_orders',
      '1orders:read_orders',
      'orders:read_orders:x',
    ]) {
      expect(CUSTOM_PERMISSION.test(bad), bad).toBe(false);
    }
  });
});

describe('configuration validation: mcp tools', () => {
  const T = 'mcp.tools';
  rule(
    'tools must be an object',
    (c) => {
      c.mcp.tools = [];
    },
    [`${T}: must be an object mapping tool names to definitions (got an array)`],
  );
  rule(
    'a tool name must be lower-case alphanumeric segments separated by . _ -',
    (c) => {
      c.mcp.tools['Orders.Lookup'] = c.mcp.tools['orders.lookup'];
      c.mcp.tools['orders..x'] = c.mcp.tools['orders.lookup'];
    },
    [
      `${T}["Orders.Lookup"]: "Orders.Lookup" is not a valid tool name (lower-case alphanumeric segments separated by ".", "_" or "-", e.g. "orders.lookup")`,
      `${T}["orders..x"]: "orders..x" is not a valid tool name (lower-case alphanumeric segments separated by ".", "_" or "-", e.g. "orders.lookup")`,
    ],
  );
  rule(
    'a tool must not take a built-in tool name',
    (c) => {
      c.mcp.tools['service.flows.run'] = c.mcp.tools['orders.lookup'];
    },
    [`${T}["service.flows.run"]: "service.flows.run" is a built-in tool name`],
  );
  rule(
    'the service. prefix is reserved for built-in tools',
    (c) => {
      c.mcp.tools['service.orders.lookup'] = c.mcp.tools['orders.lookup'];
    },
    [`${T}["service.orders.lookup"]: the "service." prefix is reserved for built-in tools`],
  );
  rule(
    'a tool must be an object',
    (c) => {
      c.mcp.tools['orders.lookup'] = () => 'x';
    },
    [`${T}["orders.lookup"]: must be a tool definition object (got a function)`],
  );
  rule(
    'description is required and non-empty',
    (c) => {
      c.mcp.tools['orders.lookup'].description = '';
    },
    [`${T}["orders.lookup"].description: is required: a non-empty string (got "")`],
  );
  rule(
    'requiredPermissions is required',
    (c) => {
      delete c.mcp.tools['orders.lookup'].requiredPermissions;
    },
    [`${T}["orders.lookup"].requiredPermissions: is required: an array of permission keys (may be empty) (got undefined)`],
  );
  rule(
    'requiredPermissions entries must be core or declared permissions',
    (c) => {
      c.mcp.tools['orders.lookup'].requiredPermissions = ['orders:read_orders', 'orders:write_orders', 'read_logs', 5];
    },
    [
      `${T}["orders.lookup"].requiredPermissions[1]: unknown permission "orders:write_orders" (not a core permission nor declared in mcp.permissions)`,
      `${T}["orders.lookup"].requiredPermissions[3]: must be a permission key string (got 5)`,
    ],
  );
  rule(
    'riskLevel must be valid',
    (c) => {
      c.mcp.tools['orders.lookup'].riskLevel = 'none';
    },
    [`${T}["orders.lookup"].riskLevel: must be one of low, medium, high, critical (got "none")`],
  );
  rule(
    'inputSchema must be an object schema',
    (c) => {
      c.mcp.tools['orders.lookup'].inputSchema = { type: 'string' };
      c.mcp.tools['crm_notes-add'].inputSchema = 'object';
    },
    [
      `${T}["orders.lookup"].inputSchema: must be a JSON schema object with type "object" (got "string")`,
      `${T}["crm_notes-add"].inputSchema: must be a JSON schema object with type "object" (got "object")`,
    ],
  );
  rule(
    'run is required',
    (c) => {
      delete c.mcp.tools['crm_notes-add'].run;
    },
    [`${T}["crm_notes-add"].run: is required: a function (got undefined)`],
  );
  rule(
    'title must be a string',
    (c) => {
      c.mcp.tools['orders.lookup'].title = 1;
    },
    [`${T}["orders.lookup"].title: must be a string (got 1)`],
  );
  rule(
    'a tool rejects unknown keys, suggesting the closest one',
    (c) => {
      c.mcp.tools['orders.lookup'].inputschema = { type: 'object' };
    },
    [
      `${T}["orders.lookup"].inputschema: unknown tool option (did you mean "inputSchema"?); allowed: description, title, requiredPermissions, riskLevel, inputSchema, run`,
    ],
  );
});

describe('configuration validation: mcp resources', () => {
  const R = 'mcp.resources';
  rule(
    'resources must be an object',
    (c) => {
      c.mcp.resources = 'orders://recent';
    },
    [`${R}: must be an object mapping resource URIs to definitions (got "orders://recent")`],
  );
  rule(
    'a resource key must be a URI',
    (c) => {
      c.mcp.resources['recent orders'] = c.mcp.resources['orders://recent'];
      c.mcp.resources['/orders/recent'] = c.mcp.resources['orders://recent'];
    },
    [
      `${R}["recent orders"]: "recent orders" is not a URI (scheme:rest, e.g. "orders://recent")`,
      `${R}["/orders/recent"]: "/orders/recent" is not a URI (scheme:rest, e.g. "orders://recent")`,
    ],
  );
  rule(
    'a resource must not take a built-in URI',
    (c) => {
      c.mcp.resources['service://permissions'] = c.mcp.resources['orders://recent'];
    },
    [`${R}["service://permissions"]: "service://permissions" is a built-in resource`],
  );
  rule(
    'the service: scheme is reserved',
    (c) => {
      c.mcp.resources['service://orders'] = c.mcp.resources['orders://recent'];
    },
    [`${R}["service://orders"]: the "service:" scheme is reserved for built-in resources`],
  );
  rule(
    'a resource must be an object',
    (c) => {
      c.mcp.resources['orders://recent'] = '[]';
    },
    [`${R}["orders://recent"]: must be a resource definition object (got "[]")`],
  );
  rule(
    'name is required',
    (c) => {
      delete c.mcp.resources['orders://recent'].name;
    },
    [`${R}["orders://recent"].name: is required: a non-empty string (got undefined)`],
  );
  rule(
    'requiredPermissions is required and checked like tools',
    (c) => {
      c.mcp.resources['orders://recent'].requiredPermissions = ['read_everything'];
    },
    [
      `${R}["orders://recent"].requiredPermissions[0]: unknown permission "read_everything" (not a core permission nor declared in mcp.permissions)`,
    ],
  );
  rule(
    'read is required',
    (c) => {
      c.mcp.resources['orders://recent'].read = '[]';
    },
    [`${R}["orders://recent"].read: is required: a function (got "[]")`],
  );
  rule(
    'description and mimeType must be strings',
    (c) => {
      c.mcp.resources['orders://recent'].description = 1;
      c.mcp.resources['orders://recent'].mimeType = null;
    },
    [`${R}["orders://recent"].description: must be a string (got 1)`, `${R}["orders://recent"].mimeType: must be a string (got null)`],
  );
  rule(
    'a resource rejects unknown keys, suggesting the closest one',
    (c) => {
      c.mcp.resources['orders://recent'].mimetype = 'text/plain';
    },
    [
      `${R}["orders://recent"].mimetype: unknown resource option (did you mean "mimeType"?); allowed: name, description, mimeType, requiredPermissions, read`,
    ],
  );
});
