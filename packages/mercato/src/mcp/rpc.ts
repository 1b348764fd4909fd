/** JSON-RPC 2.0 pieces of the MCP endpoint: codes, the error class thrown inside handlers, message shapes. */

export const PROTOCOL_VERSION = '2025-11-25';

/**
 * The request methods of MCP 2025-11-25 a client may send: the ones this server answers (protocol.ts) and the ones it
 * answers -32601. Metrics keep these as labels; anything else is `other`.
 */
export const MCP_METHOD_NAMES = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'prompts/list',
  'completion/complete',
  'logging/setLevel',
] as const;
export const PROTOCOL_HEADER = 'MCP-Protocol-Version';
export const MAX_REQUEST_BYTES = 1_000_000;

export const RPC = Object.freeze({
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  PERMISSION_DENIED: -32003,
  EXECUTION_FAILED: -32000,
});

export type RequestId = string | number;

/** Thrown inside method handlers; answered as a JSON-RPC error with HTTP 200. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.data = data;
  }
}

export function rpcResult(id: RequestId, result: unknown) {
  return { jsonrpc: '2.0' as const, id, result };
}

export function rpcError(id: RequestId | null, code: number, message: string, data?: unknown) {
  return { jsonrpc: '2.0' as const, id, error: data === undefined ? { code, message } : { code, message, data } };
}

export interface RpcRequest {
  id: RequestId;
  method: string;
  params: Record<string, unknown>;
}

export type ParsedMessage =
  | { kind: 'request'; request: RpcRequest }
  /** A notification or a response from the client: acknowledged with 202. */
  | { kind: 'accepted' }
  | { kind: 'invalid'; id: RequestId | null; message: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is RequestId => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** Classifies one decoded JSON body. Batches (arrays) are not supported: the 2025-06-18 revision removed them. */
export function classify(body: unknown): ParsedMessage {
  if (Array.isArray(body))
    return { kind: 'invalid', id: null, message: 'Batch requests are not supported: send one JSON-RPC message per request' };
  if (!isObject(body)) return { kind: 'invalid', id: null, message: 'The body must be a JSON-RPC 2.0 message object' };
  const id = isId(body.id) ? body.id : null;
  if (body.jsonrpc !== '2.0') return { kind: 'invalid', id, message: 'jsonrpc must be "2.0"' };
  if (body.method === undefined) {
    // A response to a server request (we send none, but a client may): acknowledged.
    if (isId(body.id) && ('result' in body || 'error' in body)) return { kind: 'accepted' };
    return { kind: 'invalid', id, message: 'method is required' };
  }
  if (typeof body.method !== 'string' || body.method === '') return { kind: 'invalid', id, message: 'method must be a non-empty string' };
  if (body.params !== undefined && !isObject(body.params)) return { kind: 'invalid', id, message: 'params must be an object' };
  // A message without an id is a notification: never answered (JSON-RPC 2.0), whatever its method.
  if (!('id' in body)) return { kind: 'accepted' };
  if (!isId(body.id)) return { kind: 'invalid', id: null, message: 'id must be a string or a number' };
  return { kind: 'request', request: { id: body.id, method: body.method, params: (body.params as Record<string, unknown>) ?? {} } };
}
