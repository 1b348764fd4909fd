/**
 * The request bodies of function instances (POST /api/functions/:handle/instances, PUT …/instances/:id). Only the
 * outer shape is a schema here: the keys inside depend on the definition (the owner fields of its type, kinds.ts, and
 * its `config` fields), so input.ts checks them and every problem is a userError of FunctionInputError
 * (`{ error, userErrors, source }`), not an `{ error, field }` answer.
 */
import { z } from 'zod';

/** A JSON object: `{ config?, …owner fields }`. */
export const instanceBody = z.record(z.string(), z.unknown());
export const INSTANCE_NOT_AN_OBJECT = 'The body must be a JSON object: { config, …owner fields }';
