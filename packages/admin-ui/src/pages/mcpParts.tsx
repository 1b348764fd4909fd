/** MCP token pieces shared by the list and the detail page: the permission picker, the one-time secret dialog. */
import { BlockStack, Button, Checkbox, InlineStack, Modal, Text } from '@shopify/polaris';
import type { ExpiryOption, McpCapabilities, McpPermission, McpToken } from 'mercato/api';
import { useState } from 'react';
import { RiskBadge, TokenStatusBadge } from '../components/badges.tsx';

/** The ChoiceList value of an expiry option. */
export function expiryValue(option: ExpiryOption): string {
  return option.expiresInDays === null ? 'never' : String(option.expiresInDays);
}

/** The preselected choice: the option the server marks as default, else the one of `defaultExpiresInDays`, else the first. */
export function defaultExpiry(capabilities: McpCapabilities): string {
  const options = capabilities.expiryOptions;
  const chosen = options.find((o) => o.default) ?? options.find((o) => o.expiresInDays === capabilities.defaultExpiresInDays) ?? options[0];
  return chosen ? expiryValue(chosen) : '';
}

export function mcpEndpoint(): string {
  return `${location.origin}/mcp`;
}

export function TokenStatus({ token }: { token: McpToken }) {
  return (
    <InlineStack gap="100">
      <TokenStatusBadge status={token.status} />
      {token.expired && token.status !== 'revoked' ? <TokenStatusBadge status="expired" /> : null}
    </InlineStack>
  );
}

const RISK_ORDER = ['low', 'medium', 'high', 'critical'];

/** Checkboxes grouped by permission group, each marked with its risk; high and critical risks are called out. */
export function PermissionPicker({
  permissions,
  selected,
  onChange,
}: {
  permissions: McpPermission[];
  selected: string[];
  onChange(next: string[]): void;
}) {
  const groups = new Map<string, McpPermission[]>();
  for (const p of permissions) groups.set(p.group, [...(groups.get(p.group) ?? []), p]);
  const risky = selected.map((k) => permissions.find((p) => p.key === k)).filter((p) => p && RISK_ORDER.indexOf(p.riskLevel) >= 2);
  // Grants the server no longer offers (the reserved permissions no tool uses): kept on save, never silently dropped.
  const held = selected.filter((k) => !permissions.some((p) => p.key === k));
  return (
    <BlockStack gap="300">
      {[...groups].map(([group, items]) => (
        <fieldset key={group} className="schema-fieldset">
          <legend>
            <Text as="span" variant="headingSm">
              {group}
            </Text>
          </legend>
          <BlockStack gap="200">
            {items.map((p) => (
              <Checkbox
                key={p.key}
                label={
                  <InlineStack gap="200" blockAlign="center">
                    <span>{p.label}</span>
                    <span className="mono">{p.key}</span>
                    <RiskBadge risk={p.riskLevel} />
                  </InlineStack>
                }
                helpText={p.description ?? undefined}
                checked={selected.includes(p.key)}
                onChange={(checked) => onChange(checked ? [...selected, p.key] : selected.filter((k) => k !== p.key))}
              />
            ))}
          </BlockStack>
        </fieldset>
      ))}
      {held.length > 0 ? (
        <Text as="p" tone="subdued">
          {`Also held, kept as they are: ${held.join(', ')}. No tool uses ${held.length === 1 ? 'this permission' : 'these permissions'}, so ${held.length === 1 ? 'it grants' : 'they grant'} nothing; they are no longer offered.`}
        </Text>
      ) : null}
      {risky.length > 0 ? (
        <Text as="p" tone="caution">
          {`High-risk grants selected: ${risky.map((p) => p!.label).join(', ')}. Give them only to clients you trust.`}
        </Text>
      ) : null}
    </BlockStack>
  );
}

function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <Button
      accessibilityLabel={label}
      onClick={() => {
        const done = () => {
          setCopied(true);
          setTimeout(() => setCopied(false), 2000);
        };
        navigator.clipboard?.writeText(text).then(done, () => {
          const area = document.createElement('textarea');
          area.value = text;
          document.body.append(area);
          area.select();
          document.execCommand('copy');
          area.remove();
          done();
        });
      }}
    >
      {copied ? 'Copied' : 'Copy'}
    </Button>
  );
}

/** Shows a secret once, with copy buttons, the endpoint URL and how to use it. */
export function SecretModal({ title, secret, onClose }: { title: string; secret: string; onClose(): void }) {
  const endpoint = mcpEndpoint();
  const clientConfig = JSON.stringify(
    { mcpServers: { mercato: { type: 'http', url: endpoint, headers: { Authorization: `Bearer ${secret}` } } } },
    null,
    2,
  );
  return (
    <Modal open onClose={onClose} title={title} primaryAction={{ content: 'I have stored it', onAction: onClose }}>
      <Modal.Section>
        <BlockStack gap="300">
          <Text as="p" fontWeight="semibold">
            Copy this secret now: it is shown only once and cannot be read again.
          </Text>
          <InlineStack gap="200" blockAlign="center" wrap={false}>
            <code className="secret-box" data-testid="mcp-secret" aria-label="Token secret">
              {secret}
            </code>
            <CopyButton text={secret} label="Copy the token secret" />
          </InlineStack>
          <Text as="p">Endpoint URL</Text>
          <InlineStack gap="200" blockAlign="center" wrap={false}>
            <code className="secret-box" data-testid="mcp-endpoint">
              {endpoint}
            </code>
            <CopyButton text={endpoint} label="Copy the endpoint URL" />
          </InlineStack>
          <Text as="p" tone="subdued">
            MCP clients send it as <span className="mono">Authorization: Bearer &lt;secret&gt;</span> with JSON-RPC requests to the
            endpoint. Most clients take a configuration like this one:
          </Text>
          <InlineStack gap="200" blockAlign="start" wrap={false}>
            <pre className="json-block" aria-label="Client configuration">
              {clientConfig}
            </pre>
            <CopyButton text={clientConfig} label="Copy the client configuration" />
          </InlineStack>
        </BlockStack>
      </Modal.Section>
    </Modal>
  );
}
