/** A small client-side router over the History API (the server answers index.html for every client route). */
import { type AnchorHTMLAttributes, type ReactNode, createContext, useCallback, useContext, useEffect, useMemo, useState } from 'react';

interface Location {
  pathname: string;
  search: string;
}

interface RouterValue extends Location {
  navigate(to: string, options?: { replace?: boolean }): void;
  query: URLSearchParams;
}

const RouterContext = createContext<RouterValue | null>(null);

function current(): Location {
  return { pathname: location.pathname, search: location.search };
}

export function RouterProvider({ children }: { children: ReactNode }) {
  const [loc, setLoc] = useState<Location>(current);
  const navigate = useCallback((to: string, options: { replace?: boolean } = {}) => {
    const url = new URL(to, location.href);
    if (url.origin !== location.origin) {
      location.assign(url.href);
      return;
    }
    const target = url.pathname + url.search + url.hash;
    if (options.replace) history.replaceState(null, '', target);
    else history.pushState(null, '', target);
    setLoc(current());
    if (!options.replace) window.scrollTo(0, 0);
  }, []);
  useEffect(() => {
    const onPop = () => setLoc(current());
    // Inside the platform's admin, App Bridge announces clicks on its navigation (<ui-nav-menu>) with this event.
    const onAdminNavigate = (event: Event) => {
      const href = (event.target as Element | null)?.getAttribute?.('href');
      if (href) navigate(href);
    };
    window.addEventListener('popstate', onPop);
    document.addEventListener('shopify:navigate', onAdminNavigate);
    return () => {
      window.removeEventListener('popstate', onPop);
      document.removeEventListener('shopify:navigate', onAdminNavigate);
    };
  }, [navigate]);
  const value = useMemo(() => ({ ...loc, navigate, query: new URLSearchParams(loc.search) }), [loc, navigate]);
  return <RouterContext.Provider value={value}>{children}</RouterContext.Provider>;
}

export function useRouter(): RouterValue {
  const value = useContext(RouterContext);
  if (!value) throw new Error('useRouter outside RouterProvider');
  return value;
}

/** Matches `pattern` like `/runs/:id` against `pathname`; returns the decoded params or null. */
export function matchPath(pattern: string, pathname: string): Record<string, string> | null {
  const names: string[] = [];
  const source = pattern.replace(/:([A-Za-z]+)/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  const match = new RegExp(`^${source}/?$`).exec(pathname);
  if (!match) return null;
  const params: Record<string, string> = {};
  names.forEach((name, i) => {
    params[name] = decodeURIComponent(match[i + 1]!);
  });
  return params;
}

function isPlainLeftClick(event: React.MouseEvent<HTMLAnchorElement>): boolean {
  return event.button === 0 && !event.metaKey && !event.ctrlKey && !event.shiftKey && !event.altKey && !event.defaultPrevented;
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { url?: string; external?: boolean; children?: ReactNode };

/** Polaris' linkComponent: internal URLs navigate without a page load; keyboard and modifier clicks keep working. */
export function RouterLink({ url, href, external, children, onClick, ...rest }: LinkProps) {
  const router = useContext(RouterContext);
  const target = url ?? href ?? '#';
  const internal = !external && target.startsWith('/');
  return (
    <a
      {...rest}
      href={target}
      target={external ? '_blank' : rest.target}
      rel={external ? 'noopener noreferrer' : rest.rel}
      onClick={(event) => {
        onClick?.(event);
        if (internal && router && isPlainLeftClick(event) && !rest.download) {
          event.preventDefault();
          router.navigate(target);
        }
      }}
    >
      {children}
    </a>
  );
}
