/**
 * Where session tokens come from.
 *
 * - Inside the platform's admin, the server adds App Bridge to index.html and `shopify.idToken()` gives a fresh token.
 * - In `mercato dev`, the admin preview (/__mercato/preview/) opens the UI with `?preview-shop=<domain>&preview-app=<handle>`;
 *   the UI remembers that choice for the browser tab and mints tokens with POST /__mercato/preview/session-token.
 * - Otherwise there is no way to authenticate: the UI sends the user to the preview when the server offers it.
 */

export interface BootConfig {
  apps: { handle: string; apiKey: string }[];
  /** Path of the admin preview when the server offers it (mercato dev), else null. */
  preview: string | null;
  /** True when the server added App Bridge (the page is inside the platform's admin). */
  embedded: boolean;
  version: string;
}

export interface TokenSource {
  mode: 'app-bridge' | 'preview';
  shop: string;
  app: string | null;
  /** A valid session token; `fresh` skips any cache (used once after a 401). */
  token(fresh?: boolean): Promise<string>;
}

interface AppBridge {
  idToken(): Promise<string>;
  config?: { shop?: string; apiKey?: string };
}

const STORAGE_KEY = 'mercato.preview';
/** Preview tokens live 60 s; reuse one for at most this long. */
const PREVIEW_TOKEN_REUSE_MS = 40_000;

export function readBootConfig(): BootConfig {
  const el = document.getElementById('mercato-boot');
  // Without the server's boot config (the Vite dev server), assume `mercato dev` behind the proxy.
  const fallback: BootConfig = { apps: [], preview: import.meta.env.DEV ? '/__mercato/preview' : null, embedded: false, version: '' };
  if (!el?.textContent) return fallback;
  try {
    return { ...fallback, ...(JSON.parse(el.textContent) as Partial<BootConfig>) };
  } catch {
    return fallback;
  }
}

/** Takes `preview-shop` / `preview-app` from the address (then removes them) and remembers them for this tab. */
export function capturePreviewChoice(): void {
  const url = new URL(location.href);
  const shop = url.searchParams.get('preview-shop');
  if (!shop) return;
  const app = url.searchParams.get('preview-app');
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ shop, app }));
  url.searchParams.delete('preview-shop');
  url.searchParams.delete('preview-app');
  history.replaceState(history.state, '', url.pathname + url.search + url.hash);
}

export function forgetPreviewChoice(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

function previewChoice(): { shop: string; app: string | null } | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    const value = raw ? (JSON.parse(raw) as { shop?: unknown; app?: unknown }) : null;
    if (value && typeof value.shop === 'string') return { shop: value.shop, app: typeof value.app === 'string' ? value.app : null };
  } catch {
    /* unreadable storage: no choice */
  }
  return null;
}

function appBridge(): AppBridge | null {
  const candidate = (window as unknown as { shopify?: AppBridge }).shopify;
  return candidate && typeof candidate.idToken === 'function' ? candidate : null;
}

export function createTokenSource(boot: BootConfig): TokenSource | null {
  const bridge = appBridge();
  if (bridge) {
    const shop = bridge.config?.shop ?? new URL(location.href).searchParams.get('shop') ?? '';
    return { mode: 'app-bridge', shop, app: null, token: () => bridge.idToken() };
  }
  const choice = previewChoice();
  if (!choice || !boot.preview) return null;
  let cached: { token: string; until: number } | null = null;
  let pending: Promise<string> | null = null;
  const mint = async (): Promise<string> => {
    const res = await fetch(`${boot.preview}/session-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(choice.app ? { shop: choice.shop, app: choice.app } : { shop: choice.shop }),
    });
    const body = (await res.json().catch(() => ({}))) as { token?: string; error?: string; expiresInSeconds?: number };
    if (!res.ok || !body.token) throw new Error(body.error ?? `The admin preview could not mint a session token (HTTP ${res.status})`);
    const reuse = Math.min(PREVIEW_TOKEN_REUSE_MS, Math.max(0, ((body.expiresInSeconds ?? 60) - 20) * 1000));
    cached = { token: body.token, until: Date.now() + reuse };
    return body.token;
  };
  return {
    mode: 'preview',
    shop: choice.shop,
    app: choice.app,
    token(fresh = false) {
      if (!fresh && cached && cached.until > Date.now()) return Promise.resolve(cached.token);
      pending ??= mint().finally(() => {
        pending = null;
      });
      return pending;
    },
  };
}
