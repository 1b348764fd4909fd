/**
 * The Functions page's model (docs/functions.md; the shapes of /api/functions come from `mercato/api`): the form draft
 * of an instance (its owner fields and its configuration), the bodies of create and update, the checks made before
 * sending, and the mapping of the API's `userErrors` (field paths in the body's terms) to the form's fields.
 *
 * Draft keys: an owner field by its dotted name (`title`, `combinesWith.orderDiscounts`), a configuration field as
 * `config.<name>` — the same strings as a userError's `field.join('.')`.
 */

import type { ConfigField, DiscountMode, FunctionDefinitionInfo, FunctionInstanceInfo, OwnerField, UserError } from 'mercato/api';

export type FormValue = string | boolean | string[];
export type FormDraft = Record<string, FormValue>;
export type FormErrors = Record<string, string>;

const TYPE_LABELS: Record<string, string> = {
  discount: 'Discount',
  cart_transform: 'Cart transform',
  delivery_customization: 'Delivery customization',
  payment_customization: 'Payment customization',
  checkout_validation: 'Checkout validation',
  fulfillment_constraint: 'Fulfillment constraint',
  order_routing_location_rule: 'Order routing location rule',
  pickup_point_delivery_option_generator: 'Pickup point delivery option generator',
  local_pickup_delivery_option_generator: 'Local pickup delivery option generator',
};

export function typeLabel(type: string): string {
  return TYPE_LABELS[type] ?? type.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());
}

export const configKey = (name: string) => `config.${name}`;

/** The numeric tail of a GID (`gid://shopify/CartTransform/1004` → `1004`). */
export function gidTail(id: string): string {
  return id.split('/').pop() ?? id;
}

export function definitionTitle(def: FunctionDefinitionInfo): string {
  return def.title ?? def.handle;
}

/** The instance's title, else its type and id tail (cart transforms and fulfillment constraints have no title). */
export function instanceName(def: FunctionDefinitionInfo, instance: FunctionInstanceInfo): string {
  const title = instance.owner.title;
  return typeof title === 'string' && title.trim() ? title : `${typeLabel(def.type)} ${gidTail(instance.id)}`;
}

