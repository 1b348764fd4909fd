/**
 * A tolerant GraphQL evaluator for the schema subset the simulator serves. A request is validated against the
 * schema first (unknown fields, arguments, fragments, missing selections: errors without `data`, as the platform
 * answers), which also yields its requested cost; then it is executed, which yields the actual cost.
 *
 * Cost model (close to the platform's): scalar and enum fields cost 0, object fields 1, mutation root fields 10,
 * a field taking `first`/`last` costs 2 plus that many times the cost of its selection. A field definition may set
 * its own `cost`.
 */
import {
  type Directive,
  type Document,
  type FieldNode,
  type Location,
  type Selection,
  type Value,
  parseDocument,
  valueToJs,
  GraphqlSyntaxError,
} from './parse.ts';

export interface FieldDef<Ctx = any> {
  /** GraphQL type reference: `String`, `Shop!`, `[Metafield!]!`. */
  type: string;
  /** Argument name → type reference; an argument not listed is refused. */
  args?: Record<string, string>;
  /** Overrides the default cost of the field itself. */
  cost?: number;
  description?: string;
  /** Without a resolver the field reads the parent's property of the same name. */
  resolve?: (parent: any, args: Record<string, any>, ctx: Ctx) => unknown;
}

export type TypeDef =
  | { kind: 'object'; fields: Record<string, FieldDef>; description?: string }
  | { kind: 'scalar' }
  | { kind: 'enum'; values: readonly string[] }
  | { kind: 'input' }
  | { kind: 'interface' | 'union'; possibleTypes: readonly string[]; fields?: Record<string, FieldDef>; resolveType(value: any): string };

export interface Schema {
  types: Record<string, TypeDef>;
  query: string;
  mutation?: string;
}

export interface GraphqlError {
  message: string;
  locations?: Location[];
  path?: Array<string | number>;
  extensions?: Record<string, unknown>;
}

export interface PreparedRequest {
  ok: true;
  document: Document;
  operation: Document['operations'][number];
  rootType: string;
  variables: Record<string, unknown>;
  requestedCost: number;
}

export type PrepareResult = PreparedRequest | { ok: false; errors: GraphqlError[] };

const BUILTIN_SCALARS = ['String', 'Int', 'Float', 'Boolean', 'ID'];

export function namedType(ref: string): string {
  return ref.replace(/[[\]!]/g, '');
}

function isList(ref: string): boolean {
  return ref.replace(/!$/, '').startsWith('[');
}

function typeOf(schema: Schema, name: string): TypeDef | undefined {
  if (BUILTIN_SCALARS.includes(name)) return { kind: 'scalar' };
  return Object.hasOwn(schema.types, name) ? schema.types[name] : undefined;
}

function isComposite(def: TypeDef | undefined): boolean {
  return def !== undefined && (def.kind === 'object' || def.kind === 'interface' || def.kind === 'union');
}

function fieldsOf(def: TypeDef | undefined): Record<string, FieldDef> {
  if (!def) return {};
  if (def.kind === 'object') return def.fields;
  if (def.kind === 'interface' || def.kind === 'union') return def.fields ?? {};
  return {};
}

function directivesAllow(directives: Directive[], variables: Record<string, unknown>): boolean {
  for (const d of directives) {
    const cond = d.args.if ? valueToJs(d.args.if, variables) : undefined;
    if (d.name === 'skip' && cond === true) return false;
    if (d.name === 'include' && cond === false) return false;
  }
  return true;
}

function variablesUsed(value: Value, out: Set<string>): void {
  if (value.kind === 'variable') out.add(value.name);
  else if (value.kind === 'list') value.values.forEach((v) => variablesUsed(v, out));
  else if (value.kind === 'object') Object.values(value.fields).forEach((v) => variablesUsed(v, out));
}

