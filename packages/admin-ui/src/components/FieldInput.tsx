/**
 * One field of a provider-style field spec (text, password, number, select, checkbox): the provider forms and the
 * configuration of platform function instances use the same specs and the same inputs.
 */
import { Badge, Checkbox, Select, TextField } from '@shopify/polaris';
import type { ProviderField } from 'mercato/api';

export function FieldInput({
  field,
  value,
  error,
  onChange,
}: {
  field: ProviderField;
  value: string | boolean;
  error?: string;
  onChange(v: string | boolean): void;
}) {
  const label = field.required ? `${field.label} *` : field.label;
  switch (field.type) {
    case 'checkbox':
      return <Checkbox label={field.label} checked={value === true} onChange={onChange} error={error} helpText={field.description} />;
    case 'select':
      return (
        <Select
          label={label}
          options={[{ label: 'Choose…', value: '' }, ...(field.options ?? [])]}
          value={String(value)}
          onChange={onChange}
          error={error}
          helpText={field.description}
        />
      );
    case 'password':
      return (
        <TextField
          label={label}
          type="password"
          value={String(value)}
          onChange={onChange}
          autoComplete="new-password"
          placeholder={field.hasValue ? 'saved' : field.placeholder}
          helpText={
            [field.description, field.hasValue ? 'A value is saved: leave empty to keep it, or type a new one to replace it.' : undefined]
              .filter(Boolean)
              .join(' ') || undefined
          }
          suffix={field.hasValue && value === '' ? <Badge tone="success">saved</Badge> : undefined}
          error={error}
        />
      );
    default:
      return (
        <TextField
          label={label}
          type={field.type === 'number' ? 'number' : 'text'}
          value={String(value)}
          onChange={onChange}
          autoComplete="off"
          placeholder={field.placeholder}
          error={error}
          helpText={field.description}
        />
      );
  }
}
