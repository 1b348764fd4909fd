/** The built-in input validator: exactly the spec's JSON Schema subset, and the start-up check of custom schemas. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { schemaProblems, validate } from '../../src/app/json-schema.ts';

const paths = (issues: { path: string }[]) => issues.map((i) => i.path);

describe('validate', () => {
  it('checks each type, including integer vs number and null', () => {
    const cases: Array<[string, unknown, boolean]> = [
      ['object', {}, true],
      ['object', [], false],
      ['object', null, false],
      ['array', [], true],
      ['array', {}, false],
      ['string', '', true],
      ['string', 1, false],
      ['number', 1.5, true],
      ['number', Number.NaN, false],
      ['number', '1', false],
      ['integer', 3, true],
      ['integer', 3.5, false],
      ['boolean', false, true],
      ['boolean', 0, false],
      ['null', null, true],
      ['null', undefined, false],
    ];
    for (const [type, value, ok] of cases) expect(validate({ type }, value).length === 0, `${type} ${JSON.stringify(value)}`).toBe(ok);
    expect(validate({ type: ['string', 'null'] }, null)).toEqual([]);
    expect(validate({ type: ['string', 'null'] }, 1)).toEqual([
      { path: '', message: 'must be string or null (got integer)', expected: 'string or null', received: 'integer' },
    ]);
  });

  it('required, properties, additionalProperties (false or a schema), items, nested paths as JSON Pointers', () => {
    const schema = {
      type: 'object',
      required: ['id', 'tags'],
      properties: {
        id: { type: 'integer' },
        tags: { type: 'array', items: { type: 'string' } },
        'a/b': { type: 'object', additionalProperties: { type: 'number' } },
      },
      additionalProperties: false,
    };
    expect(validate(schema, { id: 1, tags: ['x'] })).toEqual([]);
    expect(paths(validate(schema, {}))).toEqual(['/id', '/tags']);
    expect(validate(schema, { id: 1, tags: ['x', 2], extra: true, 'a/b': { k: 'v' } })).toEqual([
      { path: '/tags/1', message: 'must be string (got integer)', expected: 'string', received: 'integer' },
      {
        path: '/extra',
        message: 'is not an allowed property',
        expected: 'one of the properties id, tags, a/b',
        received: 'property "extra"',
      },
      { path: '/a~1b/k', message: 'must be number (got string)', expected: 'number', received: 'string' },
    ]);
    // a property name that is not a plain name is not repeated (caller's text: it could look like anything)
    expect(validate(schema, { id: 1, tags: [], 'at Object.<anonymous> (/work/x.ts:1:1)': null, 'x\u0000': 1 })).toEqual([
      expect.objectContaining({ path: '/(a property with an unusual name)', received: 'property "(a property with an unusual name)"' }),
      expect.objectContaining({ path: '/(a property with an unusual name)' }),
    ]);
    // Without additionalProperties, other keys are allowed.
    expect(validate({ type: 'object', properties: { a: { type: 'string' } } }, { b: 1 })).toEqual([]);
  });

  it('numeric bounds (inclusive and exclusive) and enum by JSON value', () => {
    const n = { type: 'number', minimum: 1, maximum: 10, exclusiveMinimum: 0, exclusiveMaximum: 10 };
    expect(validate(n, 1)).toEqual([]);
    expect(validate(n, 0.5).map((i) => i.message)).toEqual(['must be >= 1']);
    expect(validate(n, 10).map((i) => i.message)).toEqual(['must be < 10']);
    expect(validate({ enum: ['a', 1, null, { x: [1] }] }, { x: [1] })).toEqual([]);
    expect(validate({ enum: ['a', 1] }, '1')).toEqual([
      { path: '', message: 'must be one of "a", 1', expected: 'one of "a", 1', received: '"1"' },
    ]);
  });

  it('ignores annotations and reports at most 20 issues', () => {
    expect(validate({ type: 'string', title: 't', description: 'd', default: 'x', examples: ['y'] }, 'z')).toEqual([]);
    const many = validate(
      { type: 'array', items: { type: 'string' } },
      Array.from({ length: 50 }, (_, i) => i),
    );
    expect(many).toHaveLength(20);
  });
});

describe('schemaProblems', () => {
  it('accepts the subset, reports any other keyword and malformed values with their path', () => {
    expect(
      schemaProblems({
        type: 'object',
        properties: { a: { type: ['string', 'null'], enum: ['x', null] } },
        required: ['a'],
        additionalProperties: false,
      }),
    ).toEqual([]);
    expect(
      schemaProblems({
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 1, pattern: '^a' },
          n: { type: 'float' },
          list: { type: 'array', items: { oneOf: [] } },
        },
        required: 'name',
        $ref: '#/x',
      }),
    ).toEqual([
      'inputSchema.properties.name.minLength: unsupported keyword (the validator supports type, required, properties, additionalProperties, items, minimum, maximum, exclusiveMinimum, exclusiveMaximum, enum)',
      'inputSchema.properties.name.pattern: unsupported keyword (the validator supports type, required, properties, additionalProperties, items, minimum, maximum, exclusiveMinimum, exclusiveMaximum, enum)',
      'inputSchema.properties.n.type: must be one of object, array, string, number, integer, boolean, null or an array of them',
      'inputSchema.properties.list.items.oneOf: unsupported keyword (the validator supports type, required, properties, additionalProperties, items, minimum, maximum, exclusiveMinimum, exclusiveMaximum, enum)',
      'inputSchema.required: must be an array of property names',
      'inputSchema.$ref: unsupported keyword (the validator supports type, required, properties, additionalProperties, items, minimum, maximum, exclusiveMinimum, exclusiveMaximum, enum)',
    ]);
  });

  it('a custom tool whose schema the validator cannot enforce fails config validation (so mercato check reports it)', () => {
    const app = defineApp();
    expect(() =>
      app.defineConfig({
        flows: { noop: app.defineFlow({ name: 'noop', input: z.object({}), run: () => null }) },
        mcp: {
          tools: {
            'x.y': {
              description: 'd',
              requiredPermissions: [],
              inputSchema: { type: 'object', properties: { q: { type: 'string', maxLength: 5 } } },
              run: () => 'ok',
            },
          },
        },
      }),
    ).toThrow(/mcp\.tools\["x\.y"\]\.inputSchema\.properties\.q\.maxLength: unsupported keyword/);
  });
});
