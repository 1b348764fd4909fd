/**
 * The admin log query language (docs/logs.md): a query string → a syntax tree. No SQL here (see sql.ts).
 *
 *   query   := or
 *   or      := and ( "OR" and )*
 *   and     := unary ( ["AND"] unary )*
 *   unary   := ( "-" | "NOT" ) unary | "(" or ")" | term
 *   term    := phrase | regex | field | data | context | word
 *
 * Every error is a QueryError with the 0-based character position it refers to and a reason.
 */
import { InvalidInputError } from '../errors.ts';
import type { LogLevel } from './writer.ts';

export const MAX_QUERY_CHARS = 1000;
export const MAX_QUERY_TERMS = 64;
export const MAX_REGEX_CHARS = 256;
export const MAX_CONTEXT_LINES = 20;

/** A query that does not parse (or a regular expression PostgreSQL refuses): 400 `{ error, field: 'q', position, reason }`. */
export class QueryError extends InvalidInputError {
  readonly position: number;
  readonly reason: string;
  constructor(position: number, reason: string) {
    super(`Invalid query at position ${position}: ${reason}`, { field: 'q', details: { position, reason } });
    this.position = position;
    this.reason = reason;
  }
}

export type Cmp = '=' | '!=' | '>' | '>=' | '<' | '<=';
export type DataValue =
  { type: 'number'; raw: string } | { type: 'string'; value: string } | { type: 'boolean'; value: boolean } | { type: 'null' };

export type QueryNode =
  | { kind: 'and'; items: QueryNode[] }
  | { kind: 'or'; items: QueryNode[] }
  | { kind: 'not'; item: QueryNode }
  | { kind: 'text'; value: string }
  | { kind: 'regex'; pattern: string; caseInsensitive: boolean; position: number }
  | { kind: 'level'; op: Cmp; value: LogLevel }
  | { kind: 'step'; value: string; prefix: boolean }
  | { kind: 'attempt'; op: Cmp; value: number }
  | { kind: 'data'; path: string[]; op: Cmp; value: DataValue }
  | { kind: 'time'; op: '>=' | '<='; at: Date }
  | { kind: 'last'; ms: number };

export interface ParsedQuery {
  /** null: no filter (every line matches). */
  where: QueryNode | null;
  /** Context lines before / after each match (0 = none). */
  before: number;
  after: number;
}

// ---------------------------------------------------------------------------------------------
// Lexer

type Token =
  | { t: '('; pos: number }
  | { t: ')'; pos: number }
  | { t: 'not'; pos: number }
  | { t: 'phrase'; pos: number; value: string }
  | { t: 'regex'; pos: number; pattern: string; flags: string }
  /** A bare term; `quoted` is the quoted value that followed `name:` or `key<op>`, if any. */
  | { t: 'word'; pos: number; raw: string; quoted?: { value: string; pos: number } };

const isSpace = (ch: string) => /\s/.test(ch);
const endsWord = (ch: string | undefined) => ch === undefined || isSpace(ch) || ch === '(' || ch === ')';

function readQuoted(q: string, start: number): { value: string; end: number } {
  let value = '';
  let i = start + 1;
  while (i < q.length) {
    const ch = q[i];
    if (ch === '\\' && i + 1 < q.length) {
      value += q[i + 1];
      i += 2;
    } else if (ch === '"') {
      return { value, end: i + 1 };
    } else {
      value += ch;
      i++;
    }
  }
  throw new QueryError(start, 'unterminated quoted phrase (missing closing ")');
}

function readRegex(q: string, start: number): { pattern: string; flags: string; end: number } {
  let pattern = '';
  let i = start + 1;
  while (i < q.length) {
    const ch = q[i];
    if (ch === '\\' && i + 1 < q.length) {
      // `\/` is a literal slash; every other escape is handed to the regex engine unchanged.
      pattern += q[i + 1] === '/' ? '/' : ch + q[i + 1];
      i += 2;
      continue;
    }
    if (ch === '/') {
      let j = i + 1;
      while (j < q.length && !endsWord(q[j])) j++;
      const flags = q.slice(i + 1, j);
      if (!/^i?$/.test(flags)) {
        throw new QueryError(
          i + 1,
          `unknown regular-expression flags "${flags}" (only "i" exists; to search text that starts with "/", quote it)`,
        );
      }
      return { pattern, flags, end: j };
    }
    pattern += ch;
    i++;
  }
  throw new QueryError(start, 'unterminated regular expression (missing closing /)');
}

