/** Runs: search, status and date filters, pagination, multi-select bulk delete. Filters live in the address. */
import {
  Banner,
  BlockStack,
  Card,
  IndexTable,
  InlineGrid,
  Link,
  Modal,
  Page,
  Pagination,
  Select,
  Text,
  TextField,
  useIndexResourceState,
} from '@shopify/polaris';
import type { BulkDeleteRequest, BulkDeleteResponse, RunListResponse } from 'mercato/api';
import { useEffect, useState } from 'react';
import { RUN_STATUSES, RunStateBadge, capitalize, runState } from '../components/badges.tsx';
import { Empty, ErrorBanner, LoadingPage } from '../components/states.tsx';
import { WaitingHint } from '../components/waiting.tsx';
import { api, errorMessage, qs } from '../lib/api.ts';
import { useShell } from '../lib/context.tsx';
import { durationBetween, formatDateTime, formatDuration, formatMoment, formatRelative, shortId } from '../lib/format.ts';
import { useRouter } from '../lib/router.tsx';
import { useApi } from '../lib/useApi.ts';
import { useRunsWatch } from './useRunsWatch.ts';

export const PAGE_SIZE = 25;

/** A `yyyy-mm-dd` day in the browser's time zone → the ISO instant of its start (or end). */
function dayBound(day: string, end: boolean): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  const d = new Date(`${day}T${end ? '23:59:59.999' : '00:00:00'}`);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