/** Parses and validates a request; computes its requested cost. */
export function prepare(schema: Schema, query: string, variables: Record<string, unknown> = {}, operationName?: string): PrepareResult {
  let document: Document;
  try {
    document = parseDocument(query);
  } catch (error) {
    if (error instanceof GraphqlSyntaxError) {
      return {
        ok: false,
        errors: [{ message: `syntax error: ${error.message} at [${error.loc.line}, ${error.loc.column}]`, locations: [error.loc] }],
      };
    }
    throw error;
  }
  const ops = document.operations;
  const operation = operationName ? ops.find((o) => o.name === operationName) : ops.length === 1 ? ops[0] : undefined;
  if (!operation) {
    const message =
      ops.length === 0
        ? 'No operations in query document'
        : operationName
          ? `No operation named "${operationName}"`
          : 'An operation name is required';
    return { ok: false, errors: [{ message }] };
  }
  const rootType = operation.operation === 'mutation' ? schema.mutation : operation.operation === 'query' ? schema.query : undefined;
  if (!rootType)
    return { ok: false, errors: [{ message: `Schema is not configured for ${operation.operation}s`, locations: [operation.loc] }] };

  const errors: GraphqlError[] = [];
  const values: Record<string, unknown> = {};
  const declared = new Set<string>();
  for (const v of operation.variables) {
    declared.add(v.name);
    const given = Object.hasOwn(variables, v.name) ? variables[v.name] : undefined;
    if (given !== undefined) values[v.name] = given;
    else if (v.defaultValue) values[v.name] = valueToJs(v.defaultValue, {});
    if ((values[v.name] === undefined || values[v.name] === null) && v.type.endsWith('!')) {
      errors.push({
        message: `Variable $${v.name} of type ${v.type} was provided invalid value`,
        locations: [operation.loc],
        extensions: { code: 'INVALID_VARIABLE' },
      });
    }
  }

  const used = new Set<string>();
  const visiting = new Set<string>();
  const walk = (selections: Selection[], typeName: string, path: string[], isMutationRoot: boolean): number => {
    const type = typeOf(schema, typeName);
    let cost = 0;
    for (const sel of selections) {
      if (sel.kind === 'spread' || sel.kind === 'inline') {
        sel.directives.forEach((d) => Object.values(d.args).forEach((v) => variablesUsed(v, used)));
        let condition = typeName;
        let inner: Selection[];
        if (sel.kind === 'spread') {
          const fragment = document.fragments.get(sel.name);
          if (!fragment) {
            errors.push({ message: `Fragment ${sel.name} was used, but not defined`, locations: [sel.loc] });
            continue;
          }
          if (visiting.has(sel.name)) {
            errors.push({ message: `Fragment ${sel.name} contains an infinite loop`, locations: [sel.loc] });
            continue;
          }
          condition = fragment.typeCondition;
          inner = fragment.selections;
          visiting.add(sel.name);
        } else {
          condition = sel.typeCondition ?? typeName;
          inner = sel.selections;
        }
        if (!isComposite(typeOf(schema, condition))) {
          errors.push({ message: `No such type ${condition}, so it can't be a fragment condition`, locations: [sel.loc] });
        } else {
          cost += walk(inner, condition, path, isMutationRoot);
        }
        if (sel.kind === 'spread') visiting.delete(sel.name);
        continue;
      }
      const field = sel;
      Object.values(field.args).forEach((v) => variablesUsed(v, used));
      field.directives.forEach((d) => Object.values(d.args).forEach((v) => variablesUsed(v, used)));
      if (field.name === '__typename') {
        if (field.selections) errors.push(scalarSelection(field, 'String', path));
        continue;
      }
      const def = fieldsOf(type)[field.name];
      if (!def) {
        errors.push({
          message: `Field '${field.name}' doesn't exist on type '${typeName}'`,
          locations: [field.loc],
          path: [...path, field.alias ?? field.name],
          extensions: { code: 'undefinedField', typeName, fieldName: field.name },
        });
        continue;
      }
      for (const arg of Object.keys(field.args)) {
        if (!def.args || !Object.hasOwn(def.args, arg)) {
          errors.push({
            message: `Field '${field.name}' doesn't accept argument '${arg}'`,
            locations: [field.loc],
            path: [...path, field.alias ?? field.name],
            extensions: { code: 'argumentNotAccepted', name: field.name, typeName: 'Field', argumentName: arg },
          });
        }
      }
      const missing = Object.entries(def.args ?? {})
        .filter(([name, ref]) => ref.endsWith('!') && !Object.hasOwn(field.args, name))
        .map(([name]) => name);
      if (missing.length > 0) {
        errors.push({
          message: `Field '${field.name}' is missing required arguments: ${missing.join(', ')}`,
          locations: [field.loc],
          path: [...path, field.alias ?? field.name],
          extensions: { code: 'missingRequiredArguments', className: 'Field', name: field.name, arguments: missing.join(', ') },
        });
      }
      const returnName = namedType(def.type);
      const returnDef = typeOf(schema, returnName);
      if (!returnDef) throw new Error(`schema: type ${returnName} of ${typeName}.${field.name} is not defined`);
      const childPath = [...path, field.alias ?? field.name];
      if (isComposite(returnDef)) {
        if (!field.selections) {
          errors.push({
            message: `Field must have selections (field '${field.name}' returns ${returnName} but has no selections. Did you mean '${field.name} { ... }'?)`,
            locations: [field.loc],
            path: childPath,
            extensions: { code: 'selectionMismatch', nodeName: `field '${field.name}'`, typeName: returnName },
          });
          continue;
        }
        const inner = walk(field.selections, returnName, childPath, false);
        const pageArg = field.args.first ?? field.args.last;
        const pageSize = pageArg ? Number(valueToJs(pageArg, values)) : NaN;
        const own = def.cost ?? (isMutationRoot ? 10 : pageArg ? 2 : 1);
        cost += own + (Number.isFinite(pageSize) && pageSize > 0 ? pageSize * inner : inner);
      } else {
        if (field.selections) errors.push(scalarSelection(field, returnName, path));
        cost += def.cost ?? (isMutationRoot ? 10 : 0);
      }
    }
    return cost;
  };
  const requestedCost = walk(operation.selections, rootType, [], rootType === schema.mutation);
  for (const name of used) {
    if (!declared.has(name))
      errors.push({
        message: `Variable $${name} is used by ${operation.name ?? 'anonymous query'} but not declared`,
        locations: [operation.loc],
      });
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, document, operation, rootType, variables: values, requestedCost };
}

