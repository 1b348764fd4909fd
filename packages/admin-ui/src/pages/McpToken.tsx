/** One MCP token: metadata, permissions (editable), rotate, disable/enable, revoke with confirmation, latest audits. */
import { Badge, Banner, BlockStack, Card, IndexTable, InlineStack, Layout, Modal, Page, Text } from '@shopify/polaris';
import type {
  McpCapabilities,
  McpTokenDetail,
  McpTokenSecretResponse,
  OkResponse,
  PatchMcpTokenRequest,
  SetMcpPermissionsRequest,
  SetMcpPermissionsResponse,
} from 'mercato/api';
import { Fragment, useState } from 'react';
import { capitalize } from '../components/badges.tsx';
import { Empty, ErrorPage, LoadingPage } from '../components/states.tsx';
import { ApiError, api, errorMessage } from '../lib/api.ts';
import { useShell } from '../lib/context.tsx';
import { formatDateTime, formatDuration, formatRelative } from '../lib/format.ts';
import { useApi } from '../lib/useApi.ts';
import { PermissionPicker, SecretModal, TokenStatus } from './mcpParts.tsx';

type Confirm = 'revoke' | 'rotate' | null;

/** `service.admin.graphql` with a line-break opportunity after each dot, so a narrow column wraps it between words. */
function breakAfterDots(name: string) {
  const parts = name.split('.');
  return parts.map((part, i) => (
    <Fragment key={i}>
      {part}
      {i < parts.length - 1 ? (
        <>
          .<wbr />
        </>
      ) : null}
    </Fragment>
  ));
}

