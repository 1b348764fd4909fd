/**
 * The one origin setting: with PLATFORM_ORIGIN set, every platform call (token exchange, Admin GraphQL) for every shop
 * goes to that origin (the simulator in `mercato dev` and the tests); unset, to the shop's own domain over HTTPS.
 */
export function platformBaseUrl(shop: string, platformOrigin: string | undefined): string {
  return platformOrigin ? platformOrigin.replace(/\/+$/, '') : `https://${shop}`;
}

export function tokenExchangeUrl(shop: string, platformOrigin: string | undefined): string {
  return `${platformBaseUrl(shop, platformOrigin)}/admin/oauth/access_token`;
}

export function adminGraphqlUrl(shop: string, apiVersion: string, platformOrigin: string | undefined): string {
  return `${platformBaseUrl(shop, platformOrigin)}/admin/api/${encodeURIComponent(apiVersion)}/graphql.json`;
}
