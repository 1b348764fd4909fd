import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidInputError } from '../../src/errors.ts';
import { parseInput } from '../../src/input.ts';

const thrown = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error as InvalidInputError;
  }
  throw new Error('expected a throw');
};

describe('parseInput: zod checks → InvalidInputError { error, field, issues }', () => {
  const body = z.strictObject({
    name: z.string({ error: 'must be a string' }),
    limit: z.number().int().min(1, { error: 'must be at least 1' }).optional(),
  });

  it('returns the parsed value', () => {
    expect(parseInput(body, { name: 'a', limit: 2 })).toEqual({ name: 'a', limit: 2 });
  });

  it('names the first field and the rule, and lists every issue', () => {
    const error = thrown(() => parseInput(body, { name: 3, limit: 0 }));
    expect(error).toBeInstanceOf(InvalidInputError);
    expect(error.message).toBe('name: must be a string');
    expect(error.field).toBe('name');
    expect(error.issues).toEqual([
      { path: 'name', message: 'must be a string', code: 'invalid_type' },
      { path: 'limit', message: 'must be at least 1', code: 'too_small' },
    ]);
    expect(error.details).toMatchObject({ field: 'name' });
  });

  it('an unknown key is "<key>: unknown field" (or query parameter), with the prefix', () => {
    expect(thrown(() => parseInput(body, { name: 'a', extra: 1 })).message).toBe('extra: unknown field');
    expect(thrown(() => parseInput(body, { name: 'a', extra: 1 }, { unknownKey: 'query parameter' })).message).toBe(
      'extra: unknown query parameter',
    );
    const nested = thrown(() => parseInput(body, { name: 'a', x: 1 }, { prefix: 'retryPolicy' }));
    expect([nested.message, nested.field]).toEqual(['retryPolicy.x: unknown field', 'retryPolicy.x']);
  });

  it('a value that is not an object at all', () => {
    const error = thrown(() => parseInput(body, [1]));
    expect([error.message, error.field]).toEqual(['body: must be a JSON object', 'body']);
    expect(thrown(() => parseInput(body, 'x', { notAnObject: 'expected an object' })).message).toBe('expected an object');
  });
});
