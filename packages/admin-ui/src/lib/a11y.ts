/**
 * Accessibility behaviour the shell adds around Polaris (docs/admin-ui.md, Accessibility):
 * - focus returns to the control that opened a dialog once the dialog closes (Polaris' Modal only does that for an
 *   `activator` it renders itself; ours are mounted on demand and unmounted on close, which leaves focus on <body>);
 * - after a client-side navigation, focus moves to the main content, as a page load would put it at the top;
 * - the close button of Polaris' toasts gets a name (it has only an icon).
 */
import { type RefObject, useEffect, useRef } from 'react';

const DIALOG = '[role="dialog"]';

/** One observer of the document for what Polaris renders in portals (dialogs, toasts). */
export function useShellA11y(): void {
  useEffect(() => {
    let opener: HTMLElement | null = null;
    let lastOutside: HTMLElement | null = null;
    let dialogOpen = false;
    const onFocusIn = (event: FocusEvent) => {
      const target = event.target as HTMLElement | null;
      if (target && target !== document.body && !target.closest(DIALOG)) lastOutside = target;
    };
    const sync = () => {
      const open = document.querySelector(DIALOG) !== null;
      if (open && !dialogOpen) opener = lastOutside;
      if (!open && dialogOpen) {
        const lost = !document.activeElement || document.activeElement === document.body;
        if (lost && opener?.isConnected) opener.focus();
        opener = null;
      }
      dialogOpen = open;
      for (const button of document.querySelectorAll<HTMLButtonElement>('.Polaris-Frame-Toast__CloseButton:not([aria-label])'))
        button.setAttribute('aria-label', 'Dismiss notification');
    };
    const observer = new MutationObserver(sync);
    observer.observe(document.body, { childList: true, subtree: true });
    document.addEventListener('focusin', onFocusIn);
    sync();
    return () => {
      observer.disconnect();
      document.removeEventListener('focusin', onFocusIn);
    };
  }, []);
}

/** Focuses `target` (the main content) whenever `pathname` changes after the first render. */
export function useFocusOnNavigation(target: RefObject<HTMLElement | null>, pathname: string): void {
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    // A dialog that stays open across the change (none does today) keeps the focus.
    if (document.activeElement?.closest(DIALOG)) return;
    target.current?.focus({ preventScroll: true });
  }, [pathname, target]);
}
