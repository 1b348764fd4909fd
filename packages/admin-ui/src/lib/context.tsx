/** App-wide state: page modes from GET /api/pages, the tenant's shop, and toasts. */
import type { PageKey, PageMode } from 'mercato/api';
import { createContext, useContext } from 'react';

export interface ShellValue {
  pages: Record<PageKey, PageMode>;
  shop: string;
  /** Shows a short message at the bottom of the screen. */
  toast(message: string, options?: { error?: boolean }): void;
}

export const ShellContext = createContext<ShellValue | null>(null);

export function useShell(): ShellValue {
  const value = useContext(ShellContext);
  if (!value) throw new Error('useShell outside the shell');
  return value;
}

export function pageEnabled(pages: Record<PageKey, PageMode>, key: PageKey): boolean {
  return pages[key] !== 'disabled';
}
