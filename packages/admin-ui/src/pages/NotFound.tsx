import { BlockStack, Button, Card, Page, Text } from '@shopify/polaris';

/** Unknown URLs and pages that the app's config disables. */
export function NotFoundPage() {
  return (
    <Page title="Page not found">
      <Card>
        <BlockStack gap="300" inlineAlign="start">
          <Text as="p">There is no page at this address, or this app does not offer it.</Text>
          <Button url="/">Go to Home</Button>
        </BlockStack>
      </Card>
    </Page>
  );
}