export function McpTokenPage({ id }: { id: string }) {
  const res = useApi<McpTokenDetail>(`/api/mcp/tokens/${encodeURIComponent(id)}`);
  const capsRes = useApi<McpCapabilities>('/api/mcp/capabilities');
  const { toast } = useShell();
  const [confirm, setConfirm] = useState<Confirm>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [editing, setEditing] = useState<string[] | null>(null);
  const [editError, setEditError] = useState<string | null>(null);

  if (res.error && !res.data) {
    if (res.error instanceof ApiError && res.error.status === 404) {
      return (
        <Page title="MCP token" backAction={{ content: 'MCP', url: '/mcp-tokens' }}>
          <Banner tone="warning" title="Token not found">
            <p>This token does not exist for this shop.</p>
          </Banner>
        </Page>
      );
    }
    return <ErrorPage title="MCP token" error={res.error} onRetry={() => void res.reload()} />;
  }
  // The permission labels and the editor need the capabilities: their failure is an error too, not an endless skeleton.
  if (capsRes.error && !capsRes.data) return <ErrorPage title="MCP token" error={capsRes.error} onRetry={() => void capsRes.reload()} />;
  if (!res.data || !capsRes.data) return <LoadingPage title="MCP token" />;
  const token = res.data;
  const revoked = token.status === 'revoked';
  const labelOf = (key: string) => capsRes.data?.permissions.find((p) => p.key === key)?.label ?? key;

  async function run(label: string, action: () => Promise<void>) {
    setBusy(label);
    try {
      await action();
      await res.reload();
    } catch (error) {
      toast(errorMessage(error), { error: true });
    } finally {
      setBusy(null);
    }
  }

  const setStatus = (status: 'active' | 'disabled') =>
    run(status, async () => {
      await api<OkResponse>(`/api/mcp/tokens/${id}`, { method: 'PATCH', json: { status } satisfies PatchMcpTokenRequest });
      toast(status === 'active' ? 'Token enabled' : 'Token disabled: calls with it are refused');
    });
  const rotate = () =>
    run('rotate', async () => {
      const answer = await api<McpTokenSecretResponse>(`/api/mcp/tokens/${id}/rotate`, { method: 'POST' });
      setConfirm(null);
      setSecret(answer.secret);
    });
  const revoke = () =>
    run('revoke', async () => {
      await api<OkResponse>(`/api/mcp/tokens/${id}/revoke`, { method: 'POST' });
      setConfirm(null);
      toast('Token revoked');
    });
  const savePermissions = async () => {
    if (!editing) return;
    setEditError(null);
    setBusy('permissions');
    try {
      await api<SetMcpPermissionsResponse>(`/api/mcp/tokens/${id}/permissions`, {
        method: 'PUT',
        json: { permissions: editing } satisfies SetMcpPermissionsRequest,
      });
      setEditing(null);
      toast('Permissions saved');
      await res.reload();
    } catch (error) {
      setEditError(errorMessage(error));
    } finally {
      setBusy(null);
    }
  };

  const actions = revoked
    ? []
    : [
        { content: 'Edit permissions', onAction: () => setEditing(token.permissions), disabled: !!busy },
        { content: 'Rotate secret', onAction: () => setConfirm('rotate'), disabled: !!busy },
        token.status === 'active'
          ? { content: 'Disable', onAction: () => void setStatus('disabled'), loading: busy === 'disabled', disabled: !!busy }
          : { content: 'Enable', onAction: () => void setStatus('active'), loading: busy === 'active', disabled: !!busy },
        { content: 'Revoke', destructive: true, onAction: () => setConfirm('revoke'), disabled: !!busy },
      ];

  return (
    <Page
      title={token.name}
      titleMetadata={<TokenStatus token={token} />}
      backAction={{ content: 'MCP', url: '/mcp-tokens' }}
      secondaryActions={actions}
    >
      <Layout>
        {revoked ? (
          <Layout.Section>
            <Banner tone="critical" title="Revoked">
              <p>{`This token was revoked${token.revokedAt ? ` ${formatRelative(token.revokedAt)}` : ''}: it can no longer be used, edited or rotated.`}</p>
            </Banner>
          </Layout.Section>
        ) : null}
        <Layout.Section>
          <Card padding="0">
            <BlockStack gap="0">
              <div className="card-heading">
                <Text as="h2" variant="headingMd">
                  Latest calls
                </Text>
              </div>
              <IndexTable
                resourceName={{ singular: 'call', plural: 'calls' }}
                itemCount={token.audits.length}
                selectable={false}
                emptyState={<Empty heading="Not used yet">Calls made with this token appear here (the 10 latest).</Empty>}
                headings={[
                  { title: 'When' },
                  { title: 'Capability' },
                  { title: 'Status' },
                  { title: 'Duration' },
                  { title: 'Shop' },
                  { title: 'Request id' },
                ]}
              >
                {token.audits.map((audit, index) => (
                  <IndexTable.Row id={String(audit.id)} key={audit.id} position={index}>
                    <IndexTable.Cell>
                      <span title={formatDateTime(audit.createdAt)}>{formatRelative(audit.createdAt)}</span>
                    </IndexTable.Cell>
                    <IndexTable.Cell>
                      <div className="cell-wrap audit-capability">
                        <span className="mono">{breakAfterDots(audit.capability)}</span>{' '}
                        <Text as="span" tone="subdued">
                          ({audit.kind})
                        </Text>
                      </div>
                    </IndexTable.Cell>
                    <IndexTable.Cell>
                      <div className="cell-wrap audit-status">
                        <Badge tone={audit.status === 'ok' ? 'success' : 'critical'}>{capitalize(audit.status.replace(/_/g, ' '))}</Badge>
                        {audit.error ? (
                          <Text as="p" tone="critical" variant="bodySm">
                            {audit.error}
                          </Text>
                        ) : null}
                      </div>
                    </IndexTable.Cell>
                    <IndexTable.Cell>{formatDuration(audit.durationMs)}</IndexTable.Cell>
                    <IndexTable.Cell>
                      <div className="cell-wrap audit-shop">{audit.targetShop ?? '—'}</div>
                    </IndexTable.Cell>
                    <IndexTable.Cell>
                      <div className="cell-wrap audit-request-id">
                        <span className="mono">{audit.requestId ?? '—'}</span>
                      </div>
                    </IndexTable.Cell>
                  </IndexTable.Row>
                ))}
              </IndexTable>
            </BlockStack>
          </Card>
        </Layout.Section>
        <Layout.Section variant="oneThird">
          <Card>
            <BlockStack gap="200">
              <Text as="h2" variant="headingMd">
                Token
              </Text>
              <dl className="run-details">
                <div>
                  <Text as="dt" tone="subdued" variant="bodySm">
                    Fingerprint
                  </Text>
                  <dd className="mono">{token.fingerprint}</dd>
                </div>
                <div>
                  <Text as="dt" tone="subdued" variant="bodySm">
                    Expires
                  </Text>
                  <dd>{token.expiresAt ? `${formatDateTime(token.expiresAt)} (${formatRelative(token.expiresAt)})` : 'Never'}</dd>
                </div>
                <div>
                  <Text as="dt" tone="subdued" variant="bodySm">
                    Last used
                  </Text>
                  <dd>{token.lastUsedAt ? formatDateTime(token.lastUsedAt) : 'Never'}</dd>
                </div>
                <div>
                  <Text as="dt" tone="subdued" variant="bodySm">
                    Created
                  </Text>
                  <dd>{formatDateTime(token.createdAt)}</dd>
                </div>
                <div>
                  <Text as="dt" tone="subdued" variant="bodySm">
                    Permissions
                  </Text>
                  <dd>
                    {token.permissions.length === 0 ? (
                      'None'
                    ) : (
                      <InlineStack gap="100">
                        {token.permissions.map((p) => (
                          <Badge key={p}>{labelOf(p)}</Badge>
                        ))}
                      </InlineStack>
                    )}
                  </dd>
                </div>
              </dl>
            </BlockStack>
          </Card>
        </Layout.Section>
      </Layout>
      <Modal
        open={confirm === 'revoke'}
        onClose={() => setConfirm(null)}
        title={`Revoke “${token.name}”?`}
        primaryAction={{ content: 'Revoke token', destructive: true, loading: busy === 'revoke', onAction: () => void revoke() }}
        secondaryActions={[{ content: 'Cancel', onAction: () => setConfirm(null) }]}
      >
        <Modal.Section>
          <Text as="p">Clients using this token lose access at once. Revoking is permanent: the token cannot be enabled again.</Text>
        </Modal.Section>
      </Modal>
      <Modal
        open={confirm === 'rotate'}
        onClose={() => setConfirm(null)}
        title={`Rotate the secret of “${token.name}”?`}
        primaryAction={{ content: 'Rotate secret', loading: busy === 'rotate', onAction: () => void rotate() }}
        secondaryActions={[{ content: 'Cancel', onAction: () => setConfirm(null) }]}
      >
        <Modal.Section>
          <Text as="p">The current secret stops working at once; a new one is shown once. The token keeps its id and permissions.</Text>
        </Modal.Section>
      </Modal>
      {editing ? (
        <Modal
          open
          onClose={() => setEditing(null)}
          title="Edit permissions"
          primaryAction={{ content: 'Save permissions', loading: busy === 'permissions', onAction: () => void savePermissions() }}
          secondaryActions={[{ content: 'Cancel', onAction: () => setEditing(null) }]}
        >
          <Modal.Section>
            <BlockStack gap="300">
              {editError ? <Banner tone="critical">{editError}</Banner> : null}
              <PermissionPicker permissions={capsRes.data.permissions} selected={editing} onChange={setEditing} />
            </BlockStack>
          </Modal.Section>
        </Modal>
      ) : null}
      {secret ? <SecretModal title="New secret" secret={secret} onClose={() => setSecret(null)} /> : null}
    </Page>
  );
}
