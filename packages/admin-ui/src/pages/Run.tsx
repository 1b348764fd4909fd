/** One run: its details, the step timeline, cancel / retry / delete, live while active, and its logs. */
import { Badge, Banner, BlockStack, Box, Button, Card, InlineStack, Layout, Link, Modal, Page, Spinner, Text } from '@shopify/polaris';
import type { CancelRunResponse, DeleteRunResponse, RetryMode, RetryRunResponse, RunDetail, StepRow } from 'mercato/api';
import { useState } from 'react';
import { ACTIVE_STATUSES, RunStateBadge, RunStatusBadge, runState } from '../components/badges.tsx';
import { JsonBlock } from '../components/JsonBlock.tsx';
import { Waterfall } from '../components/Waterfall.tsx';
import { WaitingBanner } from '../components/waiting.tsx';
import { ErrorBanner, LoadingPage } from '../components/states.tsx';
import { ApiError, api, errorMessage } from '../lib/api.ts';
import { useShell } from '../lib/context.tsx';
import { durationBetween, formatDateTime, formatDuration, formatMoment, formatRelative } from '../lib/format.ts';
import { useRouter } from '../lib/router.tsx';
import { RunLogs } from './RunLogs.tsx';
import { useRunWatch } from './useRunWatch.ts';

function Detail({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="run-detail">
      <Text as="dt" tone="subdued" variant="bodySm">
        {label}
      </Text>
      <dd>{children}</dd>
    </div>
  );
}

/**
 * A step's state: a `running` step is the one the run is in now while the run runs; once the run stopped running
 * (canceled, lease lost, waiting to retry) that step was interrupted. A sleep of a run that has finished (canceled
 * while asleep) was cut short: interrupted too, as the waterfall shows it.
 */
function stepState(step: StepRow, run: RunDetail): string {
  if (step.status === 'running' && run.status !== 'running') return 'interrupted';
  if (step.status === 'sleeping' && !ACTIVE_STATUSES.includes(run.status)) return 'interrupted';
  return step.status;
}

function StepItem({ step, run }: { step: StepRow; run: RunDetail }) {
  const [open, setOpen] = useState(false);
  const hasResult = step.result !== null && step.result !== undefined;
  const state = stepState(step, run);
  return (
    <li data-status={state} aria-current={state === 'running' ? 'step' : undefined}>
      <BlockStack gap="100">
        <InlineStack gap="200" blockAlign="center">
          <Text as="h3" variant="headingSm">
            {step.name}
          </Text>
          {state === 'interrupted' ? <Badge>Interrupted</Badge> : <RunStatusBadge status={step.status} />}
          <Text as="span" tone="subdued">
            attempt {step.attempt} · {formatDateTime(step.startedAt)} ·{' '}
            {step.durationMs !== null
              ? formatDuration(step.durationMs)
              : state === 'sleeping'
                ? 'sleeping'
                : state === 'running'
                  ? 'running now'
                  : 'did not finish'}
          </Text>
        </InlineStack>
        {step.error ? (
          <Text as="p" tone="critical">
            {step.error.name}: {step.error.message}
          </Text>
        ) : null}
        {hasResult ? (
          <>
            <InlineStack>
              <Button
                variant="plain"
                onClick={() => setOpen((v) => !v)}
                ariaExpanded={open}
                accessibilityLabel={`${open ? 'Hide' : 'Show'} result of step ${step.name}`}
              >
                {open ? 'Hide result' : 'Show result'}
              </Button>
            </InlineStack>
            {open ? <JsonBlock value={step.result} label={`Result of step ${step.name}`} /> : null}
          </>
        ) : null}
      </BlockStack>
    </li>
  );
}

