/**
 * Functions: local definitions and their live instances on the platform. The functions API (issue 9) is not built yet:
 * until it is, this page shows what GET /api/functions answers, or says that the API is missing.
 */
import { Banner, BlockStack, Card, Layout, Page, Text } from '@shopify/polaris';
import { JsonBlock } from '../components/JsonBlock.tsx';
import { ErrorPage, LoadingPage } from '../components/states.tsx';
import { ApiError } from '../lib/api.ts';
import { useApi } from '../lib/useApi.ts';

export function FunctionsPage() {
  const res = useApi<Record<string, unknown>>('/api/functions');
  if (res.error && res.error instanceof ApiError && res.error.status === 404) {
    return (
      <Page title="Functions">
        <Banner tone="info" title="Functions are not available yet">
          <p>This version of Mercato does not serve the functions API yet.</p>
        </Banner>
      </Page>
    );
  }
  if (res.error && !res.data) return <ErrorPage title="Functions" error={res.error} onRetry={() => void res.reload()} />;
  if (!res.data) return <LoadingPage title="Functions" />;
  return (
    <Page title="Functions" subtitle="Platform functions of this app and their live instances.">
      <Layout>
        <Layout.Section>
          <Card>
            <BlockStack gap="200">
              <Text as="h2" variant="headingMd">
                Definitions
              </Text>
              <JsonBlock value={res.data} label="Function definitions" />
            </BlockStack>
          </Card>
        </Layout.Section>
      </Layout>
    </Page>
  );
}
