/** The permission catalog: the core permissions with their labels and risks, plus the app's custom ones. */
import { RISK_LEVELS, type McpPermissionDefinition, type RiskLevel } from '../app/types.ts';
import { CORE_PERMISSIONS } from '../app/validate/mcp.ts';
import type { McpPermission } from '../api/types.ts';

/** A permission as the admin API lists it (the admin API contract, src/api/types.ts). */
export type PermissionInfo = McpPermission;

type CoreInfo = Omit<PermissionInfo, 'key' | 'core' | 'reserved'>;

const CORE_INFO: Record<string, CoreInfo> = {
  read_logs: {
    label: 'Search flow-run logs',
    group: 'logs',
    riskLevel: 'medium',
    description: 'Search the logs of the runs of this shop (log lines may hold customer data).',
  },
  read_flows: {
    label: 'List flows and recent runs',
    group: 'flows',
    riskLevel: 'low',
    description: 'See the registered flows, their input schemas and crons, and the recent runs of this shop.',
  },
  run_flows: { label: 'Run flows', group: 'flows', riskLevel: 'high', description: 'Dispatch any registered flow for this shop.' },
  read_crons: {
    label: 'List crons',
    group: 'crons',
    riskLevel: 'low',
    description: "See the configured crons and this shop's enabled state.",
  },
  manage_crons: {
    label: 'Enable or disable crons',
    group: 'crons',
    riskLevel: 'medium',
    description: 'Turn crons on or off for this shop.',
  },
  read_runs: {
    label: 'Read runs',
    group: 'runs',
    riskLevel: 'medium',
    description: 'Read a run of this shop with its input, output, error, steps and newest log lines (they may hold customer data).',
  },
  cancel_runs: {
    label: 'Cancel runs',
    group: 'runs',
    riskLevel: 'medium',
    description: 'Cancel pending, running or sleeping runs of this shop.',
  },
  retry_runs: {
    label: 'Retry runs',
    group: 'runs',
    riskLevel: 'high',
    description: 'Run finished runs of this shop again (the flow acts again, e.g. on the platform).',
  },
  read_providers: {
    label: 'Read providers (reserved)',
    group: 'providers',
    riskLevel: 'medium',
    description: 'Reserved by the capability registry; no capability uses it yet.',
  },
  write_providers: {
    label: 'Write providers (reserved)',
    group: 'providers',
    riskLevel: 'high',
    description: 'Reserved by the capability registry; no capability uses it yet.',
  },
  read_functions: {
    label: 'Read functions (reserved)',
    group: 'functions',
    riskLevel: 'low',
    description: 'Reserved by the capability registry; no capability uses it yet.',
  },
  manage_mcp_tokens: {
    label: 'Manage MCP tokens (reserved)',
    group: 'mcp',
    riskLevel: 'critical',
    description: 'Reserved by the capability registry; no capability uses it yet.',
  },
  platform_admin_graphql: {
    label: 'Run Admin GraphQL',
    group: 'platform',
    riskLevel: 'critical',
    description: 'Run any Admin GraphQL document (queries and mutations) against the shop, limited by the app’s OAuth scopes.',
  },
};

/**
 * Core permissions the spec reserves but no capability uses: granting one gives nothing. They stay valid keys (a token
 * that holds one keeps it, and create / set accept them), but the permission list of the admin API and of
 * `service://permissions` leaves them out, so nobody is offered a grant that does nothing (docs/mcp.md, "Permissions").
 */
export const RESERVED_PERMISSIONS: readonly string[] = ['read_providers', 'write_providers', 'read_functions', 'manage_mcp_tokens'];

/** The permissions to offer: every known one but the reserved. */
export function offeredPermissions(permissions: ReadonlyMap<string, PermissionInfo>): PermissionInfo[] {
  return [...permissions.values()].filter((p) => !p.reserved);
}

export function buildPermissions(custom: Readonly<Record<string, McpPermissionDefinition>>): Map<string, PermissionInfo> {
  const out = new Map<string, PermissionInfo>();
  for (const key of CORE_PERMISSIONS) {
    const info = CORE_INFO[key];
    if (!info) throw new Error(`core permission "${key}" has no description`);
    out.set(key, { key, ...info, core: true, reserved: RESERVED_PERMISSIONS.includes(key) });
  }
  for (const [key, definition] of Object.entries(custom)) {
    out.set(key, {
      key,
      label: definition.label,
      group: definition.group ?? key.slice(0, key.indexOf(':')),
      riskLevel: definition.riskLevel ?? 'medium',
      description: definition.description ?? null,
      core: false,
      reserved: false,
    });
  }
  return out;
}

/** True when every required permission is granted. */
export function covers(granted: ReadonlySet<string> | readonly string[], required: readonly string[]): boolean {
  const set = granted instanceof Set ? granted : new Set(granted as readonly string[]);
  return required.every((p) => set.has(p));
}

/** The highest of the risks (low when empty). */
export function highestRisk(risks: readonly RiskLevel[]): RiskLevel {
  let best = 0;
  for (const risk of risks) best = Math.max(best, RISK_LEVELS.indexOf(risk));
  return RISK_LEVELS[best]!;
}
