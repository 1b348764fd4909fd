import '@shopify/polaris/build/esm/styles.css';
import './styles.css';
import { AppProvider } from '@shopify/polaris';
import en from '@shopify/polaris/locales/en.json';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { setTokenSource } from './lib/api.ts';
import { RouterLink, RouterProvider } from './lib/router.tsx';
import { capturePreviewChoice, createTokenSource, readBootConfig } from './lib/session.ts';

const boot = readBootConfig();
capturePreviewChoice();
const source = createTokenSource(boot);
setTokenSource(source);

if (!source && boot.preview) {
  // mercato dev without a chosen shop: the preview page picks one and comes back here.
  location.replace(`${boot.preview}/?next=${encodeURIComponent(location.pathname + location.search)}`);
} else {
  createRoot(document.getElementById('root')!).render(
    <StrictMode>
      <AppProvider i18n={en} linkComponent={RouterLink}>
        <RouterProvider>
          <App boot={boot} source={source} />
        </RouterProvider>
      </AppProvider>
    </StrictMode>,
  );
}