function Timeline({ run }: { run: RunDetail }) {
  const active = ACTIVE_STATUSES.includes(run.status);
  return (
    <Card>
      <BlockStack gap="300">
        <Text as="h2" variant="headingMd">
          Steps
        </Text>
        {run.steps.length === 0 ? (
          <Text as="p" tone="subdued">
            {active ? 'No step has been recorded yet.' : 'This run recorded no steps.'}
          </Text>
        ) : (
          <ol className="timeline" aria-label="Step timeline">
            {run.steps.map((step) => (
              <StepItem key={step.name} step={step} run={run} />
            ))}
          </ol>
        )}
      </BlockStack>
    </Card>
  );
}

export function RunPage({ id }: { id: string }) {
  const { run, logCount, error, live, restart } = useRunWatch(id);
  const { navigate } = useRouter();
  const { toast } = useShell();
  const [busy, setBusy] = useState<string | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);

  if (!run) {
    if (error) {
      const missing = error instanceof ApiError && error.status === 404;
      return (
        <Page title="Run" backAction={{ content: 'Runs', url: '/runs' }}>
          {missing ? (
            <Banner tone="warning" title="Run not found">
              <p>This run does not exist for this shop, or it was deleted.</p>
            </Banner>
          ) : (
            <ErrorBanner error={error} title="The run could not be loaded" onRetry={restart} />
          )}
        </Page>
      );
    }
    return <LoadingPage title="Run" />;
  }

  const active = ACTIVE_STATUSES.includes(run.status);
  const retrying = runState(run) === 'retrying';
  const current = run.status === 'running' ? run.steps.find((s) => s.status === 'running') : undefined;

  async function act<T>(label: string, path: string, method: string, done: (body: T) => void) {
    setBusy(label);
    try {
      done(await api<T>(path, { method }));
    } catch (e) {
      toast(errorMessage(e), { error: true });
    } finally {
      setBusy(null);
    }
  }

  const cancel = () => act<CancelRunResponse>('cancel', `/api/runs/${id}/cancel`, 'POST', () => (toast('Run canceled'), restart()));
  const retry = (mode: RetryMode) =>
    act<RetryRunResponse>(
      mode,
      `/api/runs/${id}/retry?mode=${mode}`,
      'POST',
      () => (toast(mode === 'reset' ? 'Run restarted from the first step' : 'Run retried from its last completed step'), restart()),
    );
  const remove = () =>
    act<DeleteRunResponse>('delete', `/api/runs/${id}`, 'DELETE', () => {
      setConfirmDelete(false);
      toast('Run deleted');
      navigate('/runs');
    });

  const actions = active
    ? [{ content: 'Cancel run', destructive: true, onAction: () => void cancel(), loading: busy === 'cancel', disabled: !!busy }]
    : [
        {
          content: 'Retry (resume)',
          helpText: 'Keeps completed steps',
          onAction: () => void retry('resume'),
          loading: busy === 'resume',
          disabled: !!busy,
        },
        { content: 'Retry from scratch (reset)', onAction: () => void retry('reset'), loading: busy === 'reset', disabled: !!busy },
        { content: 'Delete', destructive: true, onAction: () => setConfirmDelete(true), disabled: !!busy },
      ];

  return (
    <Page
      title={run.flowName}
      subtitle={`Run ${run.id}`}
      titleMetadata={
        <span data-testid="run-status" data-status={run.status} data-state={runState(run)}>
          <RunStateBadge run={run} />
        </span>
      }
      backAction={{ content: 'Runs', url: '/runs' }}
      secondaryActions={actions}
    >
      <Layout>
        <Layout.Section>
          <BlockStack gap="400">
            {active ? (
              <Box>
                <InlineStack gap="200" blockAlign="center">
                  {live ? <Spinner size="small" accessibilityLabel="Updating live" /> : null}
                  <div role="status">
                    <Text as="p" tone="subdued">
                      {live ? 'This run is active: the page updates as it progresses.' : 'Connecting for live updates…'}
                    </Text>
                    {current ? (
                      <p data-testid="current-step">{`Running step “${current.name}” since ${formatMoment(current.startedAt)}`}</p>
                    ) : null}
                  </div>
                </InlineStack>
              </Box>
            ) : null}
            {error ? <ErrorBanner error={error} title="Live updates are interrupted; retrying" /> : null}
            {run.waiting && run.waiting.reason !== 'retry_backoff' ? <WaitingBanner waiting={run.waiting} runId={run.id} /> : null}
            {retrying ? (
              <Banner tone="warning" title={`Attempt ${run.attempt} failed: retrying`}>
                <p data-testid="next-attempt">
                  {`Next attempt at ${formatMoment(run.nextAttemptAt)} (${formatRelative(run.nextAttemptAt)}).`}
                </p>
                {run.error ? <p>{`${run.error.name}: ${run.error.message}`}</p> : null}
              </Banner>
            ) : run.error ? (
              <Banner tone="critical" title={run.error.name}>
                <p>{run.error.message}</p>
              </Banner>
            ) : null}
            {run.steps.length > 0 || (active && run.waiting) ? (
              <Card>
                <BlockStack gap="300">
                  <Text as="h2" variant="headingMd">
                    Timeline
                  </Text>
                  <Waterfall run={run} active={active} />
                </BlockStack>
              </Card>
            ) : null}
            <Timeline run={run} />
            <RunLogs runId={run.id} logCount={logCount} active={active} />
          </BlockStack>
        </Layout.Section>
        <Layout.Section variant="oneThird">
          <BlockStack gap="400">
            <Card>
              <BlockStack gap="200">
                <Text as="h2" variant="headingMd">
                  Details
                </Text>
                <dl className="run-details">
                  <Detail label="Status">
                    <RunStateBadge run={run} />
                  </Detail>
                  {retrying ? (
                    <Detail label="Next attempt">
                      <span title={formatDateTime(run.nextAttemptAt)}>{formatDateTime(run.nextAttemptAt)}</span>
                    </Detail>
                  ) : null}
                  <Detail label="Flow">
                    <Link url={`/runs?flow=${encodeURIComponent(run.flowName)}`}>{run.flowName}</Link>
                  </Detail>
                  <Detail label="Trigger">{run.trigger}</Detail>
                  <Detail label="Attempt">
                    {run.attempt}
                    {run.lostLeases ? (
                      <Badge tone="warning">{`${run.lostLeases} lost lease${run.lostLeases === 1 ? '' : 's'}`}</Badge>
                    ) : null}
                  </Detail>
                  <Detail label="Created">{formatDateTime(run.createdAt)}</Detail>
                  <Detail label="Started">{formatDateTime(run.startedAt)}</Detail>
                  <Detail label="Finished">{formatDateTime(run.finishedAt)}</Detail>
                  <Detail label="Duration">{run.startedAt ? formatDuration(durationBetween(run.startedAt, run.finishedAt)) : '—'}</Detail>
                  {run.parentRunId ? (
                    <Detail label="Started by run">
                      <Link url={`/runs/${run.parentRunId}`}>{run.parentRunId}</Link>
                    </Detail>
                  ) : null}
                </dl>
              </BlockStack>
            </Card>
            <Card>
              <BlockStack gap="200">
                <Text as="h2" variant="headingMd">
                  Input
                </Text>
                <JsonBlock value={run.input} label="Run input" />
                {run.output !== null && run.output !== undefined ? (
                  <>
                    <Text as="h2" variant="headingMd">
                      Output
                    </Text>
                    <JsonBlock value={run.output} label="Run output" />
                  </>
                ) : null}
              </BlockStack>
            </Card>
          </BlockStack>
        </Layout.Section>
      </Layout>
      <Modal
        open={confirmDelete}
        onClose={() => setConfirmDelete(false)}
        title="Delete this run?"
        primaryAction={{ content: 'Delete run', destructive: true, loading: busy === 'delete', onAction: () => void remove() }}
        secondaryActions={[{ content: 'Cancel', onAction: () => setConfirmDelete(false) }]}
      >
        <Modal.Section>
          <Text as="p">The run, its steps and its logs are deleted. This cannot be undone.</Text>
        </Modal.Section>
      </Modal>
    </Page>
  );
}
