/** The MCP methods: initialize, ping, tools/list, tools/call, resources/list, resources/templates/list, resources/read. */
import type { McpCatalog } from './catalog.ts';
import type { Caller, Executor } from './execute.ts';
import { PROTOCOL_VERSION, RPC, type RpcRequest, RpcError } from './rpc.ts';

export const SERVER_NAME = 'mercato';

export interface ProtocolDeps {
  catalog: McpCatalog;
  executor: Executor;
  version: string;
}

function stringParam(params: Record<string, unknown>, name: string, method: string): string {
  const value = params[name];
  if (typeof value !== 'string' || value === '')
    throw new RpcError(RPC.INVALID_PARAMS, `${method}: params.${name} must be a non-empty string`);
  return value;
}

function instructions(caller: Caller): string {
  return (
    `Mercato tools act on the shop ${caller.token.shop} of the app "${caller.token.appHandle}". ` +
    'Only the tools and resources this token is granted are listed; read service://permissions to see the grants.'
  );
}

/** Answers one request; throws RpcError for JSON-RPC errors (answered with HTTP 200). */
export async function handleRequest(deps: ProtocolDeps, caller: Caller, request: RpcRequest): Promise<unknown> {
  const { params, method } = request;
  switch (method) {
    case 'initialize':
      // Whatever version the client asks for, we answer with the one we speak; a client that cannot speak it disconnects.
      if (typeof params.protocolVersion !== 'string')
        throw new RpcError(RPC.INVALID_PARAMS, 'initialize: params.protocolVersion must be a string');
      return {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: { tools: {}, resources: {} },
        serverInfo: { name: SERVER_NAME, title: 'Mercato', version: deps.version },
        instructions: instructions(caller),
      };
    case 'ping':
      return {};
    case 'tools/list':
      return { tools: deps.catalog.listTools(caller.token.permissions) };
    case 'resources/list':
      return { resources: deps.catalog.listResources(caller.token.permissions) };
    case 'resources/templates/list':
      return { resourceTemplates: [] };
    case 'tools/call': {
      const name = stringParam(params, 'name', method);
      return deps.executor.callTool(caller, deps.catalog.tools.get(name), name, params.arguments);
    }
    case 'resources/read': {
      const uri = stringParam(params, 'uri', method);
      return deps.executor.readResource(caller, deps.catalog.resources.get(uri), uri);
    }
    default:
      throw new RpcError(RPC.METHOD_NOT_FOUND, `Method not found: ${method.slice(0, 100)}`);
  }
}
