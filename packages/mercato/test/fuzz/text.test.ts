/**
 * Fuzz of the scanners every input and step result goes through (db/text.ts, http/body.ts), against simple reference
 * implementations: the same answers on shallow values, linear time on hostile ones (50,000 backslashes, a million
 * nested arrays), and no recursion anywhere (the probe's F3: findBadText overflowed the stack at 5,000 levels).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_STORED_JSON_DEPTH, cleanJson, findBadText, hasBadText, jsonHasBadText } from '../../src/db/text.ts';
import { MAX_JSON_DEPTH, jsonDeeperThan, parseJsonText } from '../../src/http/body.ts';
import { NASTY_STRINGS, casesFor, deepJson, fuzzParams, oddChar, report, timeoutFor } from './harness.ts';

const CASES = casesFor(0.05);

/** JSON values of short odd strings (the reference regular expression is quadratic: no long runs here). */
const value = fc.oneof(
  fc.jsonValue({ stringUnit: oddChar, maxDepth: 4 }),
  fc.dictionary(fc.constantFrom(...NASTY_STRINGS), fc.jsonValue({ stringUnit: oddChar, maxDepth: 2 }), { maxKeys: 3 }),
  fc.array(fc.constantFrom(...NASTY_STRINGS), { maxLength: 4 }),
);

/** The former regular expression (quadratic on runs of backslashes): the reference on small inputs. */
const REFERENCE_ESCAPES = /(?<=(?:^|[^\\])(?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/gi;

/** The former recursive findBadText: the reference on shallow values. */
function referenceFindBadText(value: unknown, root: string): { path: string; what: string } | null {
  const seen = new Set<unknown>();
  const describe = (t: string) => (t.includes('\u0000') ? 'a NUL character (\\u0000)' : 'a lone UTF-16 surrogate');
  const walk = (v: unknown, path: string): { path: string; what: string } | null => {
    if (typeof v === 'string') return hasBadText(v) ? { path, what: describe(v) } : null;
    if (typeof v !== 'object' || v === null || seen.has(v)) return null;
    seen.add(v);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const found = walk(v[i], `${path}[${i}]`);
        if (found) return found;
      }
      return null;
    }
    for (const [key, child] of Object.entries(v)) {
      const at = `${path}.${key}`;
      if (hasBadText(key)) return { path: at, what: `${describe(key)} in a key` };
      const found = walk(child, at);
      if (found) return found;
    }
    return null;
  };
  return walk(value, root);
}

/** Depth of a JSON value (arrays and objects), the reference for jsonDeeperThan. */
function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  return 1 + Math.max(0, ...Object.values(value).map(depthOf));
}

describe('fuzz: text and depth scanners', () => {
  it(
    `${CASES} values: findBadText, jsonHasBadText, cleanJson and jsonDeeperThan agree with the references`,
    () => {
      const started = performance.now();
      let cases = 0;
      fc.assert(
        fc.property(value, (value) => {
          cases++;
          expect(findBadText(value, 'input')).toEqual(referenceFindBadText(value, 'input'));
          const json = JSON.stringify(value) ?? 'null';
          expect(jsonHasBadText(json)).toBe(new RegExp(REFERENCE_ESCAPES.source, 'i').test(json));
          expect(cleanJson(json)).toBe(json.replace(REFERENCE_ESCAPES, '\\ufffd'));
          expect(jsonHasBadText(cleanJson(json))).toBe(false);
          for (const max of [0, 1, 2, 3, 5]) expect(jsonDeeperThan(json, max)).toBe(depthOf(value) > max);
        }),
        fuzzParams(CASES),
      );
      report('text and depth scanners', { cases, ms: performance.now() - started });
    },
    timeoutFor(CASES, 20),
  );

  it('is linear on hostile input: 200,000 backslashes and a million nested arrays take well under a second each', () => {
    const backslashes = JSON.stringify('\\'.repeat(200_000) + 'u0000');
    let t = performance.now();
    expect(jsonHasBadText(backslashes)).toBe(false);
    expect(cleanJson(backslashes)).toBe(backslashes);
    expect(performance.now() - t).toBeLessThan(1000);

    const million = deepJson(1_000_000, 'array');
    t = performance.now();
    expect(jsonDeeperThan(million)).toBe(true);
    expect(() => parseJsonText(million)).toThrow(`Request body must not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep`);
    const value = JSON.parse(million) as unknown;
    expect(findBadText(value, 'input')).toEqual({
      path: 'input[0][0][0][0][0][0][0]…',
      what: `arrays and objects nested more than ${MAX_STORED_JSON_DEPTH} levels deep`,
    });
    expect(performance.now() - t).toBeLessThan(5000);
  });

  it('findBadText accepts exactly MAX_STORED_JSON_DEPTH levels, still finds bad text below them, and survives cycles', () => {
    expect(findBadText(JSON.parse(deepJson(MAX_STORED_JSON_DEPTH, 'mixed')), 'input')).toBeNull();
    expect(findBadText(JSON.parse(deepJson(MAX_STORED_JSON_DEPTH + 1, 'mixed')), 'input')?.what).toMatch(/nested more than/);
    const bad = JSON.parse(deepJson(900, 'object', '"x\\u0000"'));
    expect(findBadText(bad, 'input')).toEqual({ path: `input${'.a'.repeat(900)}`, what: 'a NUL character (\\u0000)' });
    const cycle: Record<string, unknown> = { a: '\ud800' };
    cycle.self = cycle;
    expect(findBadText({ z: cycle, y: cycle }, 'r')).toEqual({ path: 'r.z.a', what: 'a lone UTF-16 surrogate' });
  });

  it('parseJsonText: the depth rule counts the whole body, brackets inside strings do not count', () => {
    expect(parseJsonText(deepJson(MAX_JSON_DEPTH, 'array'))).toBeInstanceOf(Array);
    expect(() => parseJsonText(deepJson(MAX_JSON_DEPTH + 1, 'array'))).toThrow(/more than 256 levels/);
    expect(parseJsonText(JSON.stringify({ s: '['.repeat(10_000) + '\\"{' }))).toEqual({ s: '['.repeat(10_000) + '\\"{' });
    expect(() => parseJsonText('{"a":')).toThrow('Request body must be JSON');
    expect(() => parseJsonText('nope', 'Webhook body')).toThrow('Webhook body must be JSON');
  });
});
