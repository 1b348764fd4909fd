/**
 * Everything the simulator knows and everything it did, kept in memory and readable by tests (`sim.state`).
 */
import { randomBytes } from 'node:crypto';
import { type BucketConfig, CostBucket, DEFAULT_BUCKET } from './bucket.ts';
import type { SimFunctionInput } from './functions/registry.ts';
import { FunctionsState } from './functions/store.ts';

export interface SimAppInput {
  /** The app's API key (client id). */
  apiKey: string;
  /** The app's API secret (client secret): signs session tokens and webhooks. */
  apiSecret: string;
  /** Where webhooks go (`<appUrl>/webhooks`); can be set later with `setAppUrl`. */
  appUrl?: string | null;
  /** Scopes granted on install. Default `read_products`. */
  scopes?: string;
  /** The app's deployed functions (handle, API type), as `shopifyFunctions` lists them. */
  functions?: SimFunctionInput[];
}

export interface SimApp {
  /** Numeric app id (the app-reserved metafield namespace `$app` is `app--<id>`). */
  id: number;
  apiKey: string;
  apiSecret: string;
  appUrl: string | null;
  scopes: string;
}

export interface SimShopInput {
  /** `<name>.myshopify.com`. */
  domain: string;
  name?: string;
  email?: string;
  currencyCode?: string;
  /** Numeric shop id; default: derived from the shop's position. */
  id?: number;
}

export interface SimShop {
  domain: string;
  name: string;
  email: string;
  currencyCode: string;
  id: number;
  /** `gid://shopify/Shop/<id>`. */
  gid: string;
}

export interface IssuedToken {
  token: string;
  apiKey: string;
  shop: string;
  scopes: string;
  issuedAt: string;
  revokedAt: string | null;
}

export interface Installation {
  apiKey: string;
  shop: string;
  installedAt: string;
  uninstalledAt: string | null;
  /** The offline access token while installed. */
  accessToken: string | null;
}

export interface TokenExchangeRecord {
  at: string;
  apiKey: string | null;
  shop: string | null;
  status: number;
  /** The OAuth error code of a refusal. */
  error?: string;
}

export interface GraphqlCallRecord {
  at: string;
  apiKey: string | null;
  shop: string | null;
  apiVersion: string;
  httpStatus: number;
  outcome: 'ok' | 'graphql-errors' | 'throttled' | 'unauthorized' | 'bad-request' | 'fault';
  requestedQueryCost: number | null;
  actualQueryCost: number | null;
  operationName: string | null;
}

export interface WebhookAttempt {
  at: string;
  /** HTTP status of the app's answer; null when the request failed (see `error`). */
  status: number | null;
  error?: string;
  durationMs: number;
}

export interface WebhookDelivery {
  webhookId: string;
  eventId: string;
  apiKey: string;
  shop: string;
  topic: string;
  apiVersion: string;
  url: string;
  /** The exact bytes sent (UTF-8). */
  body: string;
  triggeredAt: string;
  attempts: WebhookAttempt[];
  /** Status of the latest attempt. */
  status: number | null;
}

export interface Fault {
  /** Which endpoint fails: the Admin GraphQL endpoint or token exchange. */
  target: 'graphql' | 'token';
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** How many requests it answers (default 1). */
  times?: number;
}

/** Requests to an endpoint held until `release()`: a test sees what the app does while it waits for the platform. */
export interface Hold {
  readonly target: Fault['target'];
  /** Requests that arrived while held (they answer normally once released). */
  readonly arrived: number;
  release(): void;
}

export const DEFAULT_SCOPES = 'read_products';

/** Quarterly versions 2024-01 … 2026-10 and `unstable`. */
export const DEFAULT_API_VERSIONS: readonly string[] = [
  ...[2024, 2025, 2026].flatMap((y) => ['01', '04', '07', '10'].map((m) => `${y}-${m}`)),
  'unstable',
];

export const SHOP_DOMAIN_RE = /^[a-z0-9][a-z0-9-]{0,59}\.myshopify\.com$/;

function titleFromDomain(domain: string): string {
  return domain
    .replace(/\.myshopify\.com$/, '')
    .split('-')
    .map((w) => (w ? w[0]!.toUpperCase() + w.slice(1) : w))
    .join(' ');
}

export class SimState {
  readonly apps = new Map<string, SimApp>();
  readonly shops = new Map<string, SimShop>();
  readonly installations = new Map<string, Installation>();
  readonly tokens = new Map<string, IssuedToken>();
  readonly tokenExchanges: TokenExchangeRecord[] = [];
  readonly graphqlCalls: GraphqlCallRecord[] = [];
  readonly webhookDeliveries: WebhookDelivery[] = [];
  readonly faults: Array<Fault & { remaining: number }> = [];
  /** Deployed functions per app and function instances per shop (discounts, cart transforms, customizations, …). */
  readonly functions = new FunctionsState();
  throttledCount = 0;
  private readonly holds = new Map<Fault['target'], { hold: Hold & { arrived: number }; gate: Promise<void> }>();
  private readonly buckets = new Map<string, CostBucket>();

  constructor(
    public bucketConfig: BucketConfig = { ...DEFAULT_BUCKET },
    readonly apiVersions: readonly string[] = DEFAULT_API_VERSIONS,
  ) {}

