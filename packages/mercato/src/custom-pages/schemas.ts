/**
 * The request body of the RPC path (POST /api/pages/custom/:page/_rpc/:kind/:name), parsed with parseInput
 * (src/input.ts). `input` itself is checked by the operation's own schema (service.ts, 400 with `issues`).
 */
import { z } from 'zod';
import type { CustomPageRpcRequest } from '../api/types.ts';

/** `{ input }` and nothing else; a missing `input` is `undefined`. */
export const rpcBody = z.strictObject(
  { input: z.unknown().optional() },
  { error: 'must be a JSON object' },
) satisfies z.ZodType<CustomPageRpcRequest>;
export const RPC_NOT_AN_OBJECT = 'Body must be a JSON object: { "input": … }';
