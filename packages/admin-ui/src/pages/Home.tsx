/**
 * Home: runs by status over the last 24 hours, runs over time by status (24 hours / 7 days) with the failure rate,
 * recent failures, provider status, next cron fires.
 */
import { BlockStack, Button, ButtonGroup, Card, InlineStack, Layout, Link, Page, Text } from '@shopify/polaris';
import type { CronListResponse, HomeSummary, ProviderListResponse, RunStatsResponse, StatsRange } from 'mercato/api';
import { useState } from 'react';
import { ProviderStatusBadge, RUN_STATUSES, RunStatusBadge } from '../components/badges.tsx';
import { RunStatsChart, formatRate } from '../components/charts/charts.tsx';
import { Empty, ErrorBanner, LoadingBlock, LoadingCard } from '../components/states.tsx';
import { pageEnabled, useShell } from '../lib/context.tsx';
import { formatDateTime, formatRelative, shortId } from '../lib/format.ts';
import { RouterLink } from '../lib/router.tsx';
import { type Resource, useApi } from '../lib/useApi.ts';
import { useRunsWatch } from './useRunsWatch.ts';

const RANGES: { range: StatsRange; label: string }[] = [
  { range: '24h', label: '24 hours' },
  { range: '7d', label: '7 days' },
];

/** Runs over time by status (GET /api/stats/runs), 24 hours or 7 days, and the failure rate. */
function RunsOverTime({ res, range, onRange }: { res: Resource<RunStatsResponse>; range: StatsRange; onRange(r: StatsRange): void }) {
  const stats = res.data?.range === range ? res.data : undefined;
  const finished = stats ? stats.counts.completed + stats.counts.failed : 0;
  return (
    <Card>
      <BlockStack gap="300">
        <InlineStack align="space-between" blockAlign="center" gap="200">
          <Text as="h2" variant="headingMd">
            Runs over time
          </Text>
          <div role="group" aria-label="Period of the runs chart">
            <ButtonGroup variant="segmented">
              {RANGES.map((r) => (
                <Button key={r.range} pressed={range === r.range} onClick={() => onRange(r.range)}>
                  {r.label}
                </Button>
              ))}
            </ButtonGroup>
          </div>
        </InlineStack>
        {res.error && !stats ? (
          <ErrorBanner error={res.error} title="The runs chart could not be loaded" onRetry={() => void res.reload()} />
        ) : !stats ? (
          <LoadingBlock label="the runs chart" lines={6} />
        ) : (
          <BlockStack gap="200">
            <InlineStack gap="200" blockAlign="baseline" wrap>
              <Text as="p" variant="headingLg">
                {`Failure rate ${formatRate(stats.failureRate)}`}
              </Text>
              <Text as="span" tone="subdued">
                {stats.failureRate === null
                  ? 'no finished runs'
                  : `${stats.counts.failed} of ${finished} finished runs failed, ${stats.range === '24h' ? 'last 24 hours' : 'last 7 days'}`}
              </Text>
            </InlineStack>
            <RunStatsChart stats={stats} />
          </BlockStack>
        )}
      </BlockStack>
    </Card>
  );
}

