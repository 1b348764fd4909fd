/** The request bodies of /api/crons, parsed with parseInput (src/input.ts): a 400 names the field and the rule. */
import { z } from 'zod';
import type { CronToggleRequest } from '../api/types.ts';

const KEY_RULE = 'must be a non-empty string (the cron key "<flow>:<schedule>")';

/** POST /api/crons/toggle: `{ key: string, enabled: boolean }` and nothing else. */
export const toggleBody = z.strictObject(
  {
    key: z.string({ error: KEY_RULE }).min(1, { error: KEY_RULE }),
    enabled: z.boolean({ error: 'must be a boolean' }),
  },
  { error: 'must be a JSON object' },
) satisfies z.ZodType<CronToggleRequest>;

/** The message of a toggle body that is not an object at all. */
export const TOGGLE_NOT_AN_OBJECT = 'Body must be a JSON object: { "key": "<flow>:<schedule>", "enabled": true }';
