/** PUT /api/providers/:name — the spec's seven-step save procedure, in order. Never runs the checker. */
import { InvalidInputError } from '../errors.ts';
import { parseInput } from '../input.ts';
import {
  type FieldError,
  TRANSFORMER_MESSAGE,
  checkRequired,
  coerce,
  fieldMessage,
  hasValue,
  runValidator,
  typeProblem,
} from './fields.ts';
import { SAVE_NOT_AN_OBJECT, saveProviderBody } from './schemas.ts';
import { scrub, secretValues } from './scrub.ts';
import { type ProvidersDeps, definitionOf, listProviders, loadDecryptable, ownerOf } from './service.ts';
import { upsertProviderConfig } from './store.ts';

type Config = Record<string, unknown>;

const isObject = (value: unknown): value is Config => typeof value === 'object' && value !== null && !Array.isArray(value);

function fail(errors: FieldError[]): never {
  throw new InvalidInputError(errors[0].message, { field: errors[0].field, details: { errors } });
}

export async function saveProviderConfig(deps: ProvidersDeps, appHandle: string, shop: string, name: string, body: unknown) {
  const def = definitionOf(deps, name);
  const fields = def.ui.fields;
  const submitted = parseInput(saveProviderBody, body, { notAnObject: SAVE_NOT_AN_OBJECT }).config;
  const errors: FieldError[] = [];
  // Before the procedure: a key the provider does not declare is refused.
  for (const key of Object.keys(submitted))
    if (!Object.hasOwn(fields, key)) errors.push({ field: key, message: fieldMessage(key, 'is not a field of this provider') });
  if (errors.length) fail(errors);

  // 1. keep an existing password when the submitted value is missing or empty (a row that cannot be decrypted counts as absent)
  const existing = await loadDecryptable(deps, appHandle, shop, name);
  const data: Config = { ...submitted };
  for (const [field, spec] of Object.entries(fields)) {
    if (spec.type === 'password' && !hasValue(data[field]) && existing && hasValue(existing[field])) data[field] = existing[field];
  }
  // 2. coerce numbers and checkboxes (a non-numeric string is left for the type check of step 6)
  const coerced = coerce(fields, data);
  // 3. required fields
  checkRequired(fields, coerced, errors);
  if (errors.length) fail(errors);
  // 4-5. the transformer must give an object
  let result: Config = coerced;
  if (def.transformer) {
    let transformed: unknown;
    try {
      transformed = await def.transformer({ data: { ...coerced } });
    } catch (error) {
      const message = scrub(error instanceof Error ? error.message : String(error), secretValues(fields, coerced));
      throw new InvalidInputError(`Provider transformer failed: ${message || 'it threw'}`);
    }
    if (!isObject(transformed)) throw new InvalidInputError(TRANSFORMER_MESSAGE);
    result = { ...transformed };
  }
  // 6. required fields again, each declared field's type (and select option), then its validator, whose output is saved
  checkRequired(fields, result, errors);
  for (const [field, spec] of Object.entries(fields)) {
    if (errors.some((e) => e.field === field)) continue;
    const problem = typeProblem(spec, result[field]);
    if (problem) {
      errors.push({ field, message: fieldMessage(field, problem) });
      continue;
    }
    if (!spec.validate || (!hasValue(result[field]) && spec.required === false)) continue;
    const parsed = await runValidator(spec.validate, result[field]);
    if (parsed.ok) result[field] = parsed.value;
    else errors.push({ field, message: fieldMessage(field, parsed.reason) });
  }
  if (errors.length) fail(errors);
  for (const key of Object.keys(result)) if (result[key] === undefined) delete result[key];
  // 7. encrypt and upsert for the current app and shop
  await upsertProviderConfig(deps.db, appHandle, shop, name, deps.secrets.encrypt(result, ownerOf(appHandle, shop, name)));
  const [view] = (await listProviders(deps, appHandle, shop)).filter((p) => p.name === name);
  return { ok: true as const, provider: view };
}
