/** Flows: each flow with its input schema and crons, and a Run button. */
import { Badge, BlockStack, Button, Card, Collapsible, InlineStack, Layout, Link, Page, Text } from '@shopify/polaris';
import type { FlowInfo, FlowListResponse } from 'mercato/api';
import { useId, useState } from 'react';
import { JsonBlock } from '../components/JsonBlock.tsx';
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

function FlowCard({ flow, onRun }: { flow: FlowInfo; onRun(): void }) {
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
  const [running, setRunning] = useState<FlowInfo | null>(null);
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
              <FlowCard flow={flow} onRun={() => setRunning(flow)} />
            </Layout.Section>
          ))
        )}
      </Layout>
      {running ? <RunFlowModal flow={running} onClose={() => setRunning(null)} /> : null}
    </Page>
  );
}
