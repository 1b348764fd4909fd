/**
 * The request body of PUT /api/providers/:name, parsed with parseInput (src/input.ts). Only its shape is checked here:
 * the values inside `config` follow the provider's field specs (save.ts with fields.ts), which answer
 * `{ error, field, errors }` in the words of each field.
 */
import { z } from 'zod';

/** `{ config: { <field>: value } }`; other top-level keys are ignored. */
export const saveProviderBody = z.object(
  {
    config: z.record(z.string(), z.unknown(), { error: 'must be an object of field values' }),
  },
  { error: 'must be a JSON object' },
);
export const SAVE_NOT_AN_OBJECT = 'Body must be a JSON object: { "config": { … } }';
