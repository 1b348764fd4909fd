/**
 * A small GraphQL document parser: operations (query / mutation, shorthand `{ ... }`), variable definitions, fields
 * with aliases and arguments, directives, fragment spreads, inline fragments and fragment definitions. Enough for the
 * schema subset the simulator serves; not a complete implementation of the GraphQL grammar (no type-system definitions).
 */

export interface Location {
  line: number;
  column: number;
}

export type Value =
  | { kind: 'variable'; name: string }
  | { kind: 'int'; value: number }
  | { kind: 'float'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'null' }
  | { kind: 'enum'; value: string }
  | { kind: 'list'; values: Value[] }
  | { kind: 'object'; fields: Record<string, Value> };

export interface Directive {
  name: string;
  args: Record<string, Value>;
}

export interface FieldNode {
  kind: 'field';
  alias?: string;
  name: string;
  args: Record<string, Value>;
  directives: Directive[];
  selections?: Selection[];
  loc: Location;
}

export interface FragmentSpread {
  kind: 'spread';
  name: string;
  directives: Directive[];
  loc: Location;
}

export interface InlineFragment {
  kind: 'inline';
  typeCondition?: string;
  directives: Directive[];
  selections: Selection[];
  loc: Location;
}

export type Selection = FieldNode | FragmentSpread | InlineFragment;

export interface VariableDefinition {
  name: string;
  type: string;
  defaultValue?: Value;
}

export interface Operation {
  operation: 'query' | 'mutation' | 'subscription';
  name?: string;
  variables: VariableDefinition[];
  selections: Selection[];
  loc: Location;
}

export interface Fragment {
  name: string;
  typeCondition: string;
  selections: Selection[];
}

export interface Document {
  operations: Operation[];
  fragments: Map<string, Fragment>;
}

export class GraphqlSyntaxError extends Error {
  constructor(
    message: string,
    readonly loc: Location,
  ) {
    super(message);
    this.name = 'GraphqlSyntaxError';
  }
}

type TokenKind = 'punct' | 'name' | 'int' | 'float' | 'string' | 'eof';
interface Token {
  kind: TokenKind;
  value: string;
  loc: Location;
}

const PUNCT = new Set(['{', '}', '(', ')', '[', ']', ':', '$', '!', '=', '@', '|', '&']);

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const loc = (at: number): Location => ({ line, column: at - lineStart + 1 });
  while (i < source.length) {
    const ch = source[i]!;
    if (ch === '\n') {
      i++;
      line++;
      lineStart = i;
      continue;
    }
    if (ch === ' ' || ch === '\t' || ch === '\r' || ch === ',' || ch === '\uFEFF') {
      i++;
      continue;
    }
    if (ch === '#') {
      while (i < source.length && source[i] !== '\n') i++;
      continue;
    }
    if (ch === '.' && source.startsWith('...', i)) {
      tokens.push({ kind: 'punct', value: '...', loc: loc(i) });
      i += 3;
      continue;
    }
    if (PUNCT.has(ch)) {
      tokens.push({ kind: 'punct', value: ch, loc: loc(i) });
      i++;
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      const start = i;
      while (i < source.length && /[A-Za-z0-9_]/.test(source[i]!)) i++;
      tokens.push({ kind: 'name', value: source.slice(start, i), loc: loc(start) });
      continue;
    }
    if (ch === '-' || /[0-9]/.test(ch)) {
      const match = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(source.slice(i));
      if (!match) throw new GraphqlSyntaxError(`Unexpected character "${ch}"`, loc(i));
      tokens.push({ kind: match[2] || match[3] ? 'float' : 'int', value: match[0], loc: loc(i) });
      i += match[0].length;
      continue;
    }
    if (ch === '"') {
      const start = i;
      if (source.startsWith('"""', i)) {
        const end = source.indexOf('"""', i + 3);
        if (end < 0) throw new GraphqlSyntaxError('Unterminated block string', loc(start));
        const raw = source.slice(i + 3, end);
        tokens.push({ kind: 'string', value: blockString(raw), loc: loc(start) });
        for (const c of raw) if (c === '\n') line++;
        const lastNl = raw.lastIndexOf('\n');
        if (lastNl >= 0) lineStart = i + 3 + lastNl + 1;
        i = end + 3;
        continue;
      }
      i++;
      let value = '';
      for (;;) {
        if (i >= source.length || source[i] === '\n') throw new GraphqlSyntaxError('Unterminated string', loc(start));
        const c = source[i]!;
        if (c === '"') {
          i++;
          break;
        }
        if (c === '\\') {
          const next = source[i + 1];
          const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
          if (next !== undefined && next in simple) {
            value += simple[next];
            i += 2;
            continue;
          }
          if (next === 'u' && /^[0-9a-fA-F]{4}$/.test(source.slice(i + 2, i + 6))) {
            value += String.fromCharCode(parseInt(source.slice(i + 2, i + 6), 16));
            i += 6;
            continue;
          }
          throw new GraphqlSyntaxError('Invalid escape sequence in string', loc(i));
        }
        value += c;
        i++;
      }
      tokens.push({ kind: 'string', value, loc: loc(start) });
      continue;
    }
    throw new GraphqlSyntaxError(`Unexpected character "${ch}"`, loc(i));
  }
  tokens.push({ kind: 'eof', value: '<EOF>', loc: loc(i) });
  return tokens;
}

