/** Crons: schedule in words, next fire time, shops mode, last tick, and the per-shop enabled toggle. */
import { Badge, BlockStack, Card, Checkbox, IndexTable, Link, Page, Text } from '@shopify/polaris';
import type { Cron, CronListResponse, CronToggleRequest, CronToggleResponse } from 'mercato/api';
import { useState } from 'react';
import { capitalize } from '../components/badges.tsx';
import { Empty, ErrorPage, LoadingPage } from '../components/states.tsx';
import { api, errorMessage } from '../lib/api.ts';
import { useShell } from '../lib/context.tsx';
import { formatDateTime, formatRelative } from '../lib/format.ts';
import { useApi } from '../lib/useApi.ts';

export function shopsMode(shops: Cron['shops']): string {
  if (shops === 'global') return 'Global (runs without a shop)';
  if (shops === 'all') return 'Every installed shop';
  if (Array.isArray(shops)) return `${shops.length} listed shop${shops.length === 1 ? '' : 's'}: ${shops.join(', ')}`;
  return `Only ${shops}`;
}

function TickCell({ tick }: { tick: Cron['lastTick'] }) {
  if (!tick)
    return (
      <Text as="span" tone="subdued">
        Never fired here
      </Text>
    );
  const label = `${capitalize(tick.status)}${tick.reason ? ` (${tick.reason.replace(/_/g, ' ')})` : ''}`;
  return (
    <BlockStack gap="050">
      <span title={formatDateTime(tick.fireAt)}>{formatRelative(tick.fireAt)}</span>
      {tick.runId ? (
        <Link url={`/runs/${tick.runId}`}>{label}</Link>
      ) : (
        <Text as="span" tone={tick.status === 'failed' ? 'critical' : 'subdued'}>
          {label}
        </Text>
      )}
    </BlockStack>
  );
}

export function CronsPage() {
  const { toast, shop } = useShell();
  const res = useApi<CronListResponse>('/api/crons');
  const [pending, setPending] = useState<string | null>(null);

  const setEnabled = (key: string, enabled: boolean) =>
    res.setData({ crons: (res.data?.crons ?? []).map((c) => (c.key === key ? { ...c, enabled } : c)) });

  // Optimistic: the switch moves at once and moves back if the server refuses.
  async function toggle(cron: Cron, enabled: boolean) {
    setPending(cron.key);
    setEnabled(cron.key, enabled);
    try {
      await api<CronToggleResponse>('/api/crons/toggle', { method: 'POST', json: { key: cron.key, enabled } satisfies CronToggleRequest });
      toast(`${cron.name} ${enabled ? 'enabled' : 'disabled'} for ${shop}`);
    } catch (error) {
      setEnabled(cron.key, !enabled);
      toast(errorMessage(error), { error: true });
    } finally {
      setPending(null);
    }
  }

  if (res.error && !res.data) return <ErrorPage title="Crons" error={res.error} onRetry={() => void res.reload()} />;
  if (!res.data) return <LoadingPage title="Crons" />;
  const crons = res.data.crons;
  return (
    <Page
      title="Crons"
      subtitle={`Scheduled runs of flows. Turning one off affects only ${shop}; the app's configuration is unchanged.`}
      secondaryActions={[{ content: 'Refresh', onAction: () => void res.reload() }]}
    >
      <Card padding="0">
        <IndexTable
          resourceName={{ singular: 'cron', plural: 'crons' }}
          itemCount={crons.length}
          selectable={false}
          loading={res.loading}
          emptyState={<Empty heading="No crons">Add entries to `crons` in service.config.ts to schedule flows.</Empty>}
          headings={[
            { title: 'Cron' },
            { title: 'Schedule' },
            { title: 'Next run' },
            { title: 'Shops' },
            { title: 'Last tick' },
            { title: 'Enabled' },
          ]}
        >
          {crons.map((cron, index) => (
            <IndexTable.Row id={cron.key} key={cron.key} position={index}>
              <IndexTable.Cell>
                <BlockStack gap="050">
                  <Text as="span" fontWeight="semibold">
                    {cron.name}
                  </Text>
                  <Text as="span" tone="subdued" variant="bodySm">
                    flow <Link url={`/runs?flow=${encodeURIComponent(cron.flow)}`}>{cron.flow}</Link>
                  </Text>
                </BlockStack>
              </IndexTable.Cell>
              <IndexTable.Cell>
                <BlockStack gap="050">
                  <span>{cron.description ?? cron.schedule}</span>
                  <Text as="span" tone="subdued" variant="bodySm">
                    <span className="mono">{cron.schedule}</span> · {cron.timezone}
                  </Text>
                </BlockStack>
              </IndexTable.Cell>
              <IndexTable.Cell>
                {cron.nextRunAt ? (
                  <BlockStack gap="050">
                    <span>{formatRelative(cron.nextRunAt)}</span>
                    <Text as="span" tone="subdued" variant="bodySm">
                      {formatDateTime(cron.nextRunAt)}
                    </Text>
                  </BlockStack>
                ) : (
                  '—'
                )}
              </IndexTable.Cell>
              <IndexTable.Cell>
                <BlockStack gap="050">
                  <span>{shopsMode(cron.shops)}</span>
                  {!cron.targeted ? (
                    <Badge tone="info">
                      {cron.shops === 'global' ? 'App-wide: not stopped by this toggle' : 'Does not run for this shop'}
                    </Badge>
                  ) : null}
                </BlockStack>
              </IndexTable.Cell>
              <IndexTable.Cell>
                <TickCell tick={cron.lastTick} />
              </IndexTable.Cell>
              <IndexTable.Cell>
                <Checkbox
                  label={
                    <span>
                      {cron.enabled ? 'On' : 'Off'}
                      <span className="visually-hidden">{` — ${cron.name} enabled for this shop`}</span>
                    </span>
                  }
                  checked={cron.enabled}
                  disabled={pending === cron.key}
                  onChange={(checked) => void toggle(cron, checked)}
                  id={`cron-toggle-${index}`}
                />
              </IndexTable.Cell>
            </IndexTable.Row>
          ))}
        </IndexTable>
      </Card>
    </Page>
  );
}
