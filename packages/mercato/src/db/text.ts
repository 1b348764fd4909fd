/**
 * Text PostgreSQL cannot store: NUL (U+0000) is refused in `text` and `jsonb`, and a lone UTF-16 surrogate is refused
 * in `jsonb` (JSON.stringify writes it as a `\udXXX` escape). Log lines and stored errors are cleaned (each such character
 * becomes U+FFFD); inputs and step results are refused with an error naming where the character is.
 */

export const REPLACEMENT_CHAR = '\uFFFD';

// eslint-disable-next-line no-control-regex -- NUL is exactly the character PostgreSQL refuses
const BAD_CHARS = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** In JSON.stringify output: a `\u0000` escape or a surrogate escape (paired surrogates are never escaped), not itself escaped. */
const BAD_ESCAPES = /(?<=(?:^|[^\\])(?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/gi;

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

/** JSON text (as JSON.stringify writes it) with NUL and lone-surrogate escapes replaced by `\ufffd`. */
export function cleanJson(json: string): string {
  return json.replace(BAD_ESCAPES, '\\ufffd');
}

export function jsonHasBadText(json: string): boolean {
  BAD_ESCAPES.lastIndex = 0;
  const found = BAD_ESCAPES.test(json);
  BAD_ESCAPES.lastIndex = 0;
  return found;
}

/** Describes the offending character of a string for error messages. */
export function describeBadText(text: string): string {
  return text.includes('\u0000') ? 'a NUL character (\\u0000)' : 'a lone UTF-16 surrogate';
}

/**
 * Where the first string or key PostgreSQL cannot store sits in a JSON-like value: `{ path, what }` with a dotted path
 * below `root` (`input.customer.name`, `input.items[2]`), or null when there is none.
 */
export function findBadText(value: unknown, root: string): { path: string; what: string } | null {
  const seen = new Set<unknown>();
  const walk = (v: unknown, path: string): { path: string; what: string } | null => {
    if (typeof v === 'string') return hasBadText(v) ? { path, what: describeBadText(v) } : null;
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
      if (hasBadText(key)) return { path: at, what: `${describeBadText(key)} in a key` };
      const found = walk(child, at);
      if (found) return found;
    }
    return null;
  };
  return walk(value, root);
}
