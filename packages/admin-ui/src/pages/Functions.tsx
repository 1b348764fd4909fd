/**
 * Functions: the app's function definitions (GET /api/functions) and, for each, its live instances on the platform in
 * this shop (GET /api/functions/:handle/instances) with create, edit and delete (with a confirmation). Nothing is
 * stored in Mercato: every change is a platform mutation, and the platform's refusals come back as userErrors, shown
 * next to their fields. See docs/functions.md.
 */
import { Badge, Banner, BlockStack, Button, ButtonGroup, Card, IndexTable, InlineStack, Layout, Modal, Page, Text } from '@shopify/polaris';
import type {
  DeleteInstanceResponse,
  FunctionDefinitionInfo,
  FunctionInstanceInfo,
  FunctionListResponse,
  InstanceListResponse,
} from 'mercato/api';
import { useState } from 'react';
import { Empty, ErrorBanner, ErrorPage, LoadingBlock, LoadingPage } from '../components/states.tsx';
import { api, errorMessage } from '../lib/api.ts';
import { useShell } from '../lib/context.tsx';
import { formatDateTime } from '../lib/format.ts';
import { configSummary, definitionTitle, deletePath, instanceName, ownerSummary, typeLabel } from '../lib/functions.ts';
import { useApi } from '../lib/useApi.ts';
import { FunctionInstanceModal, type SaveOutcome } from './FunctionInstanceModal.tsx';

const STATUS_TONE = { ACTIVE: 'success', SCHEDULED: 'info', EXPIRED: undefined } as const;

function InstanceStatus({ instance }: { instance: FunctionInstanceInfo }) {
  const mode = instance.owner.mode;
  const enabled = instance.owner.enabled;
  return (
    <InlineStack gap="100">
      {instance.status ? (
        <Badge tone={STATUS_TONE[instance.status]}>{instance.status.charAt(0) + instance.status.slice(1).toLowerCase()}</Badge>
      ) : null}
      {typeof enabled === 'boolean' ? <Badge tone={enabled ? 'success' : undefined}>{enabled ? 'Enabled' : 'Disabled'}</Badge> : null}
      {mode === 'automatic' || mode === 'code' ? <Badge>{mode === 'code' ? 'Code' : 'Automatic'}</Badge> : null}
      {!instance.status && typeof enabled !== 'boolean' && !mode ? (
        <Text as="span" tone="subdued">
          —
        </Text>
      ) : null}
    </InlineStack>
  );
}

function Lines({ lines }: { lines: string[] }) {
  return (
    <BlockStack gap="050">
      {lines.map((line, i) => (
        <Text key={i} as="span" variant="bodySm">
          {line}
        </Text>
      ))}
    </BlockStack>
  );
}

function InstancesTable({
  def,
  instances,
  loading,
  onEdit,
  onDelete,
}: {
  def: FunctionDefinitionInfo;
  instances: FunctionInstanceInfo[];
  loading: boolean;
  onEdit(i: FunctionInstanceInfo): void;
  onDelete(i: FunctionInstanceInfo): void;
}) {
  return (
    <IndexTable
      resourceName={{ singular: 'instance', plural: 'instances' }}
      itemCount={instances.length}
      selectable={false}
      loading={loading}
      headings={[
        { title: 'Instance' },
        { title: 'Status' },
        { title: 'Settings' },
        { title: 'Configuration' },
        { title: 'Actions', alignment: 'end' },
      ]}
    >
      {instances.map((instance, index) => {
        const name = instanceName(def, instance);
        return (
          <IndexTable.Row id={instance.id} key={instance.id} position={index}>
            <IndexTable.Cell>
              <BlockStack gap="050">
                <Text as="span" fontWeight="semibold">
                  {name}
                </Text>
                <span className="mono" data-testid="instance-id">
                  {instance.id}
                </span>
              </BlockStack>
            </IndexTable.Cell>
            <IndexTable.Cell>
              <InstanceStatus instance={instance} />
            </IndexTable.Cell>
            <IndexTable.Cell>
              <Lines lines={ownerSummary(def, instance, formatDateTime)} />
            </IndexTable.Cell>
            <IndexTable.Cell>
              {instance.configError ? (
                <Text as="span" tone="critical" variant="bodySm">
                  {instance.configError}
                </Text>
              ) : instance.config ? (
                <Lines lines={configSummary(def, instance.config)} />
              ) : (
                <Text as="span" tone="subdued" variant="bodySm">
                  No configuration
                </Text>
              )}
            </IndexTable.Cell>
            <IndexTable.Cell>
              <InlineStack align="end">
                <ButtonGroup>
                  <Button onClick={() => onEdit(instance)} disabled={!def.supported.update} accessibilityLabel={`Edit ${name}`}>
                    Edit
                  </Button>
                  <Button
                    tone="critical"
                    onClick={() => onDelete(instance)}
                    disabled={!def.supported.delete}
                    accessibilityLabel={`Delete ${name}`}
                  >
                    Delete
                  </Button>
                </ButtonGroup>
              </InlineStack>
            </IndexTable.Cell>
          </IndexTable.Row>
        );
      })}
    </IndexTable>
  );
}

