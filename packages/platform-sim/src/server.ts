/**
 * `start()`: the simulator as a real HTTP server on a port (0 picks a free one), with its state inspectable and
 * helpers to install, uninstall, send and resend webhooks, and inject faults.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { adminGraphql } from './admin.ts';
import type { BucketConfig } from './bucket.ts';
import { CONTROL_PREFIX, controlRouter } from './control.ts';
import type { Schema } from './graphql/execute.ts';
import { createAdminSchema } from './schema.ts';
import { addFunctionSchema } from './functions/index.ts';
import type { SimFunction, SimFunctionInput } from './functions/registry.ts';
import type { SimUserError } from './functions/metafields.ts';
import {
  type Fault,
  type Hold,
  type IssuedToken,
  type SimApp,
  type SimAppInput,
  type SimShop,
  type SimShopInput,
  SimState,
  type WebhookDelivery,
} from './state.ts';
import { tokenExchange } from './token-exchange.ts';
import { type DeliverOptions, deliverWebhook, redeliverWebhook, shopPayload } from './webhooks.ts';

export interface StartOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** Default 127.0.0.1. */
  hostname?: string;
  apps?: SimAppInput[];
  shops?: Array<SimShopInput | string>;
  /** Cost bucket per (app, shop); default `{ max: 1000, restoreRate: 50 }`. */
  bucket?: Partial<BucketConfig>;
  /** API versions served; default 2024-01 … 2026-10 quarterly and `unstable`. */
  apiVersions?: readonly string[];
}

export interface UninstallResult {
  uninstalled: boolean;
  /** The `app/uninstalled` webhook, when the app has a URL. */
  delivery: WebhookDelivery | null;
}

export interface PlatformSim {
  /** Base URL, e.g. `http://127.0.0.1:54321`: the value for PLATFORM_ORIGIN. */
  url: string;
  port: number;
  state: SimState;
  /** The GraphQL schema served (extend it with `extendSchema`). */
  schema: Schema;
  addApp(app: SimAppInput): SimApp;
  addShop(shop: SimShopInput | string): SimShop;
  /**
   * Deploys a function for an app (the only app unless `apiKey` names one): `shopifyFunctions` lists it and the
   * function-instance mutations accept its `functionId` or `functionHandle`. Re-adding a handle replaces it.
   */
  addFunction(fn: SimFunctionInput & { apiKey?: string }): SimFunction;
  setAppUrl(apiKey: string, appUrl: string | null): void;
  setBucket(bucket: Partial<BucketConfig>): void;
  /** Installs directly (no token exchange) and returns the offline token. */
  install(options: { apiKey?: string; shop: string }): IssuedToken;
  /** Uninstalls, revokes the tokens and delivers `app/uninstalled` to the app URL (awaited). */
  uninstall(options: { apiKey?: string; shop: string }): Promise<UninstallResult>;
  deliverWebhook(options: DeliverOptions): Promise<WebhookDelivery>;
  redeliver(webhookId: string): Promise<WebhookDelivery>;
  /** The next `times` requests to the target get this answer instead. */
  injectFault(fault: Fault): void;
  /** Requests to the target wait from now until `release()` (a test observes the app while it waits). */
  hold(target: Fault['target']): Hold;
  /** The next `times` (default 1) calls of a function-instance mutation answer these userErrors and change nothing. */
  injectUserErrors(options: { mutation: string; userErrors: SimUserError[]; times?: number }): void;
  close(): Promise<void>;
}

export async function start(options: StartOptions = {}): Promise<PlatformSim> {
  const state = new SimState({ max: options.bucket?.max ?? 1000, restoreRate: options.bucket?.restoreRate ?? 50 }, options.apiVersions);
  for (const app of options.apps ?? []) state.addApp(app);
  for (const shop of options.shops ?? []) state.addShop(shop);
  const schema = addFunctionSchema(createAdminSchema());

  const uninstall = async ({ apiKey, shop }: { apiKey?: string; shop: string }): Promise<UninstallResult> => {
    const app = state.app(apiKey);
    const uninstalled = state.uninstall(app.apiKey, shop);
    if (!uninstalled || !app.appUrl) return { uninstalled, delivery: null };
    const delivery = await deliverWebhook(state, { apiKey: app.apiKey, shop, topic: 'app/uninstalled', payload: shopPayload(state, shop) });
    return { uninstalled, delivery };
  };

  const http = new Hono();
  http.onError((error, c) => c.json({ errors: error.message }, 500));
  http.post('/admin/oauth/access_token', (c) => tokenExchange(c, state));
  http.post('/admin/api/:version/graphql.json', (c) => adminGraphql(c, state, schema));
  http.route(CONTROL_PREFIX, controlRouter(state, { uninstall }));
  http.notFound((c) => c.json({ errors: 'Not Found' }, 404));

  const server = createAdaptorServer({ fetch: http.fetch }) as Server;
  const hostname = options.hostname ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, hostname, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;

  return {
    url: `http://${hostname.includes(':') ? `[${hostname}]` : hostname === '0.0.0.0' ? '127.0.0.1' : hostname}:${port}`,
    port,
    state,
    schema,
    addApp: (app) => state.addApp(app),
    addShop: (shop) => state.addShop(shop),
    addFunction: ({ apiKey, ...fn }) => state.functions.registry.register(state.app(apiKey).apiKey, fn),
    setAppUrl(apiKey, appUrl) {
      state.app(apiKey).appUrl = appUrl ? appUrl.replace(/\/+$/, '') : null;
    },
    setBucket(bucket) {
      state.bucketConfig = { ...state.bucketConfig, ...bucket };
    },
    install: ({ apiKey, shop }) => state.install(state.app(apiKey).apiKey, shop),
    uninstall,
    deliverWebhook: (o) => deliverWebhook(state, o),
    redeliver: (id) => redeliverWebhook(state, id),
    injectFault(fault) {
      state.faults.push({ ...fault, remaining: fault.times ?? 1 });
    },
    hold: (target) => state.hold(target),
    injectUserErrors({ mutation, userErrors, times }) {
      state.functions.injected.push({ mutation, userErrors, remaining: times ?? 1 });
    },
    close() {
      state.releaseHolds();
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
