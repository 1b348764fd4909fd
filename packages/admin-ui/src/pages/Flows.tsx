/**
 * Flows: each flow with its last 24 hours (runs, success rate, p50/p95 duration, a sparkline of its runs per hour), its
 * input schema and crons, and a Run button.
 */
import { Badge, BlockStack, Button, Card, Collapsible, InlineStack, Layout, Link, Page, SkeletonBodyText, Text } from '@shopify/polaris';
import type { FlowInfo, FlowListResponse, FlowStatsResponse, FlowStatsRow } from 'mercato/api';
import { useId, useState } from 'react';
import { JsonBlock } from '../components/JsonBlock.tsx';
import { FlowSparkline, flowStatsSentence, formatRate } from '../components/charts/charts.tsx';
import { formatDuration } from '../lib/format.ts';
import { Empty, ErrorPage, LoadingPage } from '../components/states.tsx';
import { type JsonSchema, enumValues, humanize, kindOf, unwrapNullable } from '../lib/schema.ts';
import { useApi } from '../lib/useApi.ts';
import { RunFlowModal } from './RunFlowModal.tsx';

function typeLabel(schema: JsonSchema): string {
  const { schema: inner, nullable } = unwrapNullable(schema);
  const kind = kindOf(inner);
  let label: string = kind;
  if (kind === 'enum')
    label = `one of ${enumValues(inner)
      .map((v) => JSON.stringify(v))
      .join(', ')}`;
  else if (kind === 'array') label = `list of ${typeLabel(inner.items as JsonSchema)}`;
  else if (kind === 'raw') label = 'JSON';
  return nullable ? `${label} or null` : label;
}

function InputSummary({ schema }: { schema: JsonSchema | null }) {
  const [raw, setRaw] = useState(false);
  const collapsibleId = useId();
  const properties = Object.entries(schema?.properties ?? {});
  const required = new Set(schema?.required ?? []);
  return (
    <BlockStack gap="200">
      <Text as="h3" variant="headingSm">
        Input
      </Text>
      {properties.length === 0 ? (
        <Text as="p" tone="subdued">
          {schema ? 'No fields.' : 'No input schema.'}
        </Text>
      ) : (
        <ul className="input-fields">
          {properties.map(([key, child]) => (
            <li key={key}>
              <Text as="span" fontWeight="semibold">
                {child.title ?? humanize(key)}
              </Text>{' '}
              <span className="mono">{key}</span> — {typeLabel(child)}
              {required.has(key) ? ' (required)' : ''}
              {child.description ? ` — ${child.description}` : ''}
            </li>
          ))}
        </ul>
      )}
      {schema ? (
        <>
          <InlineStack>
            <Button
              variant="plain"
              onClick={() => setRaw((v) => !v)}
              ariaExpanded={raw}
              ariaControls={collapsibleId}
              disclosure={raw ? 'up' : 'down'}
            >
              {raw ? 'Hide JSON schema' : 'Show JSON schema'}
            </Button>
          </InlineStack>
          <Collapsible open={raw} id={collapsibleId}>
            <JsonBlock value={schema} label="Input JSON schema" />
          </Collapsible>
        </>
      ) : null}
    </BlockStack>
  );
}

function shopsLabel(shops: unknown): string {
  if (shops === 'global' || shops === undefined) return 'Global (no shop)';
  if (shops === 'all') return 'Every installed shop';
  if (Array.isArray(shops)) return shops.join(', ');
  return String(shops);
}

/** What the stats answer says of a flow: its row, `null` for a flow without runs, `undefined` while loading or failed. */
type FlowFigures = FlowStatsRow | null | undefined;

function Figure({ label, value }: { label: string; value: string }) {
  return (
    <div className="flow-figure">
      <Text as="p" variant="bodySm" tone="subdued">
        {label}
      </Text>
      <Text as="p" variant="headingMd">
        {value}
      </Text>
    </div>
  );
}

