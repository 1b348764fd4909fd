import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { FieldsMap } from '../../src/app/types.ts';
import {
  type FieldError,
  coerce,
  dashboardStatus,
  isConfigured,
  publicConfig,
  runValidator,
  typeProblem,
} from '../../src/providers/fields.ts';
import { scrub, scrubError, secretValues } from '../../src/providers/scrub.ts';

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
    // without an error list (providers), a non-numeric string is left for the type check after the transformer
    expect(coerce(fields, { n: 'abc' })).toEqual({ n: 'abc' });
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

  it('the public config has declared non-password fields only; secrets include what a transformer added', () => {
    const saved = { n: 1, p: 'hunter22', s: 'a', sessionToken: 'derived-hunter22', nested: { token: 'deep-secret', port: 12345 } };
    expect(publicConfig(fields, saved)).toEqual({ n: 1, s: 'a' });
    expect(secretValues(fields, saved)).toEqual(['derived-hunter22', 'deep-secret', 'hunter22', '12345']);
    expect(scrub('got derived-hunter22', secretValues(fields, saved))).toBe('got [redacted]');
  });

  it('scrubs an error in place (message, stack, cause), a thrown string, and anything else', () => {
    class RemoteError extends Error {}
    const error = new RemoteError('refused hunter22', { cause: new Error('inner hunter22') });
    const scrubbed = scrubError(error, ['hunter22']) as Error;
    expect(scrubbed).toBe(error);
    expect(scrubbed.message).toBe('refused [redacted]');
    expect(scrubbed.stack).not.toContain('hunter22');
    expect((scrubbed.cause as Error).message).toBe('inner [redacted]');
    const frozen = Object.freeze(new TypeError('bad hunter22'));
    const copy = scrubError(frozen, ['hunter22']) as Error;
    expect([copy.name, copy.message, copy.stack?.includes('hunter22')]).toEqual(['TypeError', 'bad [redacted]', false]);
    expect(scrubError('plain hunter22', ['hunter22'])).toBe('plain [redacted]');
    expect((scrubError({ key: 'hunter22' }, ['hunter22']) as Error).message).toBe('{"key":"[redacted]"}');
  });

  it('runs validators with safeParseAsync, or safeParse when that is all they have', async () => {
    const sync = {
      safeParse: (v: unknown) =>
        v === 'ok' ? { success: true, data: 'OK' } : { success: false, error: { issues: [{ message: 'nope' }] } },
    };
    expect(await runValidator(sync, 'ok')).toEqual({ ok: true, value: 'OK' });
    expect(await runValidator(sync, 'x')).toEqual({ ok: false, reason: 'nope' });
    expect(
      await runValidator(
        z.string().transform((v) => v.length),
        'abc',
      ),
    ).toEqual({ ok: true, value: 3 });
    expect(await runValidator({}, 'x')).toEqual({ ok: false, reason: 'has a validator without safeParse or safeParseAsync' });
    expect(
      await runValidator(
        {
          safeParse: () => {
            throw new Error('hunter22');
          },
        },
        'x',
      ),
    ).toEqual({ ok: false, reason: 'could not be validated (its validator threw)' });
  });
});
