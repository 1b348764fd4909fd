/** MCP: the tokens of this shop, the endpoint, and token creation (permission picker, expiry, secret shown once). */
import { Banner, BlockStack, Card, ChoiceList, IndexTable, Layout, Link, Modal, Page, Text, TextField } from '@shopify/polaris';
import type { CreateMcpTokenRequest, McpCapabilities, McpToken, McpTokenListResponse, McpTokenSecretResponse } from 'mercato/api';
import { useState } from 'react';
import { Empty, ErrorPage, LoadingPage } from '../components/states.tsx';
import { ApiError, api, errorMessage } from '../lib/api.ts';
import { useShell } from '../lib/context.tsx';
import { formatDateTime, formatRelative } from '../lib/format.ts';
import { useRouter } from '../lib/router.tsx';
import { useApi } from '../lib/useApi.ts';
import { PermissionPicker, SecretModal, TokenStatus, defaultExpiry, expiryValue, mcpEndpoint } from './mcpParts.tsx';

function CreateTokenModal({
  capabilities,
  onClose,
  onCreated,
}: {
  capabilities: McpCapabilities;
  onClose(): void;
  onCreated(token: McpToken, secret: string): void;
}) {
  const [name, setName] = useState('');
  const [permissions, setPermissions] = useState<string[]>([]);
  const [expiry, setExpiry] = useState(() => defaultExpiry(capabilities));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string | null>(null);
  const [sending, setSending] = useState(false);

  async function submit() {
    const found: Record<string, string> = {};
    if (!name.trim()) found.name = 'Give the token a name';
    setErrors(found);
    if (Object.keys(found).length) return;
    setSending(true);
    setFailure(null);
    try {
      const choice = capabilities.expiryOptions.find((o) => expiryValue(o) === expiry);
      // Without a choice (a server that offers none) the server's default expiry applies.
      const body: CreateMcpTokenRequest = choice
        ? { name: name.trim(), permissions, expiresInDays: choice.expiresInDays }
        : { name: name.trim(), permissions };
      const answer = await api<McpTokenSecretResponse>('/api/mcp/tokens', { method: 'POST', json: body });
      onCreated(answer.token, answer.secret);
    } catch (error) {
      if (error instanceof ApiError && error.status === 400 && typeof error.body.field === 'string')
        setErrors({ [error.body.field]: error.message });
      else setFailure(errorMessage(error));
    } finally {
      setSending(false);
    }
  }

  return (
    <Modal
      open
      onClose={onClose}
      title="Create an MCP token"
      primaryAction={{ content: 'Create token', onAction: () => void submit(), loading: sending }}
      secondaryActions={[{ content: 'Cancel', onAction: onClose }]}
    >
      <Modal.Section>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <BlockStack gap="400">
            {failure ? (
              <Banner tone="critical" title="The token was not created">
                <p>{failure}</p>
              </Banner>
            ) : null}
            <TextField
              label="Name"
              value={name}
              onChange={setName}
              autoComplete="off"
              error={errors.name}
              helpText="Who or what uses it, e.g. “Support assistant”."
              maxLength={100}
            />
            <BlockStack gap="200">
              <Text as="h3" variant="headingSm">
                Permissions
              </Text>
              <PermissionPicker permissions={capabilities.permissions} selected={permissions} onChange={setPermissions} />
              {errors.permissions ? <p className="field-error">{errors.permissions}</p> : null}
            </BlockStack>
            <ChoiceList
              title="Expires after"
              choices={capabilities.expiryOptions.map((o) => ({ label: o.label, value: expiryValue(o) }))}
              selected={[expiry]}
              onChange={(values) => setExpiry(values[0] ?? defaultExpiry(capabilities))}
              error={errors.expiresInDays ?? errors.expiresAt}
            />
          </BlockStack>
        </form>
      </Modal.Section>
    </Modal>
  );
}

/**
 * A token's permissions in a list row: how many, then their labels on at most two lines (the whole list in the title and
 * on the token's page), so a token holding every permission does not widen the table.
 */
function PermissionSummary({ keys, capabilities }: { keys: string[]; capabilities: McpCapabilities }) {
  if (keys.length === 0) return <Text as="span">None</Text>;
  const labels = keys.map((key) => capabilities.permissions.find((p) => p.key === key)?.label ?? key);
  return (
    <div className="cell-wrap token-permissions" title={labels.join(', ')}>
      <Text as="span">{`${keys.length} permission${keys.length === 1 ? '' : 's'}`}</Text>
      <div className="clamp-2">
        <Text as="span" tone="subdued" variant="bodySm">
          {labels.join(', ')}
        </Text>
      </div>
    </div>
  );
}