export function tokenize(q: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < q.length) {
    const ch = q[i];
    if (isSpace(ch)) {
      i++;
    } else if (ch === '(' || ch === ')') {
      tokens.push({ t: ch, pos: i });
      i++;
    } else if (ch === '-') {
      const next = q[i + 1];
      if (next === undefined || isSpace(next) || next === ')') throw new QueryError(i, '"-" must be followed by the term to exclude');
      if (next === '-') throw new QueryError(i, 'a term cannot start with "--" (quote it to search for it)');
      tokens.push({ t: 'not', pos: i });
      i++;
    } else if (ch === '"') {
      const { value, end } = readQuoted(q, i);
      tokens.push({ t: 'phrase', pos: i, value });
      i = end;
    } else if (ch === '/') {
      const { pattern, flags, end } = readRegex(q, i);
      tokens.push({ t: 'regex', pos: i, pattern, flags });
      i = end;
    } else {
      const start = i;
      while (i < q.length && !endsWord(q[i]) && q[i] !== '"') i++;
      const raw = q.slice(start, i);
      if (q[i] === '"') {
        if (!/[:=<>]$/.test(raw)) throw new QueryError(i, 'a quote inside a word: put the whole phrase in quotes');
        const { value, end } = readQuoted(q, i);
        if (!endsWord(q[end])) throw new QueryError(end, 'expected a space after the quoted value');
        tokens.push({ t: 'word', pos: start, raw, quoted: { value, pos: i } });
        i = end;
      } else if (raw === 'NOT') {
        tokens.push({ t: 'not', pos: start });
      } else {
        tokens.push({ t: 'word', pos: start, raw });
      }
    }
  }
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// Terms

const LEVEL_ORDER: readonly LogLevel[] = ['info', 'warn', 'error'];
const FIELDS = new Set(['level', 'step', 'attempt', 'last', 'from', 'to']);
const CONTEXT_FIELDS = new Set(['C', 'B', 'A']);
const OPERATOR_FIELDS = new Set(['level', 'step', 'attempt']);
const DURATION_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const NUMBER_RE = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const KEY_RE = /^((?:data\.)?[A-Za-z0-9_$][\w$-]*(?:\.[\w$-]+)*)(!=|>=|<=|=|>|<)/;
const ISO_RE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

type Directive = { kind: 'context'; which: 'C' | 'B' | 'A'; lines: number; pos: number };
type Term = QueryNode | Directive;

function splitOp(value: string): { op: Cmp; rest: string } {
  const m = /^(>=|<=|>|<)/.exec(value);
  return m ? { op: m[1] as Cmp, rest: value.slice(m[1].length) } : { op: '=', rest: value };
}

function parseTime(value: string, pos: number, name: string): Date {
  if (!ISO_RE.test(value)) throw new QueryError(pos, `${name}: needs an ISO 8601 time such as 2026-11-01 or 2026-11-01T08:30:00Z`);
  const hasZone = /T.*(Z|[+-]\d{2}:?\d{2})$/.test(value);
  const d = new Date(value.includes('T') && !hasZone ? `${value}Z` : value);
  const [y, m, day] = value.slice(0, 10).split('-').map(Number);
  const calendar = new Date(Date.UTC(y, m - 1, day));
  const dayExists = calendar.getUTCFullYear() === y && calendar.getUTCMonth() === m - 1 && calendar.getUTCDate() === day;
  if (Number.isNaN(d.getTime()) || !dayExists) throw new QueryError(pos, `${name}: "${value}" is not a valid time`);
  return d;
}