function getAt(obj: Record<string, unknown> | null | undefined, path: string[]): unknown {
  let current: unknown = obj;
  for (const key of path) {
    if (!current || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function setAt(obj: Record<string, unknown>, path: string[], value: unknown): void {
  let current = obj;
  for (const key of path.slice(0, -1)) {
    const next = current[key];
    if (!next || typeof next !== 'object' || Array.isArray(next)) current[key] = {};
    current = current[key] as Record<string, unknown>;
  }
  current[path[path.length - 1]!] = value;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** An ISO date-time as a `datetime-local` input value, in the browser's time zone ('' when it is not a date). */
export function toLocalInput(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A `datetime-local` value (browser time zone) as ISO 8601 UTC; null when it is not a date. */
export function fromLocalInput(text: string): string | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(text)) return null;
  const d = new Date(text);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

/** The discount mode a form is for: the instance's when editing, else the chosen one (or the only one). */
export function formMode(def: FunctionDefinitionInfo, draft: FormDraft, instance?: FunctionInstanceInfo): DiscountMode | undefined {
  if (def.type !== 'discount') return undefined;
  if (instance) return instance.owner.mode as DiscountMode | undefined;
  const chosen = draft.mode;
  if (chosen === 'automatic' || chosen === 'code') return chosen;
  return def.discountModes?.length === 1 ? def.discountModes[0] : undefined;
}

/**
 * The owner fields the form shows: fields of another discount mode are left out (and, before a mode is chosen, every
 * mode-specific field); a mode select with a single choice is left out too (that mode is used).
 */
export function visibleOwnerFields(def: FunctionDefinitionInfo, mode: DiscountMode | undefined): OwnerField[] {
  return def.ownerFields.filter((f) => {
    if (f.modes && !(mode && f.modes.includes(mode))) return false;
    if (f.name === 'mode' && (f.options?.length ?? 0) <= 1) return false;
    return true;
  });
}

function ownerDraft(field: OwnerField, value: unknown): FormValue {
  switch (field.type) {
    case 'checkbox':
      return value === true;
    case 'multiselect':
      return Array.isArray(value) ? value.map(String) : [];
    case 'number':
      return typeof value === 'number' ? String(value) : '';
    case 'datetime':
      return typeof value === 'string' && value !== 'now' ? toLocalInput(value) : '';
    default:
      return typeof value === 'string' ? value : '';
  }
}

function configDraft(field: ConfigField, value: unknown): FormValue {
  if (field.type === 'checkbox') return value === true;
  if (value === undefined || value === null) return '';
  return typeof value === 'string'
    ? value
    : typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : JSON.stringify(value);
}

/** The form's starting values: the instance's current ones when editing, else the definition's defaults. */
export function initialDraft(def: FunctionDefinitionInfo, instance?: FunctionInstanceInfo): FormDraft {
  const draft: FormDraft = {};
  for (const field of def.ownerFields) draft[field.name] = ownerDraft(field, instance ? getAt(instance.owner, field.path) : field.default);
  for (const field of def.fields) draft[configKey(field.name)] = configDraft(field, instance?.config?.[field.name]);
  return draft;
}

const same = (a: FormValue | undefined, b: FormValue | undefined) => JSON.stringify(a) === JSON.stringify(b);

function configChanged(def: FunctionDefinitionInfo, draft: FormDraft, initial: FormDraft): boolean {
  return def.fields.some((f) => !same(draft[configKey(f.name)], initial[configKey(f.name)]));
}

/** The owner fields an update would send: visible, editable and changed. */
function editedOwnerFields(
  def: FunctionDefinitionInfo,
  draft: FormDraft,
  initial: FormDraft,
  mode: DiscountMode | undefined,
): OwnerField[] {
  return visibleOwnerFields(def, mode).filter((f) => !f.createOnly && !same(draft[f.name], initial[f.name]));
}

/**
 * Problems found before sending, keyed like the draft: required values, whole numbers, dates, at least one choice of
 * a list, numbers in number configuration fields. On an update (`initial` given) only what would be sent is checked.
 * The rest (blank titles the platform refuses, codes already used, an end before the start, a validator's bounds) is
 * the server's and the platform's to say, and comes back as userErrors.
 */
export function checkDraft(def: FunctionDefinitionInfo, draft: FormDraft, mode: DiscountMode | undefined, initial?: FormDraft): FormErrors {
  const errors: FormErrors = {};
  const owner = initial ? editedOwnerFields(def, draft, initial, mode) : visibleOwnerFields(def, mode);
  if (!initial && def.type === 'discount' && !mode) errors.mode = 'Choose a discount mode';
  for (const field of owner) {
    const value = draft[field.name];
    const text = typeof value === 'string' ? value.trim() : '';
    switch (field.type) {
      case 'text':
      case 'select':
        if (field.required && text === '') errors[field.name] ??= 'Required';
        break;
      case 'number':
        if (text === '') {
          if (field.required) errors[field.name] = 'Required';
        } else if (!/^-?\d+$/.test(text)) errors[field.name] = 'Must be a whole number';
        break;
      case 'datetime':
        if (text === '') {
          if (field.required) errors[field.name] = 'Required';
        } else if (fromLocalInput(text) === null) errors[field.name] = 'Must be a date and time';
        break;
      case 'multiselect':
        if (!Array.isArray(value) || value.length === 0) errors[field.name] = 'Choose at least one';
        break;
      default:
        break;
    }
  }
  if (!initial || configChanged(def, draft, initial)) {
    for (const field of def.fields) {
      if (field.type === 'checkbox') continue;
      const key = configKey(field.name);
      const text = String(draft[key] ?? '').trim();
      if (text === '') {
        if (field.required) errors[key] = 'Required';
      } else if (field.type === 'number' && !Number.isFinite(Number(text))) errors[key] = 'Must be a number';
    }
  }
  return errors;
}

/** An owner field's body value; undefined leaves it out (a create then uses the default). */
function ownerValue(field: OwnerField, value: FormValue | undefined, op: 'create' | 'update'): unknown {
  switch (field.type) {
    case 'checkbox':
      return value === true;
    case 'multiselect':
      return Array.isArray(value) ? value : [];
    case 'number':
    case 'datetime': {
      const text = typeof value === 'string' ? value.trim() : '';
      if (text === '') return op === 'update' && field.nullable ? null : undefined;
      return field.type === 'number' ? Number(text) : (fromLocalInput(text) ?? text);
    }
    case 'select':
      return typeof value === 'string' && value !== '' ? value : undefined;
    default: {
      const text = typeof value === 'string' ? value : '';
      return op === 'create' && text.trim() === '' ? undefined : text;
    }
  }
}

/** The configuration object: numbers as numbers, checkboxes as booleans, empty values left out. */
export function configValue(def: FunctionDefinitionInfo, draft: FormDraft): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const field of def.fields) {
    const value = draft[configKey(field.name)];
    if (field.type === 'checkbox') {
      config[field.name] = value === true;
      continue;
    }
    const text = typeof value === 'string' ? value.trim() : '';
    if (text === '') continue;
    config[field.name] = field.type === 'number' && Number.isFinite(Number(text)) ? Number(text) : field.type === 'password' ? value : text;
  }
  return config;
}

/** POST body: `{ config, ...owner fields }` with `mode` for discounts. */
export function createBody(def: FunctionDefinitionInfo, draft: FormDraft, mode: DiscountMode | undefined): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const field of visibleOwnerFields(def, mode)) {
    if (field.name === 'mode') continue;
    const value = ownerValue(field, draft[field.name], 'create');
    if (value !== undefined) setAt(body, field.path, value);
  }
  if (def.type === 'discount' && mode) body.mode = mode;
  body.config = configValue(def, draft);
  return body;
}

