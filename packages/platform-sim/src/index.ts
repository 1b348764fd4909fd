/** platform-sim: a simulator of the commerce platform's API for tests and offline development. See README.md. */
export { start, type PlatformSim, type StartOptions, type UninstallResult } from './server.ts';
export {
  SimState,
  DEFAULT_API_VERSIONS,
  DEFAULT_SCOPES,
  type Fault,
  type Hold,
  type GraphqlCallRecord,
  type Installation,
  type IssuedToken,
  type SimApp,
  type SimAppInput,
  type SimShop,
  type SimShopInput,
  type TokenExchangeRecord,
  type WebhookAttempt,
  type WebhookDelivery,
} from './state.ts';
export { DEFAULT_BUCKET, CostBucket, type BucketConfig, type ThrottleStatus } from './bucket.ts';
export { signSessionToken, verifySessionToken, webhookHmac } from './jwt.ts';
export { GRANT_TOKEN_EXCHANGE, OFFLINE_TOKEN, ONLINE_TOKEN, SUBJECT_ID_TOKEN } from './token-exchange.ts';
export { INVALID_TOKEN_MESSAGE } from './admin.ts';
export { DEFAULT_WEBHOOK_PATH, DELIVERY_TIMEOUT_MS, type DeliverOptions } from './webhooks.ts';
export { createAdminSchema, extendSchema, type AdminContext } from './schema.ts';
export { execute, prepare, type FieldDef, type GraphqlError, type Schema, type TypeDef } from './graphql/execute.ts';
export { parseDocument, GraphqlSyntaxError } from './graphql/parse.ts';
export { DEV_APP, DEV_SHOPS, parseArgs, type CliOptions } from './cli.ts';
export {
  addFunctionSchema,
  API_TYPES_OF,
  FUNCTION_API_TYPES,
  FunctionsState,
  MAX_ENABLED,
  MAX_FULFILLMENT_CONSTRAINT_RULES,
  METAFIELD_TYPES,
  discountStatus,
  functionIdFor,
  kindOfGid,
  resolveNamespace,
  type FunctionApiType,
  type InstanceKind,
  type InstanceRecord,
  type MetafieldRecord,
  type SimFunction,
  type SimFunctionInput,
  type SimUserError,
} from './functions/index.ts';
