/** Status badges for runs, providers, tokens and crons. */
import { Badge } from '@shopify/polaris';
import type { RunStatus } from 'mercato/api';
import { formatDateTime } from '../lib/format.ts';

type Tone = 'success' | 'critical' | 'warning' | 'attention' | 'info' | 'new' | undefined;

export const RUN_STATUSES: readonly RunStatus[] = ['pending', 'running', 'sleeping', 'completed', 'failed', 'canceled'];
export const ACTIVE_STATUSES: readonly string[] = ['pending', 'running', 'sleeping'] satisfies RunStatus[];

const RUN_TONE: Record<string, Tone> = {
  pending: 'attention',
  running: 'info',
  sleeping: 'new',
  completed: 'success',
  failed: 'critical',
  canceled: undefined,
};

export function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export function RunStatusBadge({ status }: { status: string }) {
  const active = ACTIVE_STATUSES.includes(status);
  return (
    <Badge tone={RUN_TONE[status]} progress={active ? 'partiallyComplete' : status === 'completed' ? 'complete' : undefined}>
      {capitalize(status)}
    </Badge>
  );
}

/** What a run shows: its status, or *Retrying* while it waits for its next attempt after a failed one. */
export function runState(run: { status: string; nextAttemptAt?: string | null }): string {
  return run.status === 'pending' && run.nextAttemptAt ? 'retrying' : run.status;
}

/**
 * A run's badge, the same in every list and on its page: *Retrying* (with the next attempt's time as its title) for a
 * pending run whose last attempt failed, else its status.
 */
export function RunStateBadge({ run }: { run: { status: string; nextAttemptAt?: string | null } }) {
  if (runState(run) !== 'retrying') return <RunStatusBadge status={run.status} />;
  return (
    <span title={`Next attempt ${formatDateTime(run.nextAttemptAt)}`}>
      <Badge tone="warning" progress="partiallyComplete">
        Retrying
      </Badge>
    </span>
  );
}

const PROVIDER_TONE: Record<string, Tone> = { Connected: 'success', Error: 'critical', Configured: 'info', 'Not configured': 'attention' };

export function ProviderStatusBadge({ status }: { status: string }) {
  return <Badge tone={PROVIDER_TONE[status]}>{status}</Badge>;
}

const TOKEN_TONE: Record<string, Tone> = { active: 'success', disabled: 'warning', revoked: 'critical', expired: 'attention' };

export function TokenStatusBadge({ status }: { status: string }) {
  return <Badge tone={TOKEN_TONE[status]}>{capitalize(status)}</Badge>;
}

const RISK_TONE: Record<string, Tone> = { low: 'success', medium: 'attention', high: 'critical', critical: 'critical' };

export function RiskBadge({ risk }: { risk: string }) {
  return <Badge tone={RISK_TONE[risk] ?? 'info'}>{`${capitalize(risk)} risk`}</Badge>;
}

export function LevelBadge({ level }: { level: string }) {
  const tone: Tone = level === 'error' ? 'critical' : level === 'warn' ? 'warning' : 'info';
  return <Badge tone={tone}>{level}</Badge>;
}
