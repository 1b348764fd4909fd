/** Field specs: the editable fields of providers (`ui.fields`) and of platform functions (`fields`). */
import { FIELD_TYPES } from '../types.ts';
import { at, got, isNonEmptyString, isPlainObject, isSchema, type Problems } from './util.ts';

export function checkFieldsMap(problems: Problems, path: string, fields: unknown): void {
  if (!isPlainObject(fields)) {
    problems.add(path, `must be an object of field specs ${got(fields)}`);
    return;
  }
  for (const [name, spec] of Object.entries(fields)) checkFieldSpec(problems, at(path, name), spec);
}

export function checkFieldSpec(problems: Problems, path: string, spec: unknown): void {
  if (!isPlainObject(spec)) {
    problems.add(path, `must be a field spec object ${got(spec)}`);
    return;
  }
  const type = spec.type;
  const typeOk = typeof type === 'string' && (FIELD_TYPES as readonly string[]).includes(type);
  if (!typeOk) problems.add(at(path, 'type'), `must be one of ${FIELD_TYPES.join(', ')} ${got(type)}`);
  if (!isNonEmptyString(spec.label)) problems.add(at(path, 'label'), `must be a non-empty string ${got(spec.label)}`);
  if (spec.required !== undefined && typeof spec.required !== 'boolean') {
    problems.add(at(path, 'required'), `must be a boolean ${got(spec.required)}`);
  }
  if (spec.description !== undefined && typeof spec.description !== 'string') {
    problems.add(at(path, 'description'), `must be a string ${got(spec.description)}`);
  }
  if (spec.validate !== undefined && !isSchema(spec.validate)) {
    problems.add(at(path, 'validate'), `must be a schema (an object with safeParse, e.g. a zod schema) ${got(spec.validate)}`);
  }
  if (spec.placeholder !== undefined) {
    if (typeOk && type !== 'text') problems.add(at(path, 'placeholder'), `is only allowed on fields of type text (this field is ${type})`);
    else if (typeof spec.placeholder !== 'string') problems.add(at(path, 'placeholder'), `must be a string ${got(spec.placeholder)}`);
  }
  if (type === 'select') checkOptions(problems, at(path, 'options'), spec.options);
  else if (spec.options !== undefined && typeOk) {
    problems.add(at(path, 'options'), `is only allowed on fields of type select (this field is ${type})`);
  }
}

function checkOptions(problems: Problems, path: string, options: unknown): void {
  if (options === undefined) {
    problems.add(path, 'is required for a select field (a non-empty array of { label, value })');
    return;
  }
  if (!Array.isArray(options)) {
    problems.add(path, `must be a non-empty array of { label, value } ${got(options)}`);
    return;
  }
  if (options.length === 0) {
    problems.add(path, 'must not be empty');
    return;
  }
  const seen = new Map<string, number>();
  options.forEach((option, i) => {
    const optionPath = at(path, i);
    if (!isPlainObject(option)) {
      problems.add(optionPath, `must be an object { label, value } ${got(option)}`);
      return;
    }
    if (!isNonEmptyString(option.label)) problems.add(at(optionPath, 'label'), `must be a non-empty string ${got(option.label)}`);
    if (typeof option.value !== 'string') {
      problems.add(at(optionPath, 'value'), `must be a string ${got(option.value)}`);
      return;
    }
    const first = seen.get(option.value);
    if (first !== undefined)
      problems.add(at(optionPath, 'value'), `duplicate value ${JSON.stringify(option.value)} (also at ${at(path, first)})`);
    else seen.set(option.value, i);
  });
}
