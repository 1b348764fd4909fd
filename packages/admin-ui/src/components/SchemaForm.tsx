/** A form generated from a JSON schema (see lib/schema.ts for the model and the validation). */
import { BlockStack, Box, Button, Checkbox, InlineStack, Select, Text, TextField } from '@shopify/polaris';
import { type Draft, type Errors, type JsonSchema, enumValues, humanize, kindOf, toDraft, unwrapNullable } from '../lib/schema.ts';

interface FieldProps {
  schema: JsonSchema;
  draft: Draft;
  path: string;
  label: string;
  required: boolean;
  errors: Errors;
  onChange(next: Draft): void;
}

function enumLabel(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function Field({ schema: raw, draft, path, label, required, errors, onChange }: FieldProps) {
  const { schema } = unwrapNullable(raw);
  const kind = kindOf(schema);
  const error = errors[path];
  const help = schema.description;
  const id = `field-${path.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  const shownLabel = required ? `${label} *` : label;
  switch (kind) {
    case 'string':
      return (
        <TextField
          id={id}
          label={shownLabel}
          value={draft as string}
          onChange={onChange}
          autoComplete="off"
          helpText={help}
          error={error}
          type={schema.format === 'email' ? 'email' : 'text'}
          placeholder={schema.format === 'date-time' ? '2026-01-31T09:00:00Z' : undefined}
        />
      );
    case 'number':
    case 'integer':
      return (
        <TextField
          id={id}
          label={shownLabel}
          type="number"
          inputMode={kind === 'integer' ? 'numeric' : 'decimal'}
          value={draft as string}
          onChange={onChange}
          autoComplete="off"
          helpText={help}
          error={error}
          min={schema.minimum}
          max={schema.maximum}
          step={kind === 'integer' ? 1 : undefined}
        />
      );
    case 'boolean':
      return (
        <Checkbox id={id} label={label} checked={draft === true} onChange={(checked) => onChange(checked)} helpText={help} error={error} />
      );
    case 'enum': {
      const values = enumValues(schema);
      const options = [
        { label: required ? 'Choose…' : '(none)', value: '' },
        ...values.map((v, i) => ({ label: enumLabel(v), value: String(i) })),
      ];
      return (
        <Select id={id} label={shownLabel} options={options} value={draft as string} onChange={onChange} helpText={help} error={error} />
      );
    }
    case 'object': {
      const obj = (draft && typeof draft === 'object' && !Array.isArray(draft) ? draft : {}) as Record<string, Draft>;
      return (
        <fieldset className="schema-fieldset">
          <legend>
            <Text as="span" variant="headingSm">
              {label}
            </Text>
          </legend>
          {help ? (
            <Text as="p" tone="subdued">
              {help}
            </Text>
          ) : null}
          <ObjectFields schema={schema} draft={obj} path={path} errors={errors} onChange={onChange} />
        </fieldset>
      );
    }
    case 'array': {
      const list = Array.isArray(draft) ? draft : [];
      const itemSchema = schema.items as JsonSchema;
      const itemKind = kindOf(itemSchema);
      return (
        <fieldset className="schema-fieldset">
          <legend>
            <Text as="span" variant="headingSm">
              {shownLabel}
            </Text>
          </legend>
          <BlockStack gap="200">
            {help ? (
              <Text as="p" tone="subdued">
                {help}
              </Text>
            ) : null}
            {list.length === 0 ? (
              <Text as="p" tone="subdued">
                No items.
              </Text>
            ) : null}
            {list.map((item, i) => (
              <InlineStack key={i} gap="200" blockAlign="end" wrap={false}>
                <Box minWidth="0" width="100%">
                  <Field
                    schema={itemSchema}
                    draft={item}
                    path={`${path}.${i}`}
                    label={`${label} item ${i + 1}`}
                    required={itemKind !== 'boolean'}
                    errors={errors}
                    onChange={(next) => onChange(list.map((old, j) => (j === i ? next : old)))}
                  />
                </Box>
                <Button accessibilityLabel={`Remove ${label} item ${i + 1}`} onClick={() => onChange(list.filter((_, j) => j !== i))}>
                  Remove
                </Button>
              </InlineStack>
            ))}
            <InlineStack>
              <Button onClick={() => onChange([...list, toDraft(itemSchema, undefined)])} accessibilityLabel={`Add item to ${label}`}>
                Add item
              </Button>
            </InlineStack>
            {error ? <p className="field-error">{error}</p> : null}
          </BlockStack>
        </fieldset>
      );
    }
    default:
      return (
        <TextField
          id={id}
          label={`${shownLabel} (JSON)`}
          value={draft as string}
          onChange={onChange}
          multiline={3}
          monospaced
          autoComplete="off"
          helpText={help ?? 'Any JSON value'}
          error={error}
        />
      );
  }
}

function ObjectFields({
  schema,
  draft,
  path,
  errors,
  onChange,
}: {
  schema: JsonSchema;
  draft: Record<string, Draft>;
  path: string;
  errors: Errors;
  onChange(next: Draft): void;
}) {
  const required = new Set(schema.required ?? []);
  const entries = Object.entries(schema.properties ?? {});
  if (entries.length === 0) {
    return (
      <Text as="p" tone="subdued">
        This flow takes no input.
      </Text>
    );
  }
  return (
    <BlockStack gap="300">
      {entries.map(([key, child]) => (
        <Field
          key={key}
          schema={child}
          draft={draft[key] ?? toDraft(child, undefined)}
          path={path ? `${path}.${key}` : key}
          label={child.title ?? humanize(key)}
          required={required.has(key)}
          errors={errors}
          onChange={(next) => onChange({ ...draft, [key]: next })}
        />
      ))}
    </BlockStack>
  );
}

/** The fields of a root object schema. */
export function SchemaForm({
  schema,
  draft,
  errors,
  onChange,
}: {
  schema: JsonSchema;
  draft: Draft;
  errors: Errors;
  onChange(next: Draft): void;
}) {
  const obj = (draft && typeof draft === 'object' && !Array.isArray(draft) ? draft : {}) as Record<string, Draft>;
  return (
    <BlockStack gap="300">
      {errors.$ ? <p className="field-error">{errors.$}</p> : null}
      <ObjectFields schema={schema} draft={obj} path="" errors={errors} onChange={onChange} />
    </BlockStack>
  );
}