/** `opFromKey`: the operator of the `level>=warn` form (the `level:>=warn` form carries it in `value`). */
function fieldTerm(name: string, value: string, valuePos: number, quoted: boolean, opFromKey?: Cmp): Term {
  if (value === '') throw new QueryError(valuePos, `${name}: is missing its value`);
  if (CONTEXT_FIELDS.has(name)) {
    if (quoted || !/^\d+$/.test(value) || Number(value) > MAX_CONTEXT_LINES) {
      throw new QueryError(valuePos, `${name}: needs a number of lines from 0 to ${MAX_CONTEXT_LINES}`);
    }
    return { kind: 'context', which: name as 'C' | 'B' | 'A', lines: Number(value), pos: valuePos - name.length - 1 };
  }
  switch (name) {
    case 'level': {
      const { op, rest } = opFromKey ? { op: opFromKey, rest: value } : quoted ? { op: '=' as Cmp, rest: value } : splitOp(value);
      if (!LEVEL_ORDER.includes(rest as LogLevel))
        throw new QueryError(valuePos + (value.length - rest.length), 'level: must be info, warn or error');
      return { kind: 'level', op, value: rest as LogLevel };
    }
    case 'attempt': {
      const { op, rest } = opFromKey ? { op: opFromKey, rest: value } : quoted ? { op: '=' as Cmp, rest: value } : splitOp(value);
      if (!/^\d{1,9}$/.test(rest)) throw new QueryError(valuePos + (value.length - rest.length), 'attempt: must be a whole number');
      return { kind: 'attempt', op, value: Number(rest) };
    }
    case 'step': {
      if (opFromKey && opFromKey !== '=' && opFromKey !== '!=')
        throw new QueryError(valuePos - opFromKey.length, 'step: compares with = or != only');
      const prefix = !quoted && value.endsWith('*');
      const node: QueryNode = { kind: 'step', value: prefix ? value.slice(0, -1) : value, prefix };
      return opFromKey === '!=' ? { kind: 'not', item: node } : node;
    }
    case 'last': {
      const m = /^(\d{1,6})([smhdw])$/.exec(value);
      if (quoted || !m) throw new QueryError(valuePos, 'last: needs a duration such as 30s, 15m, 2h, 7d or 1w');
      return { kind: 'last', ms: Number(m[1]) * DURATION_MS[m[2]] };
    }
    default: // from, to
      return { kind: 'time', op: name === 'from' ? '>=' : '<=', at: parseTime(value, valuePos, name) };
  }
}

function dataValue(value: string, quoted: boolean): DataValue {
  if (quoted) return { type: 'string', value };
  if (NUMBER_RE.test(value)) return { type: 'number', raw: value };
  if (value === 'true' || value === 'false') return { type: 'boolean', value: value === 'true' };
  if (value === 'null') return { type: 'null' };
  return { type: 'string', value };
}

function wordTerm(tok: Extract<Token, { t: 'word' }>): Term {
  const { raw, pos, quoted } = tok;
  const colon = raw.indexOf(':');
  if (colon > 0) {
    const name = raw.slice(0, colon);
    if (FIELDS.has(name) || CONTEXT_FIELDS.has(name)) {
      if (quoted && colon !== raw.length - 1) throw new QueryError(quoted.pos, 'a quoted value must follow the colon directly');
      return quoted ? fieldTerm(name, quoted.value, quoted.pos, true) : fieldTerm(name, raw.slice(colon + 1), pos + colon + 1, false);
    }
  }
  const m = KEY_RE.exec(raw);
  if (m) {
    const keyPath = m[1].startsWith('data.') ? m[1].slice(5) : m[1];
    const op = m[2] as Cmp;
    const valuePos = pos + m[0].length;
    if (quoted && m[0].length !== raw.length) throw new QueryError(quoted.pos, 'a quoted value must follow the operator directly');
    const value = quoted ? quoted.value : raw.slice(m[0].length);
    if (!quoted && value === '') throw new QueryError(valuePos, `${m[1]}${op} is missing its value`);
    // level, step and attempt are the line's fields in the operator form too; `data.level` reaches a data key of that name.
    if (OPERATOR_FIELDS.has(m[1])) return fieldTerm(m[1], value, quoted?.pos ?? valuePos, !!quoted, op);
    const parsed = dataValue(value, !!quoted);
    if ((op === '>' || op === '>=' || op === '<' || op === '<=') && (parsed.type === 'boolean' || parsed.type === 'null')) {
      throw new QueryError(quoted?.pos ?? valuePos, `${op} compares numbers or strings, not ${value}`);
    }
    return { kind: 'data', path: keyPath.split('.'), op, value: parsed };
  }
  if (quoted) throw new QueryError(quoted.pos, 'a quote inside a word: put the whole phrase in quotes');
  return { kind: 'text', value: raw };
}

// ---------------------------------------------------------------------------------------------
// Parser

