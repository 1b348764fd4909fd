/** Providers: a form per provider from its field specs, exact error messages next to fields, check button, status badge. */
import { Banner, BlockStack, Button, Card, FormLayout, InlineStack, Layout, Page, Text } from '@shopify/polaris';
import type {
  Provider,
  ProviderCheckResponse,
  ProviderFieldError,
  ProviderListResponse,
  SaveProviderRequest,
  SaveProviderResponse,
} from 'mercato/api';
import { useState } from 'react';
import { FieldInput } from '../components/FieldInput.tsx';
import { ProviderStatusBadge } from '../components/badges.tsx';
import { Empty, ErrorPage, LoadingPage } from '../components/states.tsx';
import { ApiError, api, errorMessage } from '../lib/api.ts';
import { useShell } from '../lib/context.tsx';
import { formatDateTime, formatRelative } from '../lib/format.ts';
import { useApi } from '../lib/useApi.ts';

type Values = Record<string, string | boolean>;

function initialValues(provider: Provider): Values {
  const values: Values = {};
  for (const field of provider.fields) {
    const saved = provider.config[field.name];
    if (field.type === 'checkbox') values[field.name] = saved === true;
    else if (field.type === 'password') values[field.name] = '';
    else values[field.name] = saved === undefined || saved === null ? '' : String(saved);
  }
  return values;
}

function ProviderCard({ provider, onChange }: { provider: Provider; onChange(next: Provider): void }) {
  const { toast } = useShell();
  const [values, setValues] = useState<Values>(() => initialValues(provider));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [checkError, setCheckError] = useState<string | null>(null);
  const [busy, setBusy] = useState<'save' | 'check' | null>(null);

  async function save() {
    setBusy('save');
    setFormError(null);
    try {
      const answer = await api<SaveProviderResponse>(`/api/providers/${encodeURIComponent(provider.name)}`, {
        method: 'PUT',
        json: { config: values } satisfies SaveProviderRequest,
      });
      setErrors({});
      onChange(answer.provider);
      setValues(initialValues(answer.provider));
      toast(`${provider.name} saved`);
    } catch (error) {
      if (error instanceof ApiError && error.status === 400) {
        const list: (Omit<ProviderFieldError, 'field'> & { field?: string })[] = Array.isArray(error.body.errors)
          ? error.body.errors
          : [{ field: error.body.field, message: error.message }];
        const byField: Record<string, string> = {};
        const general: string[] = [];
        for (const item of list) {
          if (item.field && provider.fields.some((f) => f.name === item.field)) byField[item.field] ??= item.message;
          else general.push(item.message);
        }
        setErrors(byField);
        setFormError(general.length ? general.join(' ') : null);
      } else {
        setFormError(errorMessage(error));
      }
    } finally {
      setBusy(null);
    }
  }

  async function check() {
    setBusy('check');
    setCheckError(null);
    try {
      const answer = await api<ProviderCheckResponse>(`/api/providers/${encodeURIComponent(provider.name)}/check`, { method: 'POST' });
      toast(answer.ok ? `${provider.name}: connection works` : `${provider.name}: the check failed`, { error: !answer.ok });
    } catch (error) {
      setCheckError(errorMessage(error));
    } finally {
      setBusy(null);
      try {
        const list = await api<ProviderListResponse>('/api/providers');
        const fresh = list.providers.find((p) => p.name === provider.name);
        if (fresh) onChange(fresh);
      } catch {
        /* the badge stays as it was */
      }
    }
  }

  return (
    <Card>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
        aria-label={`${provider.name} settings`}
      >
        <BlockStack gap="400">
          <InlineStack align="space-between" blockAlign="start" gap="200">
            <BlockStack gap="100">
              <InlineStack gap="200" align="start" blockAlign="center">
                <Text as="h2" variant="headingMd">
                  {provider.name}
                </Text>
                <ProviderStatusBadge status={provider.status} />
              </InlineStack>
              {provider.description ? (
                <Text as="p" tone="subdued">
                  {provider.description}
                </Text>
              ) : null}
              <Text as="p" tone="subdued" variant="bodySm">
                {provider.lastCheckedAt
                  ? `Last checked ${formatRelative(provider.lastCheckedAt)} (${formatDateTime(provider.lastCheckedAt)}): ${provider.lastCheckOk ? 'passed' : 'failed'}`
                  : 'Never checked'}
              </Text>
            </BlockStack>
          </InlineStack>
          {provider.configError ? (
            <Banner tone="warning" title="The saved settings cannot be read">
              <p>{provider.configError}</p>
            </Banner>
          ) : null}
          {formError ? (
            <Banner tone="critical" title="Not saved">
              <p>{formError}</p>
            </Banner>
          ) : null}
          {checkError ? (
            <Banner tone="critical" title="The check failed" onDismiss={() => setCheckError(null)}>
              <p>{checkError}</p>
            </Banner>
          ) : null}
          <FormLayout>
            {provider.fields.map((field) => (
              <FieldInput
                key={field.name}
                field={field}
                value={values[field.name] ?? ''}
                error={errors[field.name]}
                onChange={(v) => setValues((old) => ({ ...old, [field.name]: v }))}
              />
            ))}
          </FormLayout>
          <InlineStack gap="200" align="end">
            {provider.hasChecker ? (
              <Button
                onClick={() => void check()}
                loading={busy === 'check'}
                disabled={busy !== null}
                accessibilityLabel={`Check connection to ${provider.name}`}
              >
                Check connection
              </Button>
            ) : null}
            <Button
              variant="primary"
              submit
              loading={busy === 'save'}
              disabled={busy !== null}
              accessibilityLabel={`Save ${provider.name}`}
            >
              Save
            </Button>
          </InlineStack>
        </BlockStack>
      </form>
    </Card>
  );
}

export function ProvidersPage() {
  const res = useApi<ProviderListResponse>('/api/providers');
  if (res.error && !res.data) return <ErrorPage title="Providers" error={res.error} onRetry={() => void res.reload()} />;
  if (!res.data) return <LoadingPage title="Providers" />;
  const providers = res.data.providers;
  const replace = (next: Provider) => res.setData({ providers: providers.map((p) => (p.name === next.name ? next : p)) });
  return (
    <Page title="Providers" subtitle="Connections to external services, configured per shop. Secrets are encrypted and never shown again.">
      <Layout>
        {providers.length === 0 ? (
          <Layout.Section>
            <Card>
              <Empty heading="No providers">This app defines no providers.</Empty>
            </Card>
          </Layout.Section>
        ) : (
          providers.map((provider) => (
            <Layout.Section key={provider.name}>
              <ProviderCard provider={provider} onChange={replace} />
            </Layout.Section>
          ))
        )}
      </Layout>
    </Page>
  );
}
