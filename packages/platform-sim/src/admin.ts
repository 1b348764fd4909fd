/**
 * `POST /admin/api/:version/graphql.json`: the Admin GraphQL endpoint. Unknown versions are 404; the
 * `X-Shopify-Access-Token` must be an active offline token (401 otherwise); each request's requested cost must be in the
 * (app, shop) bucket or it is answered HTTP 200 with a `THROTTLED` error and the cost extension, as the platform does.
 */
import type { Context } from 'hono';
import type { ThrottleStatus } from './bucket.ts';
import { type GraphqlError, type Schema, execute, prepare } from './graphql/execute.ts';
import type { AdminContext } from './schema.ts';
import { type GraphqlCallRecord, SHOP_DOMAIN_RE, type SimState } from './state.ts';

export const INVALID_TOKEN_MESSAGE = '[API] Invalid API key or access token (unrecognized login or wrong password)';
export const RATE_LIMITS_DOC = 'https://shopify.dev/api/usage/rate-limits';

interface GraphqlBody {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
}

async function readBody(c: Context): Promise<GraphqlBody | undefined> {
  const text = await c.req.text();
  if ((c.req.header('content-type') ?? '').includes('application/graphql')) return { query: text };
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as GraphqlBody) : undefined;
  } catch {
    return undefined;
  }
}

export async function adminGraphql(c: Context, state: SimState, schema: Schema): Promise<Response> {
  const apiVersion = c.req.param('version') ?? '';
  const record: GraphqlCallRecord = {
    at: new Date().toISOString(),
    apiKey: null,
    shop: null,
    apiVersion,
    httpStatus: 200,
    outcome: 'ok',
    requestedQueryCost: null,
    actualQueryCost: null,
    operationName: null,
  };
  const done = (res: Response, outcome: GraphqlCallRecord['outcome']) => {
    record.httpStatus = res.status;
    record.outcome = outcome;
    state.graphqlCalls.push(record);
    return res;
  };
  if (!state.apiVersions.includes(apiVersion)) return c.json({ errors: 'Not Found' }, 404);

  await state.passHold('graphql');
  const fault = state.takeFault('graphql');
  if (fault) {
    const body = fault.body === undefined ? JSON.stringify({ errors: `Simulated ${fault.status}` }) : JSON.stringify(fault.body);
    return done(new Response(body, { status: fault.status, headers: { 'content-type': 'application/json', ...fault.headers } }), 'fault');
  }

  const issued = state.activeToken(c.req.header('x-shopify-access-token'));
  const host = (c.req.header('host') ?? '').replace(/:\d+$/, '').toLowerCase();
  if (!issued || (SHOP_DOMAIN_RE.test(host) && host !== issued.shop))
    return done(c.json({ errors: INVALID_TOKEN_MESSAGE }, 401), 'unauthorized');
  record.apiKey = issued.apiKey;
  record.shop = issued.shop;
  const app = state.app(issued.apiKey);
  const shop = state.shop(issued.shop);

  const body = await readBody(c);
  if (!body || typeof body.query !== 'string' || body.query.trim() === '') {
    return done(c.json({ errors: { query: 'Required parameter missing or invalid' } }, 400), 'bad-request');
  }
  const variables =
    typeof body.variables === 'object' && body.variables !== null && !Array.isArray(body.variables)
      ? (body.variables as Record<string, unknown>)
      : {};
  const operationName = typeof body.operationName === 'string' ? body.operationName : undefined;
  record.operationName = operationName ?? null;

  const prepared = prepare(schema, body.query, variables, operationName);
  if (!prepared.ok) return done(c.json({ errors: prepared.errors }), 'graphql-errors');
  record.operationName = prepared.operation.name ?? record.operationName;
  record.requestedQueryCost = prepared.requestedCost;

  const bucket = state.bucket(app.apiKey, shop.domain);
  if (prepared.requestedCost > bucket.config.max) {
    const errors: GraphqlError[] = [
      {
        message: `Query cost is ${prepared.requestedCost}, which exceeds the single query max cost limit (${bucket.config.max}).`,
        extensions: { code: 'MAX_COST_EXCEEDED', cost: prepared.requestedCost, maxCost: bucket.config.max, documentation: RATE_LIMITS_DOC },
      },
    ];
    return done(c.json({ errors, extensions: { cost: costExtension(prepared.requestedCost, null, bucket.status()) } }), 'graphql-errors');
  }
  if (!bucket.take(prepared.requestedCost)) {
    state.throttledCount++;
    const errors: GraphqlError[] = [{ message: 'Throttled', extensions: { code: 'THROTTLED', documentation: RATE_LIMITS_DOC } }];
    return done(c.json({ errors, extensions: { cost: costExtension(prepared.requestedCost, null, bucket.status()) } }), 'throttled');
  }
  const ctx: AdminContext = { state, app, shop, apiVersion };
  const result = await execute(schema, prepared, ctx);
  bucket.refund(prepared.requestedCost - result.actualCost);
  record.actualQueryCost = result.actualCost;
  const payload: Record<string, unknown> = { data: result.data };
  if (result.errors.length > 0) payload.errors = result.errors;
  payload.extensions = { cost: costExtension(prepared.requestedCost, result.actualCost, bucket.status()) };
  return done(c.json(payload), result.errors.length > 0 ? 'graphql-errors' : 'ok');
}

function costExtension(requested: number, actual: number | null, throttleStatus: ThrottleStatus) {
  return { requestedQueryCost: requested, actualQueryCost: actual, throttleStatus };
}
