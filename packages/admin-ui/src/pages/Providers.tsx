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

/** The form differs from what is saved (a typed password always counts: an empty one keeps the saved value). */
function isDirty(provider: Provider, values: Values): boolean {
  const saved = initialValues(provider);
  return provider.fields.some((field) => values[field.name] !== saved[field.name]);
}

/** The outcome of the last check, shown in the card until the next check or save. */
type CheckOutcome = { ok: true } | { ok: false; reason: string };

/** Why the check could not pass, in the card: the server's message (the checker's error, which says when the settings are not saved). */
function checkFailure(error: unknown): string {
  if (error instanceof ApiError && typeof error.body.error === 'string') return error.body.error;
  return errorMessage(error);
}

function ProviderCard({ provider, onChange }: { provider: Provider; onChange(next: Provider): void }) {
  const { toast } = useShell();
  const [values, setValues] = useState<Values>(() => initialValues(provider));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<CheckOutcome | null>(null);
  const [busy, setBusy] = useState<'save' | 'check' | null>(null);
  const dirty = isDirty(provider, values);
  // The checker runs on the saved settings: nothing to check before they are saved, and unsaved edits would not be checked.
  const checkBlocked = !provider.configured
    ? 'Save the settings to check the connection.'
    : dirty
      ? 'Save your changes first: the check uses the saved settings.'
      : null;
  const hintId = `provider-${provider.name}-check-hint`;

  async function save() {
    setBusy('save');
    setFormError(null);
    try {
      const answer = await api<SaveProviderResponse>(`/api/providers/${encodeURIComponent(provider.name)}`, {
        method: 'PUT',
        json: { config: values } satisfies SaveProviderRequest,
      });
      setErrors({});
      setOutcome(null);
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
    setOutcome(null);
    try {
      const answer = await api<ProviderCheckResponse>(`/api/providers/${encodeURIComponent(provider.name)}/check`, { method: 'POST' });
      setOutcome(
        answer.ok ? { ok: true } : { ok: false, reason: 'The checker reported that the connection does not work; it gave no reason.' },
      );
    } catch (error) {
      setOutcome({ ok: false, reason: checkFailure(error) });
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
          <div role="status" data-testid={`check-outcome-${provider.name}`}>
            {outcome?.ok ? (
              <Banner tone="success" title="Connection works" onDismiss={() => setOutcome(null)}>
                <p>The check passed with the saved settings.</p>
              </Banner>
            ) : outcome ? (
              <Banner tone="critical" title="The check failed" onDismiss={() => setOutcome(null)}>
                <p>{outcome.reason}</p>
              </Banner>
            ) : null}
          </div>
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
          <InlineStack gap="200" align="end" blockAlign="center">
            {provider.hasChecker && checkBlocked ? (
              <Text as="span" tone="subdued" variant="bodySm" id={hintId}>
                {checkBlocked}
              </Text>
            ) : null}
            {provider.hasChecker ? (
              <Button
                onClick={() => void check()}
                loading={busy === 'check'}
                disabled={busy !== null || checkBlocked !== null}
                accessibilityLabel={`Check connection to ${provider.name}`}
                ariaDescribedBy={checkBlocked ? hintId : undefined}
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