/** A flow's last 24 hours: four figures and the sparkline; the sentence for screen readers says the same. */
function FlowLast24Hours({ name, figures, failed }: { name: string; figures: FlowFigures; failed: boolean }) {
  if (figures === undefined) {
    return failed ? (
      <Text as="p" tone="subdued">
        The figures of the last 24 hours could not be loaded.
      </Text>
    ) : (
      <SkeletonBodyText lines={2} />
    );
  }
  return (
    <div className="flow-stats">
      <p className="visually-hidden">{flowStatsSentence(name, figures ?? undefined)}</p>
      <div className="flow-figures" aria-hidden="true">
        <Figure label="Runs, 24 h" value={String(figures?.runs ?? 0)} />
        <Figure label="Success rate" value={formatRate(figures?.successRate ?? null)} />
        <Figure label="p50 duration" value={formatDuration(figures?.p50Ms)} />
        <Figure label="p95 duration" value={formatDuration(figures?.p95Ms)} />
      </div>
      {figures ? (
        <div className="flow-sparkline">
          <FlowSparkline row={figures} />
          <span className="flow-sparkline-caption" aria-hidden="true">
            Runs per hour
          </span>
        </div>
      ) : null}
    </div>
  );
}

function FlowCard({
  flow,
  onRun,
  figures,
  figuresFailed,
}: {
  flow: FlowInfo;
  onRun(): void;
  figures: FlowFigures;
  figuresFailed: boolean;
}) {
  return (
    <Card>
      <BlockStack gap="400">
        <InlineStack align="space-between" blockAlign="center" gap="200">
          <BlockStack gap="100">
            <Text as="h2" variant="headingMd">
              {flow.name}
            </Text>
            {flow.description ? (
              <Text as="p" tone="subdued">
                {flow.description}
              </Text>
            ) : null}
          </BlockStack>
          <InlineStack gap="200">
            <Button url={`/runs?flow=${encodeURIComponent(flow.name)}`}>Runs</Button>
            <Button variant="primary" onClick={onRun} accessibilityLabel={`Run ${flow.name}`}>
              Run
            </Button>
          </InlineStack>
        </InlineStack>
        <FlowLast24Hours name={flow.name} figures={figures} failed={figuresFailed} />
        <InputSummary schema={flow.inputSchema} />
        <BlockStack gap="200">
          <Text as="h3" variant="headingSm">
            Crons
          </Text>
          {flow.crons.length === 0 ? (
            <Text as="p" tone="subdued">
              Not scheduled.
            </Text>
          ) : (
            <ul className="input-fields">
              {flow.crons.map((cron) => (
                <li key={cron.key}>
                  <span className="mono">{cron.schedule}</span> ({cron.timezone}) — {cron.name} — <Badge>{shopsLabel(cron.shops)}</Badge>
                </li>
              ))}
            </ul>
          )}
          {flow.crons.length > 0 ? <Link url="/crons">Manage crons</Link> : null}
        </BlockStack>
      </BlockStack>
    </Card>
  );
}

export function FlowsPage() {
  const res = useApi<FlowListResponse>('/api/flows');
  const stats = useApi<FlowStatsResponse>('/api/stats/flows');
  const [running, setRunning] = useState<FlowInfo | null>(null);
  const figuresOf = (name: string): FlowFigures => (stats.data ? (stats.data.flows.find((f) => f.flowName === name) ?? null) : undefined);
  if (res.error && !res.data) return <ErrorPage title="Flows" error={res.error} onRetry={() => void res.reload()} />;
  if (!res.data) return <LoadingPage title="Flows" />;
  const flows = res.data.flows;
  return (
    <Page
      title="Flows"
      subtitle="Background jobs of this app. Run one by hand, or see its runs."
      secondaryActions={[{ content: 'All runs', url: '/runs' }]}
    >
      <Layout>
        {flows.length === 0 ? (
          <Layout.Section>
            <Card>
              <Empty heading="No flows yet">Define flows in service.config.ts; they appear here.</Empty>
            </Card>
          </Layout.Section>
        ) : (
          flows.map((flow) => (
            <Layout.Section key={flow.name}>
              <FlowCard flow={flow} onRun={() => setRunning(flow)} figures={figuresOf(flow.name)} figuresFailed={Boolean(stats.error)} />
            </Layout.Section>
          ))
        )}
      </Layout>
      {running ? <RunFlowModal flow={running} onClose={() => setRunning(null)} /> : null}
    </Page>
  );
}
