/** The log query language: every construct parses to the expected tree; every error names its position and reason. */
import { describe, expect, it } from 'vitest';
import { MAX_CONTEXT_LINES, MAX_QUERY_CHARS, MAX_REGEX_CHARS, QueryError, parseQuery, regexesOf } from '../../src/logs/query.ts';
import { thrown } from '../kit/index.ts';

const where = (q: string) => parseQuery(q).where;
function errorOf(q: string): { position: number; reason: string } {
  const { position, reason } = thrown(() => parseQuery(q), QueryError);
  return { position, reason };
}

describe('log query parser', () => {
  it('an empty or blank query has no condition and no context', () => {
    expect(parseQuery('')).toEqual({ where: null, before: 0, after: 0 });
    expect(parseQuery(undefined)).toEqual({ where: null, before: 0, after: 0 });
    expect(parseQuery('   ')).toEqual({ where: null, before: 0, after: 0 });
  });

  it('free text words and quoted phrases (with escapes) are text terms, ANDed', () => {
    expect(where('timeout')).toEqual({ kind: 'text', value: 'timeout' });
    expect(where('order "payment failed"')).toEqual({
      kind: 'and',
      items: [
        { kind: 'text', value: 'order' },
        { kind: 'text', value: 'payment failed' },
      ],
    });
    expect(where('"say \\"hi\\" \\\\ now"')).toEqual({ kind: 'text', value: 'say "hi" \\ now' });
    expect(where('a AND b')).toEqual(where('a b'));
    expect(where('https://x.test/a?b=1')).toEqual({ kind: 'text', value: 'https://x.test/a?b=1' });
    expect(where('Error: c:3 or')).toEqual({
      kind: 'and',
      items: [
        { kind: 'text', value: 'Error:' },
        { kind: 'text', value: 'c:3' },
        { kind: 'text', value: 'or' },
      ],
    });
  });

  it('exclusion: -word, -"phrase", -field, -(group) and NOT', () => {
    expect(where('-debug')).toEqual({ kind: 'not', item: { kind: 'text', value: 'debug' } });
    expect(where('-"health check"')).toEqual({ kind: 'not', item: { kind: 'text', value: 'health check' } });
    expect(where('-level:info')).toEqual({ kind: 'not', item: { kind: 'level', op: '=', value: 'info' } });
    expect(where('NOT x')).toEqual({ kind: 'not', item: { kind: 'text', value: 'x' } });
    expect(where('-(a OR b)')).toEqual({
      kind: 'not',
      item: {
        kind: 'or',
        items: [
          { kind: 'text', value: 'a' },
          { kind: 'text', value: 'b' },
        ],
      },
    });
    expect(where('foo-bar')).toEqual({ kind: 'text', value: 'foo-bar' });
  });

  it('OR binds looser than AND; parentheses group', () => {
    expect(where('a b OR c')).toEqual({
      kind: 'or',
      items: [
        {
          kind: 'and',
          items: [
            { kind: 'text', value: 'a' },
            { kind: 'text', value: 'b' },
          ],
        },
        { kind: 'text', value: 'c' },
      ],
    });
    expect(where('a (b OR c)')).toEqual({
      kind: 'and',
      items: [
        { kind: 'text', value: 'a' },
        {
          kind: 'or',
          items: [
            { kind: 'text', value: 'b' },
            { kind: 'text', value: 'c' },
          ],
        },
      ],
    });
  });

  it('regular expressions: /pattern/ and /pattern/i, with \\/ for a slash; other escapes kept', () => {
    expect(where('/time(out)?\\s+\\d+/')).toEqual({ kind: 'regex', pattern: 'time(out)?\\s+\\d+', caseInsensitive: false, position: 0 });
    expect(where('x /a\\/b c/i')).toMatchObject({
      items: [{ kind: 'text' }, { kind: 'regex', pattern: 'a/b c', caseInsensitive: true, position: 2 }],
    });
    expect(regexesOf(where('/a/ (b OR -/c/)')).map((r) => r.pattern)).toEqual(['a', 'c']);
  });

  it('field filters: level (with comparisons), step (exact, prefix, quoted), attempt (with comparisons)', () => {
    expect(where('level:warn')).toEqual({ kind: 'level', op: '=', value: 'warn' });
    expect(where('level:>=warn')).toEqual({ kind: 'level', op: '>=', value: 'warn' });
    expect(where('step:fetch')).toEqual({ kind: 'step', value: 'fetch', prefix: false });
    expect(where('step:push:*')).toEqual({ kind: 'step', value: 'push:', prefix: true });
    expect(where('step:"fetch orders"')).toEqual({ kind: 'step', value: 'fetch orders', prefix: false });
    expect(where('attempt:2')).toEqual({ kind: 'attempt', op: '=', value: 2 });
    expect(where('attempt:>1')).toEqual({ kind: 'attempt', op: '>', value: 1 });
    expect(where('attempt:<=3')).toEqual({ kind: 'attempt', op: '<=', value: 3 });
  });

  it('level, step and attempt also take the operator form (=, !=, and for level/attempt >, >=, <, <=)', () => {
    expect(where('level>=warn')).toEqual({ kind: 'level', op: '>=', value: 'warn' });
    expect(where('level!=info')).toEqual({ kind: 'level', op: '!=', value: 'info' });
    expect(where('level="error"')).toEqual({ kind: 'level', op: '=', value: 'error' });
    expect(where('attempt=2')).toEqual({ kind: 'attempt', op: '=', value: 2 });
    expect(where('attempt>1')).toEqual({ kind: 'attempt', op: '>', value: 1 });
    expect(where('step=fetch')).toEqual({ kind: 'step', value: 'fetch', prefix: false });
    expect(where('step!=push:*')).toEqual({ kind: 'not', item: { kind: 'step', value: 'push:', prefix: true } });
  });

  it('data keys: = != > >= < <=, nested paths with an optional data. prefix, typed values', () => {
    expect(where('orderId=1001')).toEqual({ kind: 'data', path: ['orderId'], op: '=', value: { type: 'number', raw: '1001' } });
    expect(where('data.customer.id=42')).toEqual({ kind: 'data', path: ['customer', 'id'], op: '=', value: { type: 'number', raw: '42' } });
    expect(where('customer.id=42')).toEqual(where('data.customer.id=42'));
    expect(where('items.0.sku=AB-1')).toEqual({
      kind: 'data',
      path: ['items', '0', 'sku'],
      op: '=',
      value: { type: 'string', value: 'AB-1' },
    });
    expect(where('orderId="1001"')).toEqual({ kind: 'data', path: ['orderId'], op: '=', value: { type: 'string', value: '1001' } });
    expect(where('name="Jane Doe"')).toEqual({ kind: 'data', path: ['name'], op: '=', value: { type: 'string', value: 'Jane Doe' } });
    expect(where('paid=true')).toEqual({ kind: 'data', path: ['paid'], op: '=', value: { type: 'boolean', value: true } });
    expect(where('coupon=null')).toEqual({ kind: 'data', path: ['coupon'], op: '=', value: { type: 'null' } });
    expect(where('total>=99.5')).toEqual({ kind: 'data', path: ['total'], op: '>=', value: { type: 'number', raw: '99.5' } });
    expect(where('total<-1e3')).toEqual({ kind: 'data', path: ['total'], op: '<', value: { type: 'number', raw: '-1e3' } });
    expect(where('status!=ok')).toEqual({ kind: 'data', path: ['status'], op: '!=', value: { type: 'string', value: 'ok' } });
    expect(where('data.attempt=2')).toEqual({ kind: 'data', path: ['attempt'], op: '=', value: { type: 'number', raw: '2' } });
    expect(where('data.level=warn')).toEqual({ kind: 'data', path: ['level'], op: '=', value: { type: 'string', value: 'warn' } });
    expect(where('data=1')).toEqual({ kind: 'data', path: ['data'], op: '=', value: { type: 'number', raw: '1' } });
  });

  it('time bounds: last:<n><s|m|h|d|w>, from:/to: ISO times (UTC when no offset)', () => {
    expect(where('last:15m')).toEqual({ kind: 'last', ms: 15 * 60_000 });
    expect(where('last:2h')).toEqual({ kind: 'last', ms: 7_200_000 });
    expect(where('last:30s')).toEqual({ kind: 'last', ms: 30_000 });
    expect(where('last:7d')).toEqual({ kind: 'last', ms: 7 * 86_400_000 });
    expect(where('last:1w')).toEqual({ kind: 'last', ms: 604_800_000 });
    expect(where('from:2026-11-01T00:00:00Z')).toEqual({ kind: 'time', op: '>=', at: new Date('2026-11-01T00:00:00Z') });
    expect(where('to:2026-11-01T10:30:00')).toEqual({ kind: 'time', op: '<=', at: new Date('2026-11-01T10:30:00Z') });
    expect(where('from:2026-11-01')).toEqual({ kind: 'time', op: '>=', at: new Date('2026-11-01T00:00:00Z') });
    expect(where('from:2026-11-01T10:00:00+02:00')).toEqual({ kind: 'time', op: '>=', at: new Date('2026-11-01T08:00:00Z') });
  });

  it('context: C:n sets both sides, B:/A: override one side; directives are not terms', () => {
    expect(parseQuery('error C:3')).toEqual({ where: { kind: 'text', value: 'error' }, before: 3, after: 3 });
    expect(parseQuery('B:2 A:5 x')).toMatchObject({ before: 2, after: 5 });
    expect(parseQuery('A:1 C:4')).toMatchObject({ before: 4, after: 1 });
    expect(parseQuery('C:2')).toEqual({ where: null, before: 2, after: 2 });
    expect(parseQuery(`a OR b C:${MAX_CONTEXT_LINES}`)).toMatchObject({ before: MAX_CONTEXT_LINES, after: MAX_CONTEXT_LINES });
  });

  it.each([
    ['"abc', 0, /unterminated quoted phrase/],
    ['x /abc', 2, /unterminated regular expression/],
    ['/api/orders', 5, /unknown regular-expression flags/],
    ['//', 0, /empty regular expression/],
    [`/${'a'.repeat(MAX_REGEX_CHARS + 1)}/`, 0, /at most 256 characters/],
    ['(a b', 0, /unclosed parenthesis/],
    ['a b)', 3, /unexpected "\)"/],
    ['()', 0, /empty parentheses/],
    ['a OR', 2, /OR needs a term on each side/],
    ['OR a', 0, /OR needs a term on each side/],
    ['a AND', 2, /AND needs a term on each side/],
    ['a - b', 2, /"-" must be followed/],
    ['--x', 0, /cannot start with "--"/],
    ['NOT', 3, /ends where a term was expected/],
    ['x level:debug', 8, /level: must be info, warn or error/],
    ['level:>=fatal', 8, /level: must be/],
    ['attempt:two', 8, /attempt: must be a whole number/],
    ['attempt>=x', 9, /attempt: must be a whole number/],
    ['level<debug', 6, /level: must be info, warn or error/],
    ['step>fetch', 4, /step: compares with = or != only/],
    ['step:', 5, /step: is missing its value/],
    ['last:15x', 5, /last: needs a duration/],
    ['from:yesterday', 5, /from: needs an ISO 8601 time/],
    ['to:2026-02-30', 3, /not a valid time/],
    ['C:99', 2, /from 0 to 20/],
    ['B:x', 2, /from 0 to 20/],
    ['(a C:3)', 3, /context .* cannot be negated or used inside parentheses/],
    ['-C:3', 1, /context/],
    ['orderId=', 8, /is missing its value/],
    ['paid>true', 5, /compares numbers or strings/],
    ['say"hi"', 3, /a quote inside a word/],
    ['name="x"y', 8, /expected a space after the quoted value/],
    ['""', 0, /empty phrase/],
  ])('%j is an error at position %i', (q, position, reason) => {
    const e = errorOf(q);
    expect(e.reason).toMatch(reason);
    expect(e.position).toBe(position);
  });

  it('limits the query length and the number of terms', () => {
    expect(errorOf('a'.repeat(MAX_QUERY_CHARS + 1)).reason).toMatch(/longer than 1000/);
    expect(errorOf(Array.from({ length: 65 }, (_, i) => `w${i}`).join(' ')).reason).toMatch(/at most 64 terms/);
  });
});