  addApp(input: SimAppInput): SimApp {
    if (!input.apiKey || !input.apiSecret) throw new Error('platform-sim: an app needs apiKey and apiSecret');
    const id = this.apps.get(input.apiKey)?.id ?? 2_000_000 + this.apps.size + 1;
    const app: SimApp = {
      id,
      apiKey: input.apiKey,
      apiSecret: input.apiSecret,
      appUrl: input.appUrl?.replace(/\/+$/, '') ?? null,
      scopes: input.scopes ?? DEFAULT_SCOPES,
    };
    this.apps.set(app.apiKey, app);
    for (const fn of input.functions ?? []) this.functions.registry.register(app.apiKey, fn);
    return app;
  }

  addShop(input: SimShopInput | string): SimShop {
    const spec = typeof input === 'string' ? { domain: input } : input;
    const domain = spec.domain.trim().toLowerCase();
    if (!SHOP_DOMAIN_RE.test(domain)) throw new Error(`platform-sim: "${spec.domain}" is not a shop domain (<name>.myshopify.com)`);
    const id = spec.id ?? 60_000_000_000 + this.shops.size + 1;
    const shop: SimShop = {
      domain,
      name: spec.name ?? titleFromDomain(domain),
      email: spec.email ?? `owner@${domain}`,
      currencyCode: spec.currencyCode ?? 'USD',
      id,
      gid: `gid://shopify/Shop/${id}`,
    };
    this.shops.set(domain, shop);
    return shop;
  }

  /** The only app, or the one with this key. */
  app(apiKey?: string): SimApp {
    if (apiKey === undefined) {
      if (this.apps.size !== 1) throw new Error('platform-sim: several apps are configured; name the apiKey');
      return [...this.apps.values()][0]!;
    }
    const app = this.apps.get(apiKey);
    if (!app) throw new Error(`platform-sim: unknown app "${apiKey}"`);
    return app;
  }

  shop(domain: string): SimShop {
    const shop = this.shops.get(domain.toLowerCase());
    if (!shop) throw new Error(`platform-sim: unknown shop "${domain}"`);
    return shop;
  }

  installation(apiKey: string, shop: string): Installation | undefined {
    return this.installations.get(`${apiKey}|${shop}`);
  }

  /** Installs the app on the shop (if needed) and returns its offline access token. */
  install(apiKey: string, shopDomain: string): IssuedToken {
    const app = this.app(apiKey);
    const shop = this.shop(shopDomain);
    const key = `${app.apiKey}|${shop.domain}`;
    const current = this.installations.get(key);
    if (current && current.uninstalledAt === null && current.accessToken) return this.tokens.get(current.accessToken)!;
    const issued: IssuedToken = {
      token: `shpat_${randomBytes(16).toString('hex')}`,
      apiKey: app.apiKey,
      shop: shop.domain,
      scopes: app.scopes,
      issuedAt: new Date().toISOString(),
      revokedAt: null,
    };
    this.tokens.set(issued.token, issued);
    this.installations.set(key, {
      apiKey: app.apiKey,
      shop: shop.domain,
      installedAt: issued.issuedAt,
      uninstalledAt: null,
      accessToken: issued.token,
    });
    return issued;
  }

  /** Marks the installation uninstalled and revokes its tokens. False when it was not installed. */
  uninstall(apiKey: string, shopDomain: string): boolean {
    const app = this.app(apiKey);
    const shop = this.shop(shopDomain);
    const key = `${app.apiKey}|${shop.domain}`;
    const current = this.installations.get(key);
    if (!current || current.uninstalledAt !== null) return false;
    const now = new Date().toISOString();
    current.uninstalledAt = now;
    current.accessToken = null;
    for (const token of this.tokens.values())
      if (token.apiKey === app.apiKey && token.shop === shop.domain && !token.revokedAt) token.revokedAt = now;
    this.buckets.delete(key);
    return true;
  }

  /** The active token record for an access token, or undefined. */
  activeToken(token: string | undefined): IssuedToken | undefined {
    if (!token) return undefined;
    const issued = this.tokens.get(token);
    return issued && issued.revokedAt === null ? issued : undefined;
  }

  bucket(apiKey: string, shop: string): CostBucket {
    const key = `${apiKey}|${shop}`;
    let bucket = this.buckets.get(key);
    if (!bucket || bucket.config.max !== this.bucketConfig.max || bucket.config.restoreRate !== this.bucketConfig.restoreRate) {
      bucket = new CostBucket({ ...this.bucketConfig });
      this.buckets.set(key, bucket);
    }
    return bucket;
  }

  /** Holds the requests to `target` from now until the returned hold is released (replacing an earlier hold). */
  hold(target: Fault['target']): Hold {
    this.holds.get(target)?.hold.release();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const hold = {
      target,
      arrived: 0,
      release: () => {
        if (this.holds.get(target)?.hold === hold) this.holds.delete(target);
        open();
      },
    };
    this.holds.set(target, { hold, gate });
    return hold;
  }

  /** Waits while `target` is held. */
  async passHold(target: Fault['target']): Promise<void> {
    const held = this.holds.get(target);
    if (!held) return;
    held.hold.arrived++;
    await held.gate;
  }

  releaseHolds(): void {
    for (const { hold } of [...this.holds.values()]) hold.release();
  }

  /** Takes the next matching fault, if any. */
  takeFault(target: Fault['target']): Fault | undefined {
    const index = this.faults.findIndex((f) => f.target === target && f.remaining > 0);
    if (index < 0) return undefined;
    const fault = this.faults[index]!;
    fault.remaining--;
    if (fault.remaining <= 0) this.faults.splice(index, 1);
    return fault;
  }
}