function blockString(raw: string): string {
  const lines = raw.replace(/\\"""/g, '"""').split(/\r\n|\n|\r/);
  let indent = Infinity;
  for (const l of lines.slice(1)) {
    const n = l.length - l.trimStart().length;
    if (l.trim() !== '' && n < indent) indent = n;
  }
  const out = lines.map((l, idx) => (idx === 0 || indent === Infinity ? l : l.slice(indent)));
  while (out.length > 0 && out[0]!.trim() === '') out.shift();
  while (out.length > 0 && out[out.length - 1]!.trim() === '') out.pop();
  return out.join('\n');
}

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.pos]!;
  }
  private next(): Token {
    return this.tokens[this.pos++]!;
  }
  private isPunct(value: string): boolean {
    const t = this.peek();
    return t.kind === 'punct' && t.value === value;
  }
  private expectPunct(value: string): Token {
    const t = this.next();
    if (t.kind !== 'punct' || t.value !== value) throw new GraphqlSyntaxError(`Expected "${value}", found ${describe(t)}`, t.loc);
    return t;
  }
  private expectName(): Token {
    const t = this.next();
    if (t.kind !== 'name') throw new GraphqlSyntaxError(`Expected a name, found ${describe(t)}`, t.loc);
    return t;
  }

  document(): Document {
    const operations: Operation[] = [];
    const fragments = new Map<string, Fragment>();
    if (this.peek().kind === 'eof') throw new GraphqlSyntaxError('Unexpected end of document', this.peek().loc);
    while (this.peek().kind !== 'eof') {
      const t = this.peek();
      if (this.isPunct('{')) {
        operations.push({ operation: 'query', variables: [], selections: this.selectionSet(), loc: t.loc });
      } else if (t.kind === 'name' && (t.value === 'query' || t.value === 'mutation' || t.value === 'subscription')) {
        operations.push(this.operation());
      } else if (t.kind === 'name' && t.value === 'fragment') {
        this.next();
        const name = this.expectName().value;
        const on = this.expectName();
        if (on.value !== 'on') throw new GraphqlSyntaxError(`Expected "on", found ${describe(on)}`, on.loc);
        const typeCondition = this.expectName().value;
        this.directives();
        if (fragments.has(name)) throw new GraphqlSyntaxError(`There can be only one fragment named "${name}"`, t.loc);
        fragments.set(name, { name, typeCondition, selections: this.selectionSet() });
      } else {
        throw new GraphqlSyntaxError(`Unexpected ${describe(t)}`, t.loc);
      }
    }
    return { operations, fragments };
  }

  private operation(): Operation {
    const t = this.next();
    const op: Operation = { operation: t.value as Operation['operation'], variables: [], selections: [], loc: t.loc };
    if (this.peek().kind === 'name') op.name = this.next().value;
    if (this.isPunct('(')) {
      this.next();
      while (!this.isPunct(')')) {
        this.expectPunct('$');
        const name = this.expectName().value;
        this.expectPunct(':');
        const type = this.typeRef();
        const def: VariableDefinition = { name, type };
        if (this.isPunct('=')) {
          this.next();
          def.defaultValue = this.value(true);
        }
        this.directives();
        op.variables.push(def);
      }
      this.next();
    }
    this.directives();
    op.selections = this.selectionSet();
    return op;
  }

  private typeRef(): string {
    let type: string;
    if (this.isPunct('[')) {
      this.next();
      type = `[${this.typeRef()}]`;
      this.expectPunct(']');
    } else {
      type = this.expectName().value;
    }
    if (this.isPunct('!')) {
      this.next();
      type += '!';
    }
    return type;
  }

  private selectionSet(): Selection[] {
    const open = this.expectPunct('{');
    const selections: Selection[] = [];
    while (!this.isPunct('}')) {
      if (this.peek().kind === 'eof') throw new GraphqlSyntaxError('Expected "}", found <EOF>', this.peek().loc);
      selections.push(this.selection());
    }
    this.next();
    if (selections.length === 0) throw new GraphqlSyntaxError('A selection set must not be empty', open.loc);
    return selections;
  }

  private selection(): Selection {
    const t = this.peek();
    if (this.isPunct('...')) {
      this.next();
      const after = this.peek();
      if (after.kind === 'name' && after.value !== 'on') {
        this.next();
        return { kind: 'spread', name: after.value, directives: this.directives(), loc: t.loc };
      }
      let typeCondition: string | undefined;
      if (after.kind === 'name' && after.value === 'on') {
        this.next();
        typeCondition = this.expectName().value;
      }
      const directives = this.directives();
      return { kind: 'inline', typeCondition, directives, selections: this.selectionSet(), loc: t.loc };
    }
    const first = this.expectName();
    const field: FieldNode = { kind: 'field', name: first.value, args: {}, directives: [], loc: first.loc };
    if (this.isPunct(':')) {
      this.next();
      field.alias = first.value;
      field.name = this.expectName().value;
    }
    if (this.isPunct('(')) field.args = this.arguments(false);
    field.directives = this.directives();
    if (this.isPunct('{')) field.selections = this.selectionSet();
    return field;
  }

  private arguments(constant: boolean): Record<string, Value> {
    this.expectPunct('(');
    const args: Record<string, Value> = {};
    while (!this.isPunct(')')) {
      const name = this.expectName();
      this.expectPunct(':');
      if (Object.hasOwn(args, name.value)) throw new GraphqlSyntaxError(`There can be only one argument named "${name.value}"`, name.loc);
      args[name.value] = this.value(constant);
    }
    this.next();
    return args;
  }

  private directives(): Directive[] {
    const out: Directive[] = [];
    while (this.isPunct('@')) {
      this.next();
      const name = this.expectName().value;
      out.push({ name, args: this.isPunct('(') ? this.arguments(false) : {} });
    }
    return out;
  }

  private value(constant: boolean): Value {
    const t = this.next();
    if (t.kind === 'punct') {
      if (t.value === '$' && !constant) return { kind: 'variable', name: this.expectName().value };
      if (t.value === '[') {
        const values: Value[] = [];
        while (!this.isPunct(']')) {
          if (this.peek().kind === 'eof') throw new GraphqlSyntaxError('Expected "]", found <EOF>', this.peek().loc);
          values.push(this.value(constant));
        }
        this.next();
        return { kind: 'list', values };
      }
      if (t.value === '{') {
        const fields: Record<string, Value> = {};
        while (!this.isPunct('}')) {
          const name = this.expectName().value;
          this.expectPunct(':');
          fields[name] = this.value(constant);
        }
        this.next();
        return { kind: 'object', fields };
      }
      throw new GraphqlSyntaxError(`Unexpected ${describe(t)}`, t.loc);
    }
    if (t.kind === 'int') return { kind: 'int', value: Number(t.value) };
    if (t.kind === 'float') return { kind: 'float', value: Number(t.value) };
    if (t.kind === 'string') return { kind: 'string', value: t.value };
    if (t.kind === 'name') {
      if (t.value === 'true' || t.value === 'false') return { kind: 'boolean', value: t.value === 'true' };
      if (t.value === 'null') return { kind: 'null' };
      return { kind: 'enum', value: t.value };
    }
    throw new GraphqlSyntaxError(`Unexpected ${describe(t)}`, t.loc);
  }
}

function describe(t: Token): string {
  if (t.kind === 'eof') return '<EOF>';
  if (t.kind === 'string') return `string "${t.value}"`;
  return `"${t.value}"`;
}

/** Parses a document; throws GraphqlSyntaxError with the line and column of the problem. */
export function parseDocument(source: string): Document {
  return new Parser(tokenize(source)).document();
}

/** The JavaScript value of a GraphQL value, variables substituted (a missing variable is undefined). */
export function valueToJs(value: Value, variables: Record<string, unknown>): unknown {
  switch (value.kind) {
    case 'variable':
      return variables[value.name];
    case 'int':
    case 'float':
    case 'string':
    case 'boolean':
    case 'enum':
      return value.value;
    case 'null':
      return null;
    case 'list':
      return value.values.map((v) => valueToJs(v, variables));
    case 'object':
      return Object.fromEntries(Object.entries(value.fields).map(([k, v]) => [k, valueToJs(v, variables)]));
  }
}
