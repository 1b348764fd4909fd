import { describe, expect, it } from 'vitest';
import type { FieldsMap } from '../../src/app/types.ts';
import { type FieldError, coerce, dashboardStatus, isConfigured, publicConfig, scrub, secretValues, typeProblem } from '../../src/providers/fields.ts';

const fields: FieldsMap = {
  n: { type: 'number', label: 'N' },
  c: { type: 'checkbox', label: 'C', required: false },
  p: { type: 'password', label: 'P' },
  s: { type: 'select', label: 'S', options: [{ label: 'A', value: 'a' }] },
  t: { type: 'text', label: 'T', required: false },
};

describe('provider fields', () => {
  it('coerces numbers from non-empty strings and checkboxes from strings', () => {
    const errors: FieldError[] = [];
    expect(coerce(fields, { n: ' 42 ', c: 'true' }, errors)).toEqual({ n: 42, c: true });
    expect(coerce(fields, { n: '1e3', c: 'TRUE' }, errors)).toEqual({ n: 1000, c: false });
    expect(coerce(fields, { n: '', c: 'false' }, errors)).toEqual({ n: undefined, c: false });
    expect(coerce(fields, { n: 7, c: true }, errors)).toEqual({ n: 7, c: true });
    expect(errors).toEqual([]);
    coerce(fields, { n: 'abc' }, errors);
    expect(errors).toEqual([{ field: 'n', message: 'Field "n": must be a number' }]);
  });

  it('checks value types after coercion', () => {
    expect(typeProblem(fields.t, 5)).toBe('must be a string');
    expect(typeProblem(fields.c, 'x')).toBe('must be a boolean');
    expect(typeProblem(fields.s, 'b')).toBe('must be one of a');
    expect(typeProblem(fields.s, 'a')).toBeUndefined();
    expect(typeProblem(fields.n, Number.NaN)).toBe('must be a number');
    expect(typeProblem(fields.t, '')).toBeUndefined();
  });

  it('is configured when every required field has a value; optional ones do not matter', () => {
    expect(isConfigured(fields, undefined)).toBe(false);
    expect(isConfigured(fields, { n: 1, p: 'x', s: 'a' })).toBe(true);
    expect(isConfigured(fields, { n: 1, p: '', s: 'a' })).toBe(false);
    expect(isConfigured(fields, { n: 0, p: 'x', s: 'a' })).toBe(true); // 0 is a value
  });

  it('derives the dashboard status', () => {
    expect(dashboardStatus(false, true)).toBe('Not configured');
    expect(dashboardStatus(true, null)).toBe('Configured');
    expect(dashboardStatus(true, true)).toBe('Connected');
    expect(dashboardStatus(true, false)).toBe('Error');
  });

  it('never puts password values in the public config and scrubs them from messages', () => {
    const saved = { n: 1, p: 'hunter22', s: 'a' };
    expect(publicConfig(fields, saved)).toEqual({ n: 1, s: 'a' });
    expect(scrub('login hunter22 failed (hunter22)', secretValues(fields, saved))).toBe('login [redacted] failed ([redacted])');
  });
});