function DeleteModal({
  def,
  instance,
  onClose,
  onDeleted,
}: {
  def: FunctionDefinitionInfo;
  instance: FunctionInstanceInfo;
  onClose(): void;
  onDeleted(): void;
}) {
  const { shop, toast } = useShell();
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const name = instanceName(def, instance);
  async function remove() {
    setBusy(true);
    setFailure(null);
    try {
      await api<DeleteInstanceResponse>(deletePath(def, instance), { method: 'DELETE' });
      toast(`${name} deleted`);
      onDeleted();
    } catch (error) {
      setFailure(errorMessage(error));
    } finally {
      setBusy(false);
    }
  }
  return (
    <Modal
      open
      onClose={onClose}
      title={`Delete “${name}”?`}
      primaryAction={{ content: 'Delete instance', destructive: true, loading: busy, onAction: () => void remove() }}
      secondaryActions={[{ content: 'Cancel', onAction: onClose }]}
    >
      <Modal.Section>
        <BlockStack gap="300">
          {failure ? (
            <Banner tone="critical" title="Not deleted">
              <p>{failure}</p>
            </Banner>
          ) : null}
          <Text as="p">{`The ${typeLabel(def.type).toLowerCase()} is deleted on the platform at once and stops applying in ${shop}, with its configuration. This cannot be undone.`}</Text>
          <Text as="p" tone="subdued">
            <span className="mono">{instance.id}</span>
          </Text>
        </BlockStack>
      </Modal.Section>
    </Modal>
  );
}

