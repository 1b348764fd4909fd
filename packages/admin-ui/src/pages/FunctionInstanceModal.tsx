/**
 * Create or edit one function instance: the owner fields of the type (per discount mode) and the configuration
 * fields of the definition, checked before sending; the server's and the platform's userErrors next to their fields.
 */
import { Banner, BlockStack, Checkbox, ChoiceList, FormLayout, Modal, Select, Text, TextField } from '@shopify/polaris';
import type { CreateInstanceResponse, FunctionDefinitionInfo, FunctionInstanceInfo, OwnerField, UpdateInstanceResponse } from 'mercato/api';
import { useState } from 'react';
import { FieldInput } from '../components/FieldInput.tsx';
import { ApiError, api, errorMessage } from '../lib/api.ts';
import {
  type FormDraft,
  type FormErrors,
  type FormValue,
  checkDraft,
  configKey,
  createBody,
  definitionTitle,
  formKeys,
  formMode,
  initialDraft,
  instanceName,
  typeLabel,
  updateBody,
  userErrorsToForm,
  visibleOwnerFields,
} from '../lib/functions.ts';

export type SaveOutcome =
  | { kind: 'create'; instance: FunctionInstanceInfo | null; mutation: string }
  | { kind: 'update'; name: string; answer: UpdateInstanceResponse };

function OwnerFieldInput({
  field,
  value,
  error,
  disabled,
  onChange,
}: {
  field: OwnerField;
  value: FormValue;
  error?: string;
  disabled: boolean;
  onChange(next: FormValue): void;
}) {
  const label = field.required ? `${field.label} *` : field.label;
  const help =
    [
      field.description,
      field.type === 'datetime' && field.default === 'now' ? 'Empty: now.' : undefined,
      disabled ? 'Chosen when the instance is created; it cannot be changed.' : undefined,
    ]
      .filter(Boolean)
      .join(' ') || undefined;
  const options = field.options ?? [];
  switch (field.type) {
    case 'checkbox':
      return (
        <Checkbox
          label={field.label}
          checked={value === true}
          onChange={(checked) => onChange(checked)}
          error={error}
          helpText={help}
          disabled={disabled}
        />
      );
    case 'select':
      return (
        <Select
          label={label}
          options={[{ label: 'Choose…', value: '' }, ...options]}
          value={String(value)}
          onChange={onChange}
          error={error}
          helpText={help}
          disabled={disabled}
        />
      );
    case 'multiselect':
      return (
        <ChoiceList
          allowMultiple
          title={label}
          choices={options.map((o) => ({ label: o.label, value: o.value }))}
          selected={Array.isArray(value) ? value : []}
          onChange={(next) => onChange(next)}
          error={error}
          disabled={disabled}
        />
      );
    case 'number':
      return (
        <TextField
          label={label}
          type="number"
          step={1}
          inputMode="numeric"
          value={String(value)}
          onChange={onChange}
          autoComplete="off"
          error={error}
          helpText={help}
          disabled={disabled}
        />
      );
    case 'datetime':
      return (
        <TextField
          label={label}
          type="datetime-local"
          value={String(value)}
          onChange={onChange}
          autoComplete="off"
          error={error}
          helpText={help}
          disabled={disabled}
        />
      );
    default:
      return (
        <TextField
          label={label}
          type="text"
          value={String(value)}
          onChange={onChange}
          autoComplete="off"
          error={error}
          helpText={help}
          disabled={disabled}
        />
      );
  }
}

interface Failure {
  title: string;
  messages: string[];
  tone: 'critical' | 'warning' | 'info';
}