function RunsSection() {
  const res = useApi<HomeSummary>('/api/home');
  const [range, setRange] = useState<StatsRange>('24h');
  const chart = useApi<RunStatsResponse>(`/api/stats/runs?range=${range}`);
  // Live: the counts, the chart and the failures follow the shop's runs without a reload (one long poll, no timer).
  useRunsWatch(() => {
    void res.refresh();
    void chart.refresh();
  });
  if (res.error && !res.data)
    return <ErrorBanner error={res.error} title="Run counts could not be loaded" onRetry={() => void res.reload()} />;
  if (!res.data) return <LoadingCard label="run counts" />;
  const { counts, total, recentFailures } = res.data;
  const sinceDay = new Date(res.data.since);
  const fromParam = `${sinceDay.getFullYear()}-${String(sinceDay.getMonth() + 1).padStart(2, '0')}-${String(sinceDay.getDate()).padStart(2, '0')}`;
  return (
    <BlockStack gap="400">
      <Card>
        <BlockStack gap="300">
          <InlineStack align="space-between">
            <Text as="h2" variant="headingMd">
              Runs in the last 24 hours
            </Text>
            <Text as="span" tone="subdued">{`${total} in total`}</Text>
          </InlineStack>
          <div className="stat-grid">
            {RUN_STATUSES.map((status) => (
              <RouterLink key={status} url={`/runs?status=${status}&from=${fromParam}`} data-status={status}>
                {/* The link's name is its visible text ("3", the badge's "Completed") and a hidden end, so it reads
                    "3 Completed runs, last 24 hours" (then "2 retrying" for pending runs waiting to retry) and a voice
                    user can say what they see. */}
                <Card background="bg-surface-secondary">
                  <BlockStack gap="100">
                    <Text as="p" variant="headingXl">
                      {String(counts[status] ?? 0)}
                    </Text>
                    <RunStatusBadge status={status} />
                    <span className="visually-hidden"> runs, last 24 hours</span>
                    {status === 'pending' && res.data!.retrying > 0 ? (
                      <Text as="span" tone="subdued" variant="bodySm">
                        {`${res.data!.retrying} retrying`}
                      </Text>
                    ) : null}
                  </BlockStack>
                </Card>
              </RouterLink>
            ))}
          </div>
        </BlockStack>
      </Card>
      <RunsOverTime res={chart} range={range} onRange={setRange} />
      <Card>
        <BlockStack gap="300">
          <Text as="h2" variant="headingMd">
            Recent failures
          </Text>
          {recentFailures.length === 0 ? (
            <Text as="p" tone="subdued">
              No failed runs. All good.
            </Text>
          ) : (
            <ul className="home-list">
              {recentFailures.map((run) => (
                <li key={run.id}>
                  <Link url={`/runs/${run.id}`}>{`${run.flowName} · ${shortId(run.id)}`}</Link>{' '}
                  <Text as="span" tone="subdued">
                    {formatRelative(run.finishedAt ?? run.createdAt)}
                  </Text>
                  {run.errorSummary ? (
                    <Text as="p" tone="critical" truncate>
                      {run.errorSummary}
                    </Text>
                  ) : null}
                </li>
              ))}
            </ul>
          )}
          <Link url="/runs?status=failed">All failed runs</Link>
        </BlockStack>
      </Card>
    </BlockStack>
  );
}

function ProvidersSection() {
  const res = useApi<ProviderListResponse>('/api/providers');
  if (res.error && !res.data)
    return <ErrorBanner error={res.error} title="Providers could not be loaded" onRetry={() => void res.reload()} />;
  if (!res.data) return <LoadingCard label="providers" />;
  return (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          Providers
        </Text>
        {res.data.providers.length === 0 ? (
          <Text as="p" tone="subdued">
            This app defines no providers.
          </Text>
        ) : (
          <ul className="home-list">
            {res.data.providers.map((p) => (
              <li key={p.name}>
                <InlineStack align="space-between" blockAlign="center">
                  <Link url="/providers">{p.name}</Link>
                  <ProviderStatusBadge status={p.status} />
                </InlineStack>
              </li>
            ))}
          </ul>
        )}
      </BlockStack>
    </Card>
  );
}

function CronsSection() {
  const res = useApi<CronListResponse>('/api/crons');
  if (res.error && !res.data) return <ErrorBanner error={res.error} title="Crons could not be loaded" onRetry={() => void res.reload()} />;
  if (!res.data) return <LoadingCard label="crons" />;
  const next = res.data.crons
    .filter((c) => c.nextRunAt && c.enabled && (c.targeted || c.shops === 'global'))
    .sort((a, b) => (a.nextRunAt! < b.nextRunAt! ? -1 : 1))
    .slice(0, 5);
  return (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          Next cron fires
        </Text>
        {next.length === 0 ? (
          <Text as="p" tone="subdued">
            Nothing scheduled for this shop.
          </Text>
        ) : (
          <ul className="home-list">
            {next.map((cron) => (
              <li key={cron.key}>
                <Link url="/crons">{cron.name}</Link>{' '}
                <Text as="span" tone="subdued">
                  <span title={formatDateTime(cron.nextRunAt)}>{formatRelative(cron.nextRunAt)}</span>
                  {` · ${cron.description ?? cron.schedule}`}
                </Text>
              </li>
            ))}
          </ul>
        )}
      </BlockStack>
    </Card>
  );
}

export function HomePage() {
  const { pages, shop } = useShell();
  const flows = pageEnabled(pages, 'flows');
  const providers = pageEnabled(pages, 'providers');
  const crons = pageEnabled(pages, 'crons');
  return (
    <Page title="Home" subtitle={shop}>
      <Layout>
        <Layout.Section>
          {flows ? (
            <RunsSection />
          ) : (
            <Card>
              <Empty heading="Flows are turned off for this app" />
            </Card>
          )}
        </Layout.Section>
        <Layout.Section variant="oneThird">
          <BlockStack gap="400">
            {providers ? <ProvidersSection /> : null}
            {crons ? <CronsSection /> : null}
            {!providers && !crons ? (
              <Card>
                <Text as="p" tone="subdued">
                  No providers or crons pages for this app.
                </Text>
              </Card>
            ) : null}
          </BlockStack>
        </Layout.Section>
      </Layout>
    </Page>
  );
}