function DefinitionCard({ def }: { def: FunctionDefinitionInfo }) {
  const { shop, toast } = useShell();
  const manageable = def.supported.create;
  const list = useApi<InstanceListResponse>(manageable ? `/api/functions/${encodeURIComponent(def.handle)}/instances` : null);
  const [editing, setEditing] = useState<{ instance?: FunctionInstanceInfo } | null>(null);
  const [deleting, setDeleting] = useState<FunctionInstanceInfo | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const title = definitionTitle(def);

  function saved(outcome: SaveOutcome) {
    setEditing(null);
    if (outcome.kind === 'create') {
      toast(outcome.instance ? `${instanceName(def, outcome.instance)} created` : 'Instance created');
      setNotice(null);
    } else if (outcome.answer.recreated) {
      // The platform has no update for this type: the answer names the instance that now stands.
      setNotice(
        `Saved “${outcome.name}”. The platform cannot update a ${typeLabel(def.type).toLowerCase()}, so it was deleted and created again: its id is now ${outcome.answer.id} (it was ${outcome.answer.previousId ?? 'another id'}).`,
      );
      toast(`${outcome.name} saved`);
    } else {
      toast(`${outcome.name} saved`);
      setNotice(null);
    }
    void list.reload();
  }

  let body = null;
  if (!manageable) {
    body = (
      <Banner tone="info" title="Managed in the platform's admin">
        <p>
          The platform has no API for instances of this type: merchants turn them on in the platform's settings, so there is nothing to
          manage here.
        </p>
      </Banner>
    );
  } else if (list.error && !list.data) {
    body = <ErrorBanner error={list.error} title="The instances could not be loaded" onRetry={() => void list.reload()} />;
  } else if (!list.data) {
    body = <LoadingBlock label={`${title} instances`} />;
  } else {
    const instances = list.data.instances;
    body = (
      <BlockStack gap="300">
        {list.error ? (
          <ErrorBanner error={list.error} title="The instances could not be refreshed" onRetry={() => void list.reload()} />
        ) : null}
        {list.data.function === null ? (
          <Banner tone="warning" title="Not deployed">
            <p>{`No deployed function of this app has the handle ${def.handle}: deploy it with the platform's tooling. Until then the platform refuses new instances.`}</p>
          </Banner>
        ) : null}
        {instances.length === 0 ? (
          <Empty heading="No instances yet" action={<Button onClick={() => setEditing({})}>Create instance</Button>}>
            {`Create one to put this function to work in ${shop}.`}
          </Empty>
        ) : (
          <InstancesTable
            def={def}
            instances={instances}
            loading={list.loading}
            onEdit={(instance) => setEditing({ instance })}
            onDelete={setDeleting}
          />
        )}
      </BlockStack>
    );
  }

  return (
    <Card>
      <section aria-label={`${title} function`}>
        <BlockStack gap="400">
          <InlineStack align="space-between" blockAlign="start" gap="200">
            <BlockStack gap="100">
              <InlineStack gap="200" align="start" blockAlign="center">
                <Text as="h2" variant="headingMd">
                  {title}
                </Text>
                <Badge tone="info">{typeLabel(def.type)}</Badge>
                {def.discountModes ? (
                  <Badge>{def.discountModes.map((m) => (m === 'code' ? 'Code' : 'Automatic')).join(' and ')}</Badge>
                ) : null}
              </InlineStack>
              {def.description ? <Text as="p">{def.description}</Text> : null}
              <Text as="p" tone="subdued" variant="bodySm">
                handle <span className="mono">{def.handle}</span>
                {list.data?.function ? (
                  <>
                    {' · deployed as '}
                    <span className="mono">{list.data.function.apiType}</span>
                  </>
                ) : null}
                {def.fields.length > 0 ? ` · configuration: ${def.fields.map((f) => f.label).join(', ')}` : ' · no configuration fields'}
              </Text>
            </BlockStack>
            {manageable ? (
              <InlineStack gap="200" align="end">
                <Button
                  onClick={() => void list.reload()}
                  loading={list.loading && !!list.data}
                  accessibilityLabel={`Refresh ${title} instances`}
                >
                  Refresh
                </Button>
                <Button variant="primary" onClick={() => setEditing({})} accessibilityLabel={`Create instance of ${title}`}>
                  Create instance
                </Button>
              </InlineStack>
            ) : null}
          </InlineStack>
          {notice ? (
            <Banner tone="success" title="Re-created with a new id" onDismiss={() => setNotice(null)}>
              <p data-testid="recreated-notice">{notice}</p>
            </Banner>
          ) : null}
          {body}
        </BlockStack>
      </section>
      {editing ? (
        <FunctionInstanceModal
          def={def}
          instance={editing.instance}
          onClose={() => setEditing(null)}
          onSaved={saved}
          onRestored={() => void list.reload()}
        />
      ) : null}
      {deleting ? (
        <DeleteModal
          def={def}
          instance={deleting}
          onClose={() => setDeleting(null)}
          onDeleted={() => {
            setDeleting(null);
            setNotice(null);
            void list.reload();
          }}
        />
      ) : null}
    </Card>
  );
}

export function FunctionsPage() {
  const res = useApi<FunctionListResponse>('/api/functions');
  if (res.error && !res.data) return <ErrorPage title="Functions" error={res.error} onRetry={() => void res.reload()} />;
  if (!res.data) return <LoadingPage title="Functions" />;
  const definitions = res.data.functions;
  return (
    <Page
      title="Functions"
      subtitle="Platform functions of this app and their live instances in this shop. Instances live on the platform: every change applies at once."
    >
      <Layout>
        {definitions.length === 0 ? (
          <Layout.Section>
            <Card>
              <Empty heading="No functions">
                Add definitions to `functions` in service.config.ts (docs/functions.md); they appear here with their instances.
              </Empty>
            </Card>
          </Layout.Section>
        ) : (
          definitions.map((def) => (
            <Layout.Section key={def.key}>
              <DefinitionCard def={def} />
            </Layout.Section>
          ))
        )}
      </Layout>
    </Page>
  );
}
