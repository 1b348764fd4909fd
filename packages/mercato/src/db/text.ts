/**
 * Text PostgreSQL cannot store: NUL (U+0000) is refused in `text` and `jsonb`, and a lone UTF-16 surrogate is refused
 * in `jsonb` (JSON.stringify writes it as a `\udXXX` escape). Log lines and stored errors are cleaned (each such character
 * becomes U+FFFD); inputs and step results are refused with an error naming where the character is. Values nested more
 * than MAX_STORED_JSON_DEPTH levels are refused too (JSON.stringify and PostgreSQL's JSON parser recurse, and fail
 * at about 4,000 levels). Every scan here is linear and without recursion, whatever the input.
 */

export const REPLACEMENT_CHAR = '\uFFFD';

/** Deepest nesting of arrays and objects findBadText accepts (`{"a":1}` is 1 level). */
export const MAX_STORED_JSON_DEPTH = 1000;

// eslint-disable-next-line no-control-regex -- NUL is exactly the character PostgreSQL refuses
const BAD_CHARS = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** The four hex digits of a `\u0000` escape or a surrogate escape (paired surrogates are never escaped by JSON.stringify). */
const BAD_ESCAPE_HEX = /^(?:0000|d[89a-f][0-9a-f]{2})$/i;

/** The text with NUL characters and lone surrogates replaced by U+FFFD. */
export function cleanText(text: string): string {
  return text.replace(BAD_CHARS, REPLACEMENT_CHAR);
}

export function hasBadText(text: string): boolean {
  BAD_CHARS.lastIndex = 0;
  const found = BAD_CHARS.test(text);
  BAD_CHARS.lastIndex = 0;
  return found;
}

/**
 * Index of the first NUL or lone-surrogate escape at or after `from` in JSON text (as JSON.stringify writes it), or -1.
 * Escapes are read left to right, so the `\\u0000` of an escaped backslash followed by `u0000` is not one. Linear: a
 * regular expression with a look-behind over the backslashes before each escape took quadratic time (9 s for 50,000).
 */
function badEscapeAt(json: string, from: number): number {
  for (let i = json.indexOf('\\', from); i !== -1; i = json.indexOf('\\', i)) {
    if (json.charCodeAt(i + 1) === 0x75 /* u */) {
      if (BAD_ESCAPE_HEX.test(json.slice(i + 2, i + 6))) return i;
      i += 6;
    } else i += 2;
  }
  return -1;
}

/** JSON text (as JSON.stringify writes it) with NUL and lone-surrogate escapes replaced by `\ufffd`. */
export function cleanJson(json: string): string {
  let at = badEscapeAt(json, 0);
  if (at === -1) return json;
  let out = '';
  let last = 0;
  for (; at !== -1; at = badEscapeAt(json, last)) {
    out += json.slice(last, at) + '\\ufffd';
    last = at + 6;
  }
  return out + json.slice(last);
}

export function jsonHasBadText(json: string): boolean {
  return badEscapeAt(json, 0) !== -1;
}

/** Describes the offending character of a string for error messages. */
export function describeBadText(text: string): string {
  return text.includes('\u0000') ? 'a NUL character (\\u0000)' : 'a lone UTF-16 surrogate';
}

/**
 * Where the first string or key PostgreSQL cannot store, or the first array or object nested more than
 * MAX_STORED_JSON_DEPTH levels, sits in a JSON-like value: `{ path, what }` with a dotted path below `root`
 * (`input.customer.name`, `input.items[2]`; cut after a few segments for the nesting), or null when there is none.
 * Iterative (an explicit stack, in document order), so no nesting depth can overflow the call stack; the path is built
 * only for the value found.
 */
export function findBadText(value: unknown, root: string): { path: string; what: string } | null {
  interface Item {
    value: unknown;
    parent: Item | null;
    /** The path segment below the parent (`.key` or `[i]`); the key itself when `key` is set. */
    segment: string;
    key?: string;
    /** Nesting level of the value if it is an array or object (1 for the root). */
    depth: number;
  }
  const pathOf = (item: Item, maxSegments = Infinity): string => {
    const segments: string[] = [];
    for (let at: Item | null = item; at; at = at.parent) segments.push(at.segment);
    segments.reverse();
    return root + (segments.length > maxSegments ? `${segments.slice(0, maxSegments).join('')}…` : segments.join(''));
  };
  const seen = new Set<unknown>();
  const stack: Item[] = [{ value, parent: null, segment: '', depth: 1 }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (item.key !== undefined && hasBadText(item.key)) return { path: pathOf(item), what: `${describeBadText(item.key)} in a key` };
    const v = item.value;
    if (typeof v === 'string') {
      if (hasBadText(v)) return { path: pathOf(item), what: describeBadText(v) };
      continue;
    }
    if (typeof v !== 'object' || v === null || seen.has(v)) continue;
    if (item.depth > MAX_STORED_JSON_DEPTH)
      return { path: pathOf(item, 8), what: `arrays and objects nested more than ${MAX_STORED_JSON_DEPTH} levels deep` };
    seen.add(v);
    const depth = item.depth + 1;
    // children pushed last-first, so they are popped in document order
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], parent: item, segment: `[${i}]`, depth });
    } else {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        stack.push({ value: child, parent: item, segment: `.${key}`, key, depth });
      }
    }
  }
  return null;
}
