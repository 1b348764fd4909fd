/**
 * Shop domains. A shop is identified by its permanent platform domain `<name>.myshopify.com` (lower case) everywhere:
 * session tokens, dispatch, cron `shops`, installations. This is the one definition; every module imports it.
 */
export const SHOP_DOMAIN_RE = /^[a-z0-9][a-z0-9-]{0,59}\.myshopify\.com$/;

export function isShopDomain(value: unknown): value is string {
  return typeof value === 'string' && SHOP_DOMAIN_RE.test(value);
}

/** Trims, lower-cases and strips a scheme or trailing slash; returns null when the result is not a shop domain. */
export function normalizeShopDomain(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const cleaned = value
    .trim()
    .toLowerCase()
    .replace(/^https?:\/\//, '')
    .replace(/\/+$/, '');
  return isShopDomain(cleaned) ? cleaned : null;
}
