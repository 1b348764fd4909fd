/** The run form's model: which schemas get fields, draft ↔ value, and the browser-side validation messages. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type Errors,
  type JsonSchema,
  enumValues,
  fromDraft,
  hasForm,
  issuesToErrors,
  kindOf,
  toDraft,
  validateValue,
} from '../src/lib/schema.ts';

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
      level: 'enum',
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
    Object.assign(draft, { since: '7d', limit: '20', channel: '1', tags: ['vip', 'b2b'], extra: '{"a": 1}', level: '1' });
    draft.customer.email = 'ada@example.com';
    const { value, errors } = submit(input, draft);
    expect(errors).toEqual({});
    expect(value).toEqual({
      since: '7d',
      limit: 20,
      dryRun: false,
      channel: 'pos',
      level: 2,
      customer: { email: 'ada@example.com' },
      tags: ['vip', 'b2b'],
      extra: { a: 1 },
    });
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
    expect(
      issuesToErrors([
        { path: ['customer', 'email'], message: 'Invalid email' },
        { path: [], message: 'Bad' },
        { path: ['tags', 0], message: 'Too short' },
      ]),
    ).toEqual({
      'customer.email': 'Invalid email',
      $: 'Bad',
      'tags.0': 'Too short',
    });
    expect(issuesToErrors(undefined)).toEqual({});
  });

  it('makes a select of a union of constants (z.union of literals), nullable or not', () => {
    const s = schemaOf(
      z.object({
        level: z.union([z.literal(1), z.literal(2), z.literal(3)]),
        size: z
          .union([z.literal('s'), z.literal('m')])
          .nullable()
          .optional(),
        mixed: z.union([z.literal('a'), z.enum(['b', 'c'])]).optional(),
        notConst: z.union([z.literal('a'), z.number()]).optional(),
      }),
    );
    const props = s.properties!;
    expect(kindOf(props.level!)).toBe('enum');
    expect(enumValues(props.level!)).toEqual([1, 2, 3]);
    expect(kindOf(props.size!)).toBe('enum');
    expect(enumValues(props.size!)).toEqual(['s', 'm']);
    expect(enumValues(props.mixed!)).toEqual(['a', 'b', 'c']);
    expect(kindOf(props.notConst!)).toBe('raw');
    // The select's draft is the chosen index; the value is the constant itself.
    expect(submit(s, { level: '', size: '', mixed: '', notConst: '' }).errors).toEqual({ level: 'Required' });
    expect(submit(s, { level: '2', size: '0', mixed: '2', notConst: '' })).toEqual({
      value: { level: 3, size: 's', mixed: 'c' },
      errors: {},
    });
    expect(toDraft(s, { level: 2, size: 'm' })).toMatchObject({ level: '1', size: '1' });
  });
});

describe("Edit as JSON: the value checked with the form's rules", () => {
  const zInput = z.object({
    since: z.string().min(2),
    limit: z.number().int().min(1).max(500).default(50),
    channel: z.enum(['web', 'pos']),
    level: z.union([z.literal(1), z.literal(2)]).optional(),
    customer: z.object({ email: z.email(), note: z.string().nullable().optional() }),
    tags: z.array(z.string()).min(1),
    extra: z.record(z.string(), z.number()).optional(),
  });
  const input = schemaOf(zInput);
  const check = (value: unknown) => {
    const errors: Errors = {};
    validateValue(input, value, '', errors);
    return errors;
  };

  it('accepts what the schema accepts', () => {
    const value = {
      since: '7d',
      channel: 'pos',
      level: 2,
      customer: { email: 'ada@example.com', note: null },
      tags: ['vip'],
      extra: { a: 1 },
    };
    expect(check(value)).toEqual({});
    expect(zInput.safeParse(value).success).toBe(true);
  });

  it('refuses what the form refuses, with the same messages at the same paths', () => {
    const value = { since: '1', limit: 900, channel: 'tv', level: 3, customer: { email: 'nope' }, tags: [] };
    expect(check(value)).toEqual({
      since: 'Must be at least 2 characters',
      limit: 'Must be at most 500',
      channel: 'Must be one of "web", "pos"',
      level: 'Must be one of 1, 2',
      'customer.email': 'Must be an email address',
      tags: 'Add at least 1 item',
    });
    expect(zInput.safeParse(value).success).toBe(false);
    // The same input typed in the form gives the same errors.
    const draft = toDraft(input, { ...value, channel: undefined, level: undefined }) as Record<string, any>;
    const fromForm: Errors = {};
    fromDraft(input, draft, '', fromForm);
    for (const key of ['since', 'limit', 'customer.email', 'tags']) expect(fromForm[key]).toBe(check(value)[key]);
  });

  it('reports missing required fields, wrong types, fractions and bad items', () => {
    expect(check({})).toEqual({ since: 'Required', channel: 'Required', customer: 'Required', tags: 'Required' });
    expect(check({ since: 7, limit: 1.5, channel: 'web', customer: [], tags: ['a', 2] })).toEqual({
      since: 'Must be text',
      limit: 'Must be a whole number',
      customer: 'Must be an object',
      'tags.1': 'Must be text',
    });
    expect(check([])).toEqual({ $: 'Must be an object' });
  });

  it('refuses unknown keys only when the schema closes the object', () => {
    const closed: JsonSchema = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false };
    const errors: Errors = {};
    validateValue(closed, { a: 'x', b: 1 }, '', errors);
    expect(errors).toEqual({ b: 'Not a field of this input' });
    expect(check({ since: '7d', channel: 'web', customer: { email: 'a@b.co' }, tags: ['x'], unknown: true })).toEqual({});
  });
});
