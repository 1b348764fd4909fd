/** Definition helpers: identity functions that give every kind of config entry its type. */
import type {
  CronEntry,
  CustomPageDefinition,
  FieldsMap,
  FlowDefinition,
  FlowsMap,
  FunctionDefinition,
  McpPermissionDefinition,
  McpResourceDefinition,
  McpToolDefinition,
  ProviderDefinition,
  ProvidersMap,
  Schema,
  WebhookDefinition,
} from './types.ts';

export function defineFlow<const Name extends string, Input extends Schema<any, any>, Output, P extends ProvidersMap = ProvidersMap>(
  flow: FlowDefinition<Name, Input, Output, P>,
): FlowDefinition<Name, Input, Output, P> {
  return flow;
}

export function defineProvider<const Fields extends FieldsMap, Methods extends Record<string, (config: any, ...args: any[]) => any>>(
  provider: ProviderDefinition<Fields, Methods>,
): ProviderDefinition<Fields, Methods> {
  return provider;
}

export function defineFunction<const T extends FunctionDefinition>(fn: T): T {
  return fn;
}

export function defineWebhook<Payload = any>(webhook: WebhookDefinition<Payload>): WebhookDefinition<Payload> {
  return webhook;
}

export function defineCron<F extends FlowsMap>(_flows: F, entry: CronEntry<F>): CronEntry<F> {
  return entry;
}

export function defineMcpTool(tool: McpToolDefinition): McpToolDefinition {
  return tool;
}

export function defineMcpResource(resource: McpResourceDefinition): McpResourceDefinition {
  return resource;
}

export function defineMcpPermission(permission: McpPermissionDefinition): McpPermissionDefinition {
  return permission;
}

/** An experimental custom page (docs/custom-pages.md): each loader's and action's `input` types its `run`. */
export function defineCustomPage<L extends Record<string, unknown> = {}, A extends Record<string, unknown> = {}>(
  page: CustomPageDefinition<L, A, ProvidersMap>,
): CustomPageDefinition<L, A, ProvidersMap> {
  return page;
}
