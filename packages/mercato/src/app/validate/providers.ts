/** Providers (from the base definition) and platform functions. */
import { FUNCTION_TYPES } from '../types.ts';
import { checkFieldsMap } from './fields.ts';
import { at, checkKnownKeys, got, isFunction, isPlainObject, type Problems } from './util.ts';

export function checkProviders(problems: Problems, providers: unknown): void {
  if (providers === undefined) return;
  if (!isPlainObject(providers)) {
    problems.add('providers', `must be an object mapping names to provider definitions ${got(providers)}`);
    return;
  }
  for (const [key, provider] of Object.entries(providers)) checkProvider(problems, at('providers', key), key, provider);
}

function checkProvider(problems: Problems, path: string, key: string, provider: unknown): void {
  if (!isPlainObject(provider)) {
    problems.add(path, `must be a provider definition object ${got(provider)}`);
    return;
  }
  if (typeof provider.name !== 'string') problems.add(at(path, 'name'), `must be a string ${got(provider.name)}`);
  else if (provider.name !== key) problems.add(at(path, 'name'), `must equal its key ${JSON.stringify(key)} ${got(provider.name)}`);
  if (provider.description !== undefined && typeof provider.description !== 'string') {
    problems.add(at(path, 'description'), `must be a string ${got(provider.description)}`);
  }
  if (!isPlainObject(provider.ui)) problems.add(at(path, 'ui'), `must be an object with a fields map ${got(provider.ui)}`);
  else checkFieldsMap(problems, at(at(path, 'ui'), 'fields'), provider.ui.fields);
  for (const hook of ['checker', 'transformer'] as const) {
    if (provider[hook] !== undefined && !isFunction(provider[hook]))
      problems.add(at(path, hook), `must be a function ${got(provider[hook])}`);
  }
  const methods = provider.methods;
  if (!isPlainObject(methods)) {
    problems.add(at(path, 'methods'), `must be an object of functions (may be empty) ${got(methods)}`);
    return;
  }
  for (const [name, method] of Object.entries(methods)) {
    if (!isFunction(method)) problems.add(at(at(path, 'methods'), name), `must be a function ${got(method)}`);
  }
}

/** Function handles: the platform extension handle, lower-case letters, digits, `_` and `-`, starting with a letter or digit. */
export const FUNCTION_HANDLE = /^[a-z0-9][a-z0-9_-]*$/;
const DISCOUNT_MODES = ['automatic', 'code'];

export function checkFunctions(problems: Problems, functions: unknown): void {
  if (functions === undefined) return;
  if (!isPlainObject(functions)) {
    problems.add('functions', `must be an object mapping keys to function definitions ${got(functions)}`);
    return;
  }
  const handles = new Map<string, string>();
  for (const [key, definition] of Object.entries(functions)) {
    const path = at('functions', key);
    const handle = checkFunction(problems, path, definition);
    if (handle === undefined) continue;
    const first = handles.get(handle);
    if (first !== undefined) problems.add(at(path, 'handle'), `duplicate handle ${JSON.stringify(handle)} (also used by ${first})`);
    else handles.set(handle, path);
  }
}

const FUNCTION_KEYS = ['type', 'handle', 'title', 'description', 'discountModes', 'fields', 'authorize'] as const;

/** Returns the handle when it is well-formed (for the duplicate check). */
function checkFunction(problems: Problems, path: string, fn: unknown): string | undefined {
  if (!isPlainObject(fn)) {
    problems.add(path, `must be a function definition object ${got(fn)}`);
    return undefined;
  }
  checkKnownKeys(problems, path, fn, FUNCTION_KEYS, 'function option');
  const typeOk = typeof fn.type === 'string' && (FUNCTION_TYPES as readonly string[]).includes(fn.type);
  if (!typeOk) problems.add(at(path, 'type'), `must be one of ${FUNCTION_TYPES.join(', ')} ${got(fn.type)}`);
  let handle: string | undefined;
  if (typeof fn.handle !== 'string' || !FUNCTION_HANDLE.test(fn.handle)) {
    problems.add(at(path, 'handle'), `must match ${FUNCTION_HANDLE} (lower-case letters, digits, _ and -) ${got(fn.handle)}`);
  } else handle = fn.handle;
  for (const text of ['title', 'description'] as const) {
    if (fn[text] !== undefined && typeof fn[text] !== 'string') problems.add(at(path, text), `must be a string ${got(fn[text])}`);
  }
  if (fn.fields === undefined) problems.add(at(path, 'fields'), 'is required (an object of field specs, may be empty)');
  else {
    checkFieldsMap(problems, at(path, 'fields'), fn.fields);
    if (isPlainObject(fn.fields)) {
      for (const [name, spec] of Object.entries(fn.fields)) {
        if (isPlainObject(spec) && spec.type === 'password') {
          problems.add(
            at(at(at(path, 'fields'), name), 'type'),
            'password fields are not allowed in a function configuration (it is stored in a metafield on the platform, in plain text); keep secrets in a provider',
          );
        }
      }
    }
  }
  if (fn.authorize !== undefined && !isFunction(fn.authorize))
    problems.add(at(path, 'authorize'), `must be a function ${got(fn.authorize)}`);
  if (fn.discountModes !== undefined) {
    if (typeOk && fn.type !== 'discount') {
      problems.add(at(path, 'discountModes'), `is only allowed on functions of type discount (this one is ${fn.type})`);
    } else checkDiscountModes(problems, at(path, 'discountModes'), fn.discountModes);
  }
  return handle;
}

function checkDiscountModes(problems: Problems, path: string, modes: unknown): void {
  if (!Array.isArray(modes) || modes.length === 0) {
    problems.add(path, `must be a non-empty array of ${DISCOUNT_MODES.join(', ')} ${got(modes)}`);
    return;
  }
  const seen = new Set<unknown>();
  modes.forEach((mode, i) => {
    if (typeof mode !== 'string' || !DISCOUNT_MODES.includes(mode))
      problems.add(at(path, i), `must be one of ${DISCOUNT_MODES.join(', ')} ${got(mode)}`);
    else if (seen.has(mode)) problems.add(at(path, i), `duplicate mode ${JSON.stringify(mode)}`);
    seen.add(mode);
  });
}