function scalarSelection(field: FieldNode, returnName: string, path: string[]): GraphqlError {
  return {
    message: `Selections can't be made on scalars (field '${field.name}' returns ${returnName} but has selections)`,
    locations: [field.loc],
    path: [...path, field.alias ?? field.name],
    extensions: { code: 'selectionMismatch', nodeName: `field '${field.name}'`, typeName: returnName },
  };
}

export interface ExecutionResult {
  data: Record<string, unknown> | null;
  errors: GraphqlError[];
  actualCost: number;
}

/** Executes a prepared request. Resolver errors become `errors` entries with the field's path; the field is null. */
export async function execute<Ctx>(schema: Schema, prepared: PreparedRequest, ctx: Ctx, root: unknown = {}): Promise<ExecutionResult> {
  const errors: GraphqlError[] = [];
  const { document, variables } = prepared;
  const isMutation = prepared.rootType === schema.mutation;

  const collect = (selections: Selection[], typeName: string, out: FieldNode[] = []): FieldNode[] => {
    for (const sel of selections) {
      if (!directivesAllow(sel.directives, variables)) continue;
      if (sel.kind === 'field') out.push(sel);
      else {
        const condition = sel.kind === 'spread' ? document.fragments.get(sel.name)!.typeCondition : (sel.typeCondition ?? typeName);
        const conditionDef = typeOf(schema, condition);
        const applies =
          condition === typeName ||
          ((conditionDef?.kind === 'interface' || conditionDef?.kind === 'union') && conditionDef.possibleTypes.includes(typeName));
        if (applies) collect(sel.kind === 'spread' ? document.fragments.get(sel.name)!.selections : sel.selections, typeName, out);
      }
    }
    return out;
  };

  const completeValue = async (
    ref: string,
    value: unknown,
    field: FieldNode,
    path: Array<string | number>,
  ): Promise<{ value: unknown; cost: number }> => {
    if (value === null || value === undefined) return { value: null, cost: 0 };
    if (isList(ref)) {
      if (!Array.isArray(value)) throw new Error(`expected a list for ${path.join('.')}`);
      const inner = ref.replace(/!$/, '').slice(1, -1);
      const items = await Promise.all(value.map((item, i) => completeValue(inner, item, field, [...path, i])));
      return { value: items.map((r) => r.value), cost: items.reduce((sum, r) => sum + r.cost, 0) };
    }
    const name = namedType(ref);
    let def = typeOf(schema, name)!;
    let concrete = name;
    if (def.kind === 'interface' || def.kind === 'union') {
      concrete = def.resolveType(value);
      def = typeOf(schema, concrete)!;
    }
    if (def.kind !== 'object') return { value, cost: 0 };
    return resolveObject(concrete, value, field.selections ?? [], path);
  };

  const resolveObject = async (
    typeName: string,
    parent: any,
    selections: Selection[],
    path: Array<string | number>,
  ): Promise<{ value: Record<string, unknown>; cost: number }> => {
    const out: Record<string, unknown> = {};
    let cost = 0;
    const fields = fieldsOf(typeOf(schema, typeName));
    const root = path.length === 0;
    for (const field of collect(selections, typeName)) {
      const key = field.alias ?? field.name;
      if (field.name === '__typename') {
        out[key] = typeName;
        continue;
      }
      const def = fields[field.name]!;
      const fieldPath = [...path, key];
      const args = Object.fromEntries(Object.entries(field.args).map(([k, v]) => [k, valueToJs(v, variables)]));
      try {
        const raw = def.resolve ? await def.resolve(parent, args, ctx) : parent?.[field.name];
        const completed = await completeValue(def.type, raw, field, fieldPath);
        out[key] = completed.value;
        const composite = isComposite(typeOf(schema, namedType(def.type)));
        if (completed.value !== null)
          cost += def.cost ?? (root && isMutation ? 10 : composite ? (field.args.first || field.args.last ? 2 : 1) : 0);
        cost += completed.cost;
      } catch (error) {
        out[key] = null;
        errors.push({ message: error instanceof Error ? error.message : String(error), locations: [field.loc], path: fieldPath });
      }
    }
    return { value: out, cost };
  };

  const result = await resolveObject(prepared.rootType, root, prepared.operation.selections, []);
  return { data: result.value, errors, actualCost: result.cost };
}