/**
 * PUT body: only what changed — the edited owner fields (a cleared nullable field is null) and, when any configuration
 * value changed, the whole configuration (the server replaces it). Empty when nothing changed.
 */
export function updateBody(
  def: FunctionDefinitionInfo,
  draft: FormDraft,
  initial: FormDraft,
  instance: FunctionInstanceInfo,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const field of editedOwnerFields(def, draft, initial, formMode(def, draft, instance))) {
    const value = ownerValue(field, draft[field.name], 'update');
    if (value !== undefined) setAt(body, field.path, value);
  }
  if (configChanged(def, draft, initial)) body.config = configValue(def, draft);
  return body;
}

/** The DELETE path: the GID URL-encoded, and `?mode=` for a discount definition that has both modes. */
export function deletePath(def: FunctionDefinitionInfo, instance: FunctionInstanceInfo): string {
  const base = `/api/functions/${encodeURIComponent(def.handle)}/instances/${encodeURIComponent(instance.id)}`;
  const mode = instance.owner.mode;
  return (def.discountModes?.length ?? 0) > 1 && typeof mode === 'string' ? `${base}?mode=${encodeURIComponent(mode)}` : base;
}

/** The form keys of a definition for a mode: the visible owner fields and the configuration fields. */
export function formKeys(def: FunctionDefinitionInfo, mode: DiscountMode | undefined): string[] {
  return [...visibleOwnerFields(def, mode).map((f) => f.name), ...def.fields.map((f) => configKey(f.name))];
}

/**
 * userErrors → messages next to the fields they name (`["config", "percentage"]` → `config.percentage`,
 * `["combinesWith", "orderDiscounts"]`), and the others (no field, `["config"]` for the metafield, a field the form does
 * not show) as general messages.
 */
export function userErrorsToForm(userErrors: unknown, keys: string[]): { fields: FormErrors; general: string[] } {
  const fields: FormErrors = {};
  const general: string[] = [];
  if (!Array.isArray(userErrors)) return { fields, general };
  for (const item of userErrors as UserError[]) {
    if (!item || typeof item.message !== 'string') continue;
    const key = Array.isArray(item.field) ? item.field.join('.') : '';
    if (key && keys.includes(key)) fields[key] ??= item.message;
    else general.push(item.message);
  }
  return { fields, general };
}

/** An owner value as people read it. */
export function ownerDisplay(field: OwnerField, value: unknown, formatDate: (iso: string) => string): string {
  if (value === null || value === undefined || value === '') return field.nullable ? 'None' : '—';
  switch (field.type) {
    case 'checkbox':
      return value === true ? 'Yes' : 'No';
    case 'datetime':
      return typeof value === 'string' ? formatDate(value) : String(value);
    case 'select':
    case 'multiselect': {
      const list = Array.isArray(value) ? value : [value];
      return list.map((v) => field.options?.find((o) => o.value === v)?.label ?? String(v)).join(', ');
    }
    default:
      return String(value);
  }
}

/** The owner values of an instance as `label: value` lines (the title and the mode are shown elsewhere). */
export function ownerSummary(def: FunctionDefinitionInfo, instance: FunctionInstanceInfo, formatDate: (iso: string) => string): string[] {
  const mode = instance.owner.mode as DiscountMode | undefined;
  return def.ownerFields
    .filter((f) => f.name !== 'title' && f.name !== 'mode' && (!f.modes || (mode && f.modes.includes(mode))))
    .map((f) => `${f.label}: ${ownerDisplay(f, getAt(instance.owner, f.path), formatDate)}`);
}

/** The stored configuration as `label: value` lines, with keys the definition does not know after its fields. */
export function configSummary(def: FunctionDefinitionInfo, config: Record<string, unknown>): string[] {
  const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  const lines = def.fields.filter((f) => config[f.name] !== undefined).map((f) => `${f.label}: ${show(config[f.name])}`);
  for (const [key, value] of Object.entries(config)) if (!def.fields.some((f) => f.name === key)) lines.push(`${key}: ${show(value)}`);
  return lines;
}
