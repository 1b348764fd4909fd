/** Loading, error and empty states shared by every page. */
import {
  Banner,
  BlockStack,
  Box,
  Button,
  Card,
  Layout,
  Page,
  SkeletonBodyText,
  SkeletonDisplayText,
  SkeletonPage,
  Text,
} from '@shopify/polaris';
import type { ReactNode } from 'react';
import { ApiError } from '../lib/api.ts';

export function LoadingPage({ title }: { title: string }) {
  return (
    <SkeletonPage title={title} primaryAction>
      <Layout>
        <Layout.Section>
          <Card>
            <BlockStack gap="400">
              <SkeletonDisplayText size="small" />
              <SkeletonBodyText lines={6} />
            </BlockStack>
          </Card>
        </Layout.Section>
      </Layout>
      <span className="visually-hidden" role="status">
        Loading {title}…
      </span>
    </SkeletonPage>
  );
}

/** Skeleton lines for a part of a card that is loading. */
export function LoadingBlock({ label, lines = 3 }: { label: string; lines?: number }) {
  return (
    <BlockStack gap="200">
      <SkeletonBodyText lines={lines} />
      <span className="visually-hidden" role="status">
        Loading {label}…
      </span>
    </BlockStack>
  );
}

export function LoadingCard({ label }: { label: string }) {
  return (
    <Card>
      <LoadingBlock label={label} />
    </Card>
  );
}

export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.status === 401) return `Your session could not be verified (${error.message}). Reload the page to sign in again.`;
    if (error.status === 404 && error.message === 'Not found') return 'This page is not available for this app.';
    return error.message;
  }
  if (error instanceof TypeError) return 'The server could not be reached. Check that Mercato is running, then try again.';
  return error instanceof Error ? error.message : String(error);
}

export function ErrorBanner({ error, title = 'Something went wrong', onRetry }: { error: unknown; title?: string; onRetry?: () => void }) {
  return (
    <Banner tone="critical" title={title} action={onRetry ? { content: 'Try again', onAction: onRetry } : undefined}>
      <p>{describeError(error)}</p>
    </Banner>
  );
}

export function ErrorPage({ title, error, onRetry }: { title: string; error: unknown; onRetry?: () => void }) {
  return (
    <Page title={title}>
      <ErrorBanner error={error} title={`${title} could not be loaded`} onRetry={onRetry} />
    </Page>
  );
}

export function Empty({ heading, children, action }: { heading: string; children?: ReactNode; action?: ReactNode }) {
  return (
    <Box padding="800">
      <BlockStack gap="200" inlineAlign="center">
        <Text as="h3" variant="headingMd" alignment="center">
          {heading}
        </Text>
        {children ? (
          <Text as="p" tone="subdued" alignment="center">
            {children}
          </Text>
        ) : null}
        {action}
      </BlockStack>
    </Box>
  );
}

export function RetryButton({ onClick }: { onClick: () => void }) {
  return <Button onClick={onClick}>Try again</Button>;
}