export function FunctionInstanceModal({
  def,
  instance,
  onClose,
  onSaved,
  onRestored,
}: {
  def: FunctionDefinitionInfo;
  /** The instance to edit; none to create one. */
  instance?: FunctionInstanceInfo;
  onClose(): void;
  onSaved(outcome: SaveOutcome): void;
  /** A refused re-creation put the previous instance back (with a new id, or none when that failed too). */
  onRestored(restoredId: string | null): void;
}) {
  const [initial] = useState<FormDraft>(() => initialDraft(def, instance));
  const [draft, setDraft] = useState<FormDraft>(initial);
  const [errors, setErrors] = useState<FormErrors>({});
  const [failure, setFailure] = useState<Failure | null>(null);
  const [sending, setSending] = useState(false);
  // After a refused re-creation the previous instance stands again under a new id: a new attempt edits that one.
  const [target, setTarget] = useState<FunctionInstanceInfo | undefined>(instance);
  const editing = !!target;
  const mode = formMode(def, draft, target);
  const ownerFields = visibleOwnerFields(def, mode);
  const name = target ? instanceName(def, target) : '';
  const title = target ? `Edit ${name}` : `Create a ${definitionTitle(def)} instance`;

  const set = (key: string, value: FormValue) => {
    setDraft((old) => ({ ...old, [key]: value }));
    setErrors((old) => {
      if (!old[key]) return old;
      const next = { ...old };
      delete next[key];
      return next;
    });
  };

  async function submit() {
    setFailure(null);
    const found = checkDraft(def, draft, mode, target ? initial : undefined);
    setErrors(found);
    if (Object.keys(found).length > 0) {
      setFailure({ title: 'Fix the highlighted fields', messages: [], tone: 'critical' });
      return;
    }
    const handlePath = `/api/functions/${encodeURIComponent(def.handle)}/instances`;
    setSending(true);
    try {
      if (target) {
        const body = updateBody(def, draft, initial, target);
        if (Object.keys(body).length === 0) {
          setFailure({ title: 'Nothing to save', messages: ['No value was changed.'], tone: 'info' });
          return;
        }
        const answer = await api<UpdateInstanceResponse>(`${handlePath}/${encodeURIComponent(target.id)}`, { method: 'PUT', json: body });
        onSaved({ kind: 'update', name, answer });
      } else {
        const answer = await api<CreateInstanceResponse>(handlePath, { method: 'POST', json: createBody(def, draft, mode) });
        onSaved({ kind: 'create', instance: answer.instance, mutation: answer.mutation });
      }
    } catch (error) {
      if (error instanceof ApiError && error.status === 400) {
        const mapped = userErrorsToForm(error.body.userErrors, formKeys(def, mode));
        setErrors(mapped.fields);
        const messages = Array.isArray(error.body.userErrors) ? mapped.general : [error.message];
        if (target && 'restoredId' in error.body) {
          const restoredId = typeof error.body.restoredId === 'string' ? error.body.restoredId : null;
          messages.push(
            restoredId
              ? `The previous instance was created again as it was; its id is now ${restoredId}.`
              : 'The previous instance could not be created again: it no longer exists on the platform.',
          );
          if (restoredId) setTarget({ ...target, id: restoredId });
          onRestored(restoredId);
        }
        setFailure({ title: error.body.source === 'platform' ? 'The platform refused it' : 'Not saved', messages, tone: 'critical' });
      } else {
        setFailure({ title: 'Not saved', messages: [errorMessage(error)], tone: 'critical' });
      }
    } finally {
      setSending(false);
    }
  }

  return (
    <Modal
      open
      onClose={onClose}
      title={title}
      primaryAction={{ content: editing ? 'Save' : 'Create instance', onAction: () => void submit(), loading: sending, disabled: sending }}
      secondaryActions={[{ content: 'Cancel', onAction: onClose }]}
    >
      <Modal.Section>
        <form
          aria-label={title}
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <BlockStack gap="400">
            {failure ? (
              <Banner tone={failure.tone} title={failure.title}>
                {failure.messages.length === 1 ? (
                  <p>{failure.messages[0]}</p>
                ) : failure.messages.length > 1 ? (
                  <ul>
                    {failure.messages.map((m, i) => (
                      <li key={i}>{m}</li>
                    ))}
                  </ul>
                ) : null}
              </Banner>
            ) : null}
            {editing && def.supported.update === 'recreate' ? (
              <Banner tone="info">
                <p>{`The platform cannot update a ${typeLabel(def.type).toLowerCase()}: saving deletes this one and creates it again with the new values, so its id changes.`}</p>
              </Banner>
            ) : null}
            {ownerFields.length > 0 ? (
              <BlockStack gap="200">
                <Text as="h3" variant="headingSm">
                  {typeLabel(def.type)}
                </Text>
                <FormLayout>
                  {ownerFields.map((field) => (
                    <OwnerFieldInput
                      key={field.name}
                      field={field}
                      value={draft[field.name] ?? ''}
                      error={errors[field.name]}
                      disabled={editing && !!field.createOnly}
                      onChange={(next) => set(field.name, next)}
                    />
                  ))}
                </FormLayout>
              </BlockStack>
            ) : null}
            <BlockStack gap="200">
              <Text as="h3" variant="headingSm">
                Configuration
              </Text>
              {def.fields.length === 0 ? (
                <Text as="p" tone="subdued">
                  This function has no configuration fields.
                </Text>
              ) : (
                <FormLayout>
                  {def.fields.map((field) => (
                    <FieldInput
                      key={field.name}
                      field={field}
                      value={(draft[configKey(field.name)] as string | boolean | undefined) ?? ''}
                      error={errors[configKey(field.name)]}
                      onChange={(next) => set(configKey(field.name), next)}
                    />
                  ))}
                </FormLayout>
              )}
              <Text as="p" tone="subdued" variant="bodySm">
                {`Stored on the instance in the metafield ${def.configMetafield.namespace} / ${def.configMetafield.key} (${def.configMetafield.type}), which the function reads.`}
              </Text>
            </BlockStack>
            <button type="submit" hidden aria-hidden="true" tabIndex={-1} />
          </BlockStack>
        </form>
      </Modal.Section>
    </Modal>
  );
}
