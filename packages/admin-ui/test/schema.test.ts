/** The run form's model: which schemas get fields, draft ↔ value, and the browser-side validation messages. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Errors, type JsonSchema, fromDraft, hasForm, issuesToErrors, kindOf, toDraft } from '../src/lib/schema.ts';

/** The JSON schema the server lists for a flow input (same options as the flow registry). */
const schemaOf = (s: z.ZodType) => z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as JsonSchema;

function submit(schema: JsonSchema, draft = toDraft(schema, undefined)) {
  const errors: Errors = {};
  const value = fromDraft(schema, draft, '', errors);
  return { value, errors };
}

describe('run form model', () => {
  const zInput = z.object({
    since: z.string().min(2),
    limit: z.number().int().min(1).max(500).default(50),
    ratio: z.number().gt(0).optional(),
    dryRun: z.boolean().default(false),
    channel: z.enum(['web', 'pos']),
    level: z.union([z.literal(1), z.literal(2)]).optional(),
    customer: z.object({ email: z.email(), note: z.string().nullable().optional() }),
    tags: z.array(z.string()).min(1),
    extra: z.record(z.string(), z.number()).optional(),
    at: z.iso.datetime().optional(),
  });
  const input = schemaOf(zInput);

  it('gives each property a field kind, and raw JSON to what the form cannot edit', () => {
    expect(hasForm(input)).toBe(true);
    const kinds = Object.fromEntries(Object.entries(input.properties!).map(([k, v]) => [k, kindOf(v)]));
    expect(kinds).toEqual({
      since: 'string',
      limit: 'integer',
      ratio: 'number',
      dryRun: 'boolean',
      channel: 'enum',
      level: 'raw',
      customer: 'object',
      tags: 'array',
      extra: 'raw',
      at: 'string',
    });
    expect(kindOf(input.properties!.customer!.properties!.note!)).toBe('string');
    expect(hasForm(schemaOf(z.string()))).toBe(false);
    expect(hasForm(schemaOf(z.object({})))).toBe(true);
  });

  it('fills defaults and reports every problem next to its field before anything is sent', () => {
    const draft = toDraft(input, undefined) as Record<string, any>;
    expect(draft.limit).toBe('50');
    expect(draft.dryRun).toBe(false);
    draft.limit = '900';
    draft.ratio = '0';
    draft.customer.email = 'not-an-email';
    draft.at = 'yesterday';
    draft.extra = '{ nope';
    const { errors } = submit(input, draft);
    expect(errors).toEqual({
      since: 'Required',
      limit: 'Must be at most 500',
      ratio: 'Must be greater than 0',
      channel: 'Required',
      'customer.email': 'Must be an email address',
      tags: 'Add at least 1 item',
      extra: expect.stringMatching(/^Not valid JSON/),
      at: 'Must be a date and time (ISO 8601)',
    });
  });

  it('turns a valid draft into the input value: numbers, enums, nested objects, arrays, JSON fields', () => {
    const draft = toDraft(input, undefined) as Record<string, any>;
    Object.assign(draft, { since: '7d', limit: '20', channel: '1', tags: ['vip', 'b2b'], extra: '{"a": 1}', level: '2' });
    draft.customer.email = 'ada@example.com';
    const { value, errors } = submit(input, draft);
    expect(errors).toEqual({});
    expect(value).toEqual({ since: '7d', limit: 20, dryRun: false, channel: 'pos', level: 2, customer: { email: 'ada@example.com' }, tags: ['vip', 'b2b'], extra: { a: 1 } });
    // What the form sends is what the flow's own schema accepts.
    expect(zInput.safeParse(value).success).toBe(true);
  });

  it('round-trips a value through the draft (Edit as JSON and back)', () => {
    const value = { since: '1d', limit: 5, dryRun: true, channel: 'web', customer: { email: 'a@b.co', note: 'hi' }, tags: ['x'] };
    const { value: back, errors } = submit(input, toDraft(input, value));
    expect(errors).toEqual({});
    expect(back).toEqual(value);
  });

  it('rejects fractions for integers, and empty array items', () => {
    const s = schemaOf(z.object({ n: z.number().int(), list: z.array(z.number()) }));
    const { errors } = submit(s, { n: '1.5', list: ['2', ''] });
    expect(errors).toEqual({ n: 'Must be a whole number', 'list.1': 'Required' });
  });

  it('maps the server validation issues to field paths', () => {
    expect(issuesToErrors([{ path: ['customer', 'email'], message: 'Invalid email' }, { path: [], message: 'Bad' }, { path: ['tags', 0], message: 'Too short' }])).toEqual({
      'customer.email': 'Invalid email',
      $: 'Bad',
      'tags.0': 'Too short',
    });
    expect(issuesToErrors(undefined)).toEqual({});
  });
});