export function RunsPage() {
  const { query, navigate, pathname } = useRouter();
  const { toast } = useShell();
  const flow = query.get('flow') ?? '';
  const status = query.get('status') ?? '';
  const from = query.get('from') ?? '';
  const to = query.get('to') ?? '';
  const search = query.get('search') ?? '';
  const offset = Math.max(0, Number(query.get('offset')) || 0);
  const [searchText, setSearchText] = useState(search);
  const [confirming, setConfirming] = useState(false);
  const [deleting, setDeleting] = useState(false);

  const setParams = (changes: Record<string, string>) => {
    // The address of now, not of the last render: a debounced search must not undo a filter chosen meanwhile.
    const next = new URLSearchParams(window.location.search);
    for (const [key, value] of Object.entries(changes)) {
      if (value) next.set(key, value);
      else next.delete(key);
    }
    if (!('offset' in changes)) next.delete('offset');
    const text = next.toString();
    if (text === window.location.search.replace(/^\?/, '')) return;
    navigate(`${pathname}${text ? `?${text}` : ''}`, { replace: true });
  };

  useEffect(() => setSearchText(search), [search]);
  useEffect(() => {
    if (searchText === search) return;
    const timer = setTimeout(() => setParams({ search: searchText.trim() }), 300);
    return () => clearTimeout(timer);
  }, [searchText]);

  const base = flow ? `/api/flows/${encodeURIComponent(flow)}/runs` : '/api/runs';
  const path = `${base}${qs({ limit: PAGE_SIZE, offset, search, status, from: dayBound(from, false), to: dayBound(to, true) })}`;
  const res = useApi<RunListResponse>(path);
  const runs = res.data?.runs ?? [];
  const selection = useIndexResourceState(runs as unknown as { [key: string]: unknown }[]);
  // Live: a run dispatched, moving or finishing anywhere (another tab, a cron, a webhook) reloads the page of runs.
  useRunsWatch(() => void res.refresh());

  useEffect(() => selection.clearSelection(), [path]);

  async function bulkDelete() {
    setDeleting(true);
    try {
      const result = await api<BulkDeleteResponse>('/api/runs/bulk-delete', {
        method: 'POST',
        json: { ids: selection.selectedResources } satisfies BulkDeleteRequest,
      });
      toast(
        `Deleted ${result.deleted} run${result.deleted === 1 ? '' : 's'}${result.skipped ? `; ${result.skipped} skipped (active or already gone)` : ''}`,
      );
      selection.clearSelection();
      setConfirming(false);
      await res.reload();
    } catch (error) {
      toast(errorMessage(error), { error: true });
    } finally {
      setDeleting(false);
    }
  }

  if (!res.data && !res.error) return <LoadingPage title="Runs" />;
  const total = res.data?.total ?? 0;
  const filtered = !!(search || status || from || to);
  const statusOptions = [{ label: 'Any status', value: '' }, ...RUN_STATUSES.map((s) => ({ label: capitalize(s), value: s }))];

  return (
    <Page
      title={flow ? `Runs of ${flow}` : 'Runs'}
      backAction={flow ? { content: 'Flows', url: '/flows' } : undefined}
      secondaryActions={flow ? [{ content: 'All runs', url: '/runs' }] : [{ content: 'Refresh', onAction: () => void res.reload() }]}
    >
      <BlockStack gap="400">
        <Card>
          <InlineGrid columns={{ xs: 1, md: 4 }} gap="300">
            <TextField
              label="Search"
              placeholder="Flow name, status or run id"
              value={searchText}
              onChange={setSearchText}
              clearButton
              onClearButtonClick={() => setSearchText('')}
              autoComplete="off"
            />
            <Select label="Status" options={statusOptions} value={status} onChange={(value) => setParams({ status: value })} />
            <TextField label="Created from" type="date" value={from} onChange={(value) => setParams({ from: value })} autoComplete="off" />
            <TextField label="Created to" type="date" value={to} onChange={(value) => setParams({ to: value })} autoComplete="off" />
          </InlineGrid>
        </Card>
        {res.error ? <ErrorBanner error={res.error} title="Runs could not be loaded" onRetry={() => void res.reload()} /> : null}
        <Card padding="0">
          <IndexTable
            resourceName={{ singular: 'run', plural: 'runs' }}
            itemCount={runs.length}
            selectedItemsCount={selection.allResourcesSelected ? 'All' : selection.selectedResources.length}
            onSelectionChange={selection.handleSelectionChange}
            promotedBulkActions={[{ content: 'Delete runs', onAction: () => setConfirming(true) }]}
            loading={res.loading}
            emptyState={
              <Empty heading={filtered ? 'No runs match these filters' : 'No runs yet'}>
                {filtered ? 'Change the search or the filters.' : 'Run a flow from the Flows page; its runs appear here.'}
              </Empty>
            }
            headings={[
              { title: 'Run' },
              { title: 'Flow' },
              { title: 'Status' },
              { title: 'Trigger' },
              { title: 'Created' },
              { title: 'Duration' },
              { title: 'Error' },
            ]}
          >
            {runs.map((run, index) => (
              <IndexTable.Row id={run.id} key={run.id} position={index} selected={selection.selectedResources.includes(run.id)}>
                <IndexTable.Cell>
                  <Link url={`/runs/${run.id}`} dataPrimaryLink removeUnderline>
                    <span className="mono">{shortId(run.id)}</span>
                  </Link>
                </IndexTable.Cell>
                <IndexTable.Cell>{run.flowName}</IndexTable.Cell>
                <IndexTable.Cell>
                  <span className="run-state" data-run-id={run.id} data-state={runState(run)}>
                    <RunStateBadge run={run} />
                    {run.nextAttemptAt && runState(run) === 'retrying' ? (
                      <Text as="span" tone="subdued" variant="bodySm">
                        <span title={formatDateTime(run.nextAttemptAt)}>{` next attempt at ${formatMoment(run.nextAttemptAt)}`}</span>
                      </Text>
                    ) : null}
                    {run.waiting ? <WaitingHint waiting={run.waiting} /> : null}
                  </span>
                </IndexTable.Cell>
                <IndexTable.Cell>{run.trigger}</IndexTable.Cell>
                <IndexTable.Cell>
                  <span title={formatDateTime(run.createdAt)}>{formatRelative(run.createdAt)}</span>
                </IndexTable.Cell>
                <IndexTable.Cell>{run.startedAt ? formatDuration(durationBetween(run.startedAt, run.finishedAt)) : '—'}</IndexTable.Cell>
                <IndexTable.Cell>
                  <Text as="span" tone="critical" truncate>
                    {run.errorSummary ?? ''}
                  </Text>
                </IndexTable.Cell>
              </IndexTable.Row>
            ))}
          </IndexTable>
        </Card>
        <Pagination
          hasPrevious={offset > 0}
          onPrevious={() => setParams({ offset: String(Math.max(0, offset - PAGE_SIZE)) })}
          hasNext={offset + PAGE_SIZE < total}
          onNext={() => setParams({ offset: String(offset + PAGE_SIZE) })}
          label={total === 0 ? 'No runs' : `${offset + 1}–${Math.min(offset + PAGE_SIZE, total)} of ${total}`}
        />
      </BlockStack>
      <Modal
        open={confirming}
        onClose={() => setConfirming(false)}
        title={`Delete ${selection.selectedResources.length} run${selection.selectedResources.length === 1 ? '' : 's'}?`}
        primaryAction={{ content: 'Delete', destructive: true, loading: deleting, onAction: () => void bulkDelete() }}
        secondaryActions={[{ content: 'Cancel', onAction: () => setConfirming(false) }]}
      >
        <Modal.Section>
          <BlockStack gap="200">
            <Text as="p">Their steps and logs are deleted too. Active runs are skipped: cancel them first.</Text>
            {selection.selectedResources.length > 100 ? <Banner tone="warning">At most 100 runs can be deleted at once.</Banner> : null}
          </BlockStack>
        </Modal.Section>
      </Modal>
    </Page>
  );
}
