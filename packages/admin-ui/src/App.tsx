/** The shell: page modes from GET /api/pages, the navigation (visible pages only), the routes, toasts. */
import { Banner, Frame, Navigation, Page, Text, Toast, TopBar } from '@shopify/polaris';
import { HomeIcon, KeyIcon, ClockIcon, CodeIcon, ConnectIcon, AutomationIcon, ListBulletedIcon } from '@shopify/polaris-icons';
import type { PageKey, PagesResponse } from 'mercato/api';
import { type ReactNode, type RefObject, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { ErrorPage, LoadingPage } from './components/states.tsx';
import { useFocusOnNavigation, useShellA11y } from './lib/a11y.ts';
import { ShellContext, type ShellValue } from './lib/context.tsx';
import { matchPath, useRouter } from './lib/router.tsx';
import { type BootConfig, type TokenSource, forgetPreviewChoice } from './lib/session.ts';
import { useApi } from './lib/useApi.ts';
import { CronsPage } from './pages/Crons.tsx';
import { FlowsPage } from './pages/Flows.tsx';
import { FunctionsPage } from './pages/Functions.tsx';
import { HomePage } from './pages/Home.tsx';
import { McpPage } from './pages/Mcp.tsx';
import { McpTokenPage } from './pages/McpToken.tsx';
import { NotFoundPage } from './pages/NotFound.tsx';
import { ProvidersPage } from './pages/Providers.tsx';
import { RunPage } from './pages/Run.tsx';
import { RunsPage } from './pages/Runs.tsx';

interface RouteDef {
  pattern: string;
  page: PageKey | null;
  render(params: Record<string, string>): ReactNode;
}

const ROUTES: RouteDef[] = [
  { pattern: '/', page: null, render: () => <HomePage /> },
  { pattern: '/flows', page: 'flows', render: () => <FlowsPage /> },
  { pattern: '/runs', page: 'flows', render: () => <RunsPage /> },
  { pattern: '/runs/:id', page: 'flows', render: (p) => <RunPage id={p.id!} /> },
  { pattern: '/providers', page: 'providers', render: () => <ProvidersPage /> },
  { pattern: '/crons', page: 'crons', render: () => <CronsPage /> },
  { pattern: '/functions', page: 'functions', render: () => <FunctionsPage /> },
  { pattern: '/mcp-tokens', page: 'mcp', render: () => <McpPage /> },
  { pattern: '/mcp-tokens/:id', page: 'mcp', render: (p) => <McpTokenPage id={p.id!} /> },
];

const NAV: { label: string; url: string; page: PageKey | null; icon: any; match: (path: string) => boolean }[] = [
  { label: 'Home', url: '/', page: null, icon: HomeIcon, match: (p) => p === '/' },
  { label: 'Flows', url: '/flows', page: 'flows', icon: AutomationIcon, match: (p) => p.startsWith('/flows') },
  { label: 'Runs', url: '/runs', page: 'flows', icon: ListBulletedIcon, match: (p) => p.startsWith('/runs') },
  { label: 'Providers', url: '/providers', page: 'providers', icon: ConnectIcon, match: (p) => p.startsWith('/providers') },
  { label: 'Crons', url: '/crons', page: 'crons', icon: ClockIcon, match: (p) => p.startsWith('/crons') },
  { label: 'Functions', url: '/functions', page: 'functions', icon: CodeIcon, match: (p) => p.startsWith('/functions') },
  { label: 'MCP', url: '/mcp-tokens', page: 'mcp', icon: KeyIcon, match: (p) => p.startsWith('/mcp-tokens') },
];

declare module 'react' {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace JSX {
    interface IntrinsicElements {
      'ui-nav-menu': React.DetailedHTMLProps<React.HTMLAttributes<HTMLElement>, HTMLElement>;
    }
  }
}

export function App({ boot, source }: { boot: BootConfig; source: TokenSource | null }) {
  if (!source) {
    return (
      <Page title="Mercato admin">
        <Banner tone="warning" title="Open this app from the platform admin">
          <p>
            The admin UI needs a session token from the platform. Open the app from the shop's admin
            {boot.preview ? ', or pick a shop in the admin preview' : ''}.
          </p>
        </Banner>
      </Page>
    );
  }
  return <Shell boot={boot} source={source} />;
}

function Shell({ boot, source }: { boot: BootConfig; source: TokenSource }) {
  const { pathname } = useRouter();
  const pagesRes = useApi<PagesResponse>('/api/pages');
  const [toast, setToast] = useState<{ message: string; error: boolean; id: number } | null>(null);
  const [mobileNav, setMobileNav] = useState(false);
  const showToast = useCallback(
    (message: string, options: { error?: boolean } = {}) => setToast({ message, error: !!options.error, id: Date.now() }),
    [],
  );
  const pages = pagesRes.data?.pages;
  const shell: ShellValue | null = useMemo(
    () => (pages ? { pages, shop: source.shop, toast: showToast } : null),
    [pages, source.shop, showToast],
  );
  const embedded = source.mode === 'app-bridge';
  const navItems = NAV.filter((item) => item.page === null || pages?.[item.page] === 'visible');

  useEffect(() => setMobileNav(false), [pathname]);
  // The target of "Skip to content", and where focus goes after a client-side navigation.
  const mainRef = useRef<HTMLDivElement>(null);
  useShellA11y();
  useFocusOnNavigation(mainRef, pathname);

  const navigation = (
    <Navigation location={pathname}>
      <Navigation.Section
        items={navItems.map((item) => ({
          label: item.label,
          url: item.url,
          icon: item.icon,
          selected: item.match(pathname),
          exactMatch: item.url === '/',
        }))}
      />
    </Navigation>
  );

  const topBar = embedded ? undefined : (
    <TopBar
      showNavigationToggle
      onNavigationToggle={() => setMobileNav((open) => !open)}
      userMenu={
        <TopBar.UserMenu
          name={source.shop}
          detail={source.mode === 'preview' ? 'Admin preview' : undefined}
          initials={source.shop.slice(0, 1).toUpperCase()}
          open={false}
          onToggle={() => {
            if (boot.preview) {
              forgetPreviewChoice();
              location.assign(`${boot.preview}/?next=${encodeURIComponent(pathname)}`);
            }
          }}
          actions={[]}
        />
      }
      contextControl={
        <div className="top-bar-title">
          <Text as="span" variant="headingMd">
            Mercato
          </Text>
        </div>
      }
    />
  );

  let content: ReactNode;
  if (pagesRes.error) content = <ErrorPage title="Mercato admin" error={pagesRes.error} onRetry={() => void pagesRes.reload()} />;
  else if (!shell) content = <LoadingPage title="Mercato admin" />;
  else content = <Routes pathname={pathname} pages={shell.pages} />;

  return (
    <Frame
      topBar={topBar}
      navigation={embedded ? undefined : navigation}
      showMobileNavigation={mobileNav}
      onNavigationDismiss={() => setMobileNav(false)}
      // Polaris types the target as an anchor; any focusable element with an id works (it calls focus()).
      skipToContentTarget={mainRef as unknown as RefObject<HTMLAnchorElement>}
    >
      {embedded ? (
        <ui-nav-menu>
          {navItems.map((item) =>
            item.url === '/' ? (
              <a key={item.url} href="/" rel="home">
                {item.label}
              </a>
            ) : (
              <a key={item.url} href={item.url}>
                {item.label}
              </a>
            ),
          )}
        </ui-nav-menu>
      ) : null}
      <div id="main-content" className="main-content" ref={mainRef} tabIndex={-1}>
        {shell ? <ShellContext.Provider value={shell}>{content}</ShellContext.Provider> : content}
      </div>
      {toast ? (
        <Toast
          key={toast.id}
          content={toast.message}
          error={toast.error}
          onDismiss={() => setToast(null)}
          duration={toast.error ? 8000 : 4000}
        />
      ) : null}
    </Frame>
  );
}

function Routes({ pathname, pages }: { pathname: string; pages: PagesResponse['pages'] }) {
  for (const route of ROUTES) {
    const params = matchPath(route.pattern, pathname);
    if (!params) continue;
    if (route.page && pages[route.page] === 'disabled') return <NotFoundPage />;
    return <>{route.render(params)}</>;
  }
  return <NotFoundPage />;
}
