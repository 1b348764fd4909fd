/**
 * The request bodies of /api/mcp/tokens, parsed with parseInput (src/input.ts): a 400 names the field and the rule.
 * Two rules need more than the body and stay in tokens.ts, after parsing: permission keys must be known (the catalog is
 * the runtime's; the answer lists them in `unknownPermissions`), and `expiresAt` must be in the future (the clock).
 */
import { z } from 'zod';
import type { CreateMcpTokenRequest, PatchMcpTokenRequest, SetMcpPermissionsRequest } from '../api/types.ts';
import { describeBadText, hasBadText } from '../db/text.ts';

export const MAX_EXPIRY_DAYS = 36_500;
export const MAX_NAME_LENGTH = 100;

const NAME_RULE = 'must be a non-empty string';
const EXPIRES_AT_RULE = 'must be an ISO date string or null';
const EXPIRES_IN_DAYS_RULE = `must be a positive integer (at most ${MAX_EXPIRY_DAYS}) or null`;
const BODY = { error: 'must be a JSON object' };
/** Refinements of the whole body run only when its fields passed (one answer per problem). */
const whenFieldsPassed = { when: (payload: { issues: readonly unknown[] }) => payload.issues.length === 0 };

/** Trimmed; the length is checked after trimming. */
const name = z
  .string({ error: NAME_RULE })
  .trim()
  .min(1, { error: NAME_RULE })
  .max(MAX_NAME_LENGTH, { error: `at most ${MAX_NAME_LENGTH} characters` })
  // PostgreSQL cannot store NUL (or a lone surrogate) in text: a 400, not a database error
  .refine((value) => !hasBadText(value), { error: (issue) => `must not contain ${describeBadText(String(issue.input))}` });

const permissions = z.array(z.string({ error: 'must be a permission key (a string)' }), {
  error: (issue) => (issue.input === undefined ? 'required' : 'must be an array of permission keys'),
});

/** Any date `Date.parse` reads, or null for "never". */
const expiresAt = z
  .string({ error: EXPIRES_AT_RULE })
  .refine((value) => !Number.isNaN(Date.parse(value)), { error: EXPIRES_AT_RULE })
  .nullable();

const expiresInDays = z
  .number({ error: EXPIRES_IN_DAYS_RULE })
  .int({ error: EXPIRES_IN_DAYS_RULE })
  .min(1, { error: EXPIRES_IN_DAYS_RULE })
  .max(MAX_EXPIRY_DAYS, { error: EXPIRES_IN_DAYS_RULE })
  .nullable();

const oneExpiry = <T extends { expiresAt?: unknown; expiresInDays?: unknown }>(body: T) =>
  body.expiresAt === undefined || body.expiresInDays === undefined;
const ONE_EXPIRY = { error: 'give either expiresAt or expiresInDays, not both', path: ['expiresAt'], ...whenFieldsPassed };

/** POST /api/mcp/tokens */
export const createTokenBody = z
  .strictObject(
    { name, permissions: permissions.optional(), expiresAt: expiresAt.optional(), expiresInDays: expiresInDays.optional() },
    BODY,
  )
  .refine(oneExpiry, ONE_EXPIRY) satisfies z.ZodType<CreateMcpTokenRequest>;
export const CREATE_NOT_AN_OBJECT = 'Body must be a JSON object: { name, permissions?, expiresAt? | expiresInDays? }';

/** PATCH /api/mcp/tokens/:id: at least one field. */
export const patchTokenBody = z
  .strictObject(
    {
      name: name.optional(),
      status: z
        .enum(['active', 'disabled'], {
          error: (issue) =>
            `must be "active" or "disabled"${issue.input === 'revoked' ? ' (revoke with POST /api/mcp/tokens/:id/revoke)' : ''}`,
        })
        .optional(),
      expiresAt: expiresAt.optional(),
      expiresInDays: expiresInDays.optional(),
    },
    BODY,
  )
  .refine(oneExpiry, ONE_EXPIRY)
  .refine((body) => Object.values(body).some((value) => value !== undefined), {
    error: 'Nothing to change: give name, status, expiresAt or expiresInDays',
    ...whenFieldsPassed,
  }) satisfies z.ZodType<PatchMcpTokenRequest>;
export const PATCH_NOT_AN_OBJECT = 'Body must be a JSON object: { name?, status?, expiresAt? | expiresInDays? }';

/** PUT /api/mcp/tokens/:id/permissions: replaces the grants. */
export const permissionsBody = z.strictObject({ permissions }, BODY) satisfies z.ZodType<SetMcpPermissionsRequest>;
export const PERMISSIONS_NOT_AN_OBJECT = 'Body must be a JSON object: { permissions: [<permission key>] }';