export function McpPage() {
  const tokensRes = useApi<McpTokenListResponse>('/api/mcp/tokens');
  const capsRes = useApi<McpCapabilities>('/api/mcp/capabilities');
  const { toast } = useShell();
  const { navigate } = useRouter();
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<McpTokenSecretResponse | null>(null);

  const error = tokensRes.error ?? capsRes.error;
  if (error && !(tokensRes.data && capsRes.data))
    return <ErrorPage title="MCP" error={error} onRetry={() => (void tokensRes.reload(), void capsRes.reload())} />;
  if (!tokensRes.data || !capsRes.data) return <LoadingPage title="MCP" />;
  const tokens = tokensRes.data.tokens;
  const caps = capsRes.data;

  return (
    <Page
      title="MCP"
      subtitle="Tokens that let AI clients use this app's tools for this shop."
      primaryAction={{ content: 'Create token', onAction: () => setCreating(true) }}
    >
      <Layout>
        {!caps.enabled ? (
          <Layout.Section>
            <Banner tone="warning" title="The MCP endpoint is turned off">
              <p>This app sets mcp.enabled to false: tokens can be managed but the endpoint answers no calls.</p>
            </Banner>
          </Layout.Section>
        ) : null}
        <Layout.Section>
          <Card>
            <BlockStack gap="100">
              <Text as="h2" variant="headingMd">
                Endpoint
              </Text>
              <Text as="p">
                <span className="mono">{mcpEndpoint()}</span> — JSON-RPC over POST with{' '}
                <span className="mono">Authorization: Bearer &lt;token secret&gt;</span>.
              </Text>
              <Text as="p" tone="subdued">
                {`${caps.tools.length} tools available; each needs the permissions shown on its token.`}
              </Text>
            </BlockStack>
          </Card>
        </Layout.Section>
        <Layout.Section>
          <Card padding="0">
            <IndexTable
              resourceName={{ singular: 'token', plural: 'tokens' }}
              itemCount={tokens.length}
              selectable={false}
              loading={tokensRes.loading}
              emptyState={<Empty heading="No tokens yet">Create a token to connect an AI client to this shop.</Empty>}
              headings={[
                { title: 'Name' },
                { title: 'Status' },
                { title: 'Permissions' },
                { title: 'Expires' },
                { title: 'Last used' },
                { title: 'Fingerprint' },
              ]}
            >
              {tokens.map((token, index) => (
                <IndexTable.Row id={token.id} key={token.id} position={index} onClick={() => navigate(`/mcp-tokens/${token.id}`)}>
                  <IndexTable.Cell>
                    <div className="cell-wrap token-name">
                      <Link url={`/mcp-tokens/${token.id}`} dataPrimaryLink removeUnderline>
                        {token.name}
                      </Link>
                    </div>
                  </IndexTable.Cell>
                  <IndexTable.Cell>
                    <TokenStatus token={token} />
                  </IndexTable.Cell>
                  <IndexTable.Cell>
                    <PermissionSummary keys={token.permissions} capabilities={caps} />
                  </IndexTable.Cell>
                  <IndexTable.Cell>
                    {token.expiresAt ? <span title={formatDateTime(token.expiresAt)}>{formatRelative(token.expiresAt)}</span> : 'Never'}
                  </IndexTable.Cell>
                  <IndexTable.Cell>
                    {token.lastUsedAt ? <span title={formatDateTime(token.lastUsedAt)}>{formatRelative(token.lastUsedAt)}</span> : 'Never'}
                  </IndexTable.Cell>
                  <IndexTable.Cell>
                    <span className="mono">{token.fingerprint}</span>
                  </IndexTable.Cell>
                </IndexTable.Row>
              ))}
            </IndexTable>
          </Card>
        </Layout.Section>
      </Layout>
      {creating ? (
        <CreateTokenModal
          capabilities={caps}
          onClose={() => setCreating(false)}
          onCreated={(token, value) => {
            setCreating(false);
            setSecret({ token, secret: value });
            toast(`Token ${token.name} created`);
            void tokensRes.reload();
          }}
        />
      ) : null}
      {secret ? (
        <SecretModal title={`Token “${secret.token.name}” created`} secret={secret.secret} onClose={() => setSecret(null)} />
      ) : null}
    </Page>
  );
}