export function parseQuery(input: string | undefined): ParsedQuery {
  const q = input ?? '';
  if (q.length > MAX_QUERY_CHARS) throw new QueryError(MAX_QUERY_CHARS, `the query is longer than ${MAX_QUERY_CHARS} characters`);
  const tokens = tokenize(q);
  let i = 0;
  let terms = 0;
  let depth = 0;
  let negated = 0;
  const context: { C?: number; B?: number; A?: number } = {};

  const peek = () => tokens[i];
  const isOr = (tok: Token | undefined) => tok?.t === 'word' && tok.raw === 'OR' && !tok.quoted;
  const isAnd = (tok: Token | undefined) => tok?.t === 'word' && tok.raw === 'AND' && !tok.quoted;

  function term(tok: Token): QueryNode | null {
    if (++terms > MAX_QUERY_TERMS) throw new QueryError(tok.pos, `at most ${MAX_QUERY_TERMS} terms`);
    if (tok.t === 'phrase') {
      if (tok.value === '') throw new QueryError(tok.pos, 'empty phrase');
      return { kind: 'text', value: tok.value };
    }
    if (tok.t === 'regex') {
      if (tok.pattern === '') throw new QueryError(tok.pos, 'empty regular expression');
      if (tok.pattern.length > MAX_REGEX_CHARS)
        throw new QueryError(tok.pos, `a regular expression is at most ${MAX_REGEX_CHARS} characters`);
      return { kind: 'regex', pattern: tok.pattern, caseInsensitive: tok.flags === 'i', position: tok.pos };
    }
    const t = wordTerm(tok as Extract<Token, { t: 'word' }>);
    if (t.kind !== 'context') return t;
    if (depth > 0 || negated > 0) {
      throw new QueryError(t.pos, 'context (C:, B:, A:) applies to the whole query: it cannot be negated or used inside parentheses');
    }
    context[t.which] = t.lines;
    return null;
  }

  function unary(): QueryNode | null {
    const tok = peek();
    if (!tok) throw new QueryError(q.length, 'the query ends where a term was expected');
    if (tok.t === 'not') {
      i++;
      negated++;
      const item = unary();
      negated--;
      if (!item) throw new QueryError(tok.pos, 'nothing to exclude');
      return { kind: 'not', item };
    }
    if (tok.t === '(') {
      i++;
      depth++;
      const inner = or();
      depth--;
      const close = peek();
      if (close?.t !== ')') throw new QueryError(tok.pos, 'unclosed parenthesis');
      i++;
      if (!inner) throw new QueryError(tok.pos, 'empty parentheses');
      return inner;
    }
    if (tok.t === ')') throw new QueryError(tok.pos, 'unexpected ")"');
    if (isOr(tok) || isAnd(tok)) throw new QueryError(tok.pos, `${(tok as { raw: string }).raw} needs a term on each side`);
    i++;
    return term(tok);
  }

  function and(): QueryNode | null {
    const items: QueryNode[] = [];
    for (;;) {
      const tok = peek();
      if (!tok || tok.t === ')' || isOr(tok)) break;
      if (isAnd(tok)) {
        if (items.length === 0) throw new QueryError(tok.pos, 'AND needs a term on each side');
        i++;
        if (!peek() || peek()!.t === ')' || isOr(peek())) throw new QueryError(tok.pos, 'AND needs a term on each side');
        continue;
      }
      const node = unary();
      if (node) items.push(node);
    }
    return items.length === 0 ? null : items.length === 1 ? items[0] : { kind: 'and', items };
  }

  function or(): QueryNode | null {
    const first = and();
    const items: QueryNode[] = [];
    if (first) items.push(first);
    while (isOr(peek())) {
      const orTok = peek()!;
      if (!first && items.length === 0) throw new QueryError(orTok.pos, 'OR needs a term on each side');
      i++;
      const next = and();
      if (!next) throw new QueryError(orTok.pos, 'OR needs a term on each side');
      items.push(next);
    }
    return items.length === 0 ? null : items.length === 1 ? items[0] : { kind: 'or', items };
  }

  const where = or();
  if (i < tokens.length) throw new QueryError(tokens[i].pos, 'unexpected ")"');
  return { where, before: context.B ?? context.C ?? 0, after: context.A ?? context.C ?? 0 };
}

/** Every regular expression of the tree (validated by the database before the search runs). */
export function regexesOf(node: QueryNode | null): Array<Extract<QueryNode, { kind: 'regex' }>> {
  if (!node) return [];
  if (node.kind === 'regex') return [node];
  if (node.kind === 'and' || node.kind === 'or') return node.items.flatMap(regexesOf);
  if (node.kind === 'not') return regexesOf(node.item);
  return [];
}
