/** "Run" on a flow: a form generated from the input schema (or raw JSON), validated before sending. */
import { Banner, BlockStack, Button, InlineStack, Link, Modal, Text, TextField } from '@shopify/polaris';
import type { DispatchResponse, FlowInfo, RunFlowRequest } from 'mercato/api';
import { useMemo, useState } from 'react';
import { SchemaForm } from '../components/SchemaForm.tsx';
import { ApiError, api, errorMessage } from '../lib/api.ts';
import { useShell } from '../lib/context.tsx';
import { useRouter } from '../lib/router.tsx';
import { type Draft, type Errors, fromDraft, hasForm, issuesToErrors, toDraft, validateValue } from '../lib/schema.ts';

/** Field problems as one line under the JSON box: `since: Required; customer.email: Must be an email address`. */
function jsonProblems(errors: Errors): string {
  return Object.entries(errors)
    .map(([k, v]) => (k === '$' ? v : `${k}: ${v}`))
    .join('; ');
}

export function RunFlowModal({ flow, onClose }: { flow: FlowInfo; onClose(): void }) {
  const { navigate } = useRouter();
  const { toast } = useShell();
  const formable = hasForm(flow.inputSchema);
  const [mode, setMode] = useState<'form' | 'json'>(formable ? 'form' : 'json');
  const [draft, setDraft] = useState<Draft>(() => (formable ? toDraft(flow.inputSchema!, undefined) : {}));
  const [json, setJson] = useState('{}');
  const [errors, setErrors] = useState<Errors>({});
  const [failure, setFailure] = useState<{ message: string; existingRunId?: string } | null>(null);
  const [sending, setSending] = useState(false);
  // After a first attempt, fields are checked as they change, so a fixed field loses its message at once.
  const [attempted, setAttempted] = useState(false);
  const title = `Run ${flow.name}`;

  const schema = flow.inputSchema;
  const jsonError = useMemo(() => {
    if (mode !== 'json') return null;
    try {
      const value = JSON.parse(json) as unknown;
      return value && typeof value === 'object' && !Array.isArray(value) ? null : 'The input must be a JSON object';
    } catch (error) {
      return `Not valid JSON: ${(error as Error).message}`;
    }
  }, [json, mode]);

  function collect(): { input: unknown; errors: Errors } {
    if (mode === 'json') {
      if (jsonError) return { input: undefined, errors: { $json: jsonError } };
      const input = JSON.parse(json) as unknown;
      // The same rules as the form: a schema the form can show checks the JSON too, before anything is sent.
      if (!formable) return { input, errors: {} };
      const found: Errors = {};
      validateValue(schema!, input, '', found);
      return { input, errors: Object.keys(found).length > 0 ? { $json: jsonProblems(found) } : {} };
    }
    const found: Errors = {};
    const input = fromDraft(schema!, draft, '', found);
    return { input: input ?? {}, errors: found };
  }

  function switchMode(next: 'form' | 'json') {
    if (next === mode) return;
    if (next === 'json') {
      const { input } = collect();
      setJson(JSON.stringify(input ?? {}, null, 2));
    } else if (jsonError) {
      setErrors({ $json: jsonError });
      return;
    } else {
      setDraft(toDraft(schema!, JSON.parse(json)));
    }
    setErrors({});
    setMode(next);
  }

  async function submit() {
    setFailure(null);
    setAttempted(true);
    const { input, errors: found } = collect();
    setErrors(found);
    if (Object.keys(found).length > 0) {
      setFailure({ message: 'Fix the highlighted fields, then run again.' });
      return;
    }
    setSending(true);
    try {
      const result = await api<DispatchResponse>(`/api/flows/${encodeURIComponent(flow.name)}/run`, {
        method: 'POST',
        json: { input } satisfies RunFlowRequest,
      });
      toast(`Run of ${flow.name} started`);
      onClose();
      navigate(`/runs/${result.runId}`);
    } catch (error) {
      if (error instanceof ApiError && error.status === 409 && typeof error.body.existingRunId === 'string') {
        setFailure({ message: error.message, existingRunId: error.body.existingRunId });
      } else if (error instanceof ApiError && error.status === 400) {
        const mapped = issuesToErrors(error.body.issues);
        setErrors(mode === 'json' ? { $json: jsonProblems(mapped) || error.message } : mapped);
        setFailure({ message: error.message });
      } else {
        setFailure({ message: errorMessage(error) });
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
      primaryAction={{ content: 'Run', onAction: () => void submit(), loading: sending, disabled: sending }}
      secondaryActions={[{ content: 'Cancel', onAction: onClose }]}
    >
      <Modal.Section>
        <BlockStack gap="400">
          {failure ? (
            <Banner
              tone={failure.existingRunId ? 'warning' : 'critical'}
              title={failure.existingRunId ? 'This flow is already running' : 'The run was not started'}
            >
              <BlockStack gap="100">
                <p>{failure.message}</p>
                {failure.existingRunId ? (
                  <p>
                    <Link url={`/runs/${failure.existingRunId}`} onClick={onClose}>
                      Open the active run
                    </Link>
                  </p>
                ) : null}
              </BlockStack>
            </Banner>
          ) : null}
          {flow.description ? <Text as="p">{flow.description}</Text> : null}
          {formable ? (
            <InlineStack gap="200">
              <Button pressed={mode === 'form'} onClick={() => switchMode('form')}>
                Form
              </Button>
              <Button pressed={mode === 'json'} onClick={() => switchMode('json')} disabled={mode === 'json'}>
                Edit as JSON
              </Button>
            </InlineStack>
          ) : null}
          {mode === 'form' && schema ? (
            <form
              onSubmit={(e) => {
                e.preventDefault();
                void submit();
              }}
            >
              <SchemaForm
                schema={schema}
                draft={draft}
                errors={errors}
                onChange={(next) => {
                  setDraft(next);
                  if (attempted) {
                    const found: Errors = {};
                    fromDraft(schema, next, '', found);
                    setErrors(found);
                    if (Object.keys(found).length === 0) setFailure((f) => (f?.existingRunId ? f : null));
                  }
                }}
              />
              <button type="submit" hidden aria-hidden="true" tabIndex={-1} />
            </form>
          ) : (
            <TextField
              label="Input (JSON object)"
              value={json}
              onChange={(next) => {
                setJson(next);
                // A field problem found on Run is shown until the JSON changes; syntax errors stay live.
                if (errors.$json) setErrors({});
              }}
              multiline={8}
              monospaced
              autoComplete="off"
              error={errors.$json ?? (json.trim() ? (jsonError ?? undefined) : undefined)}
              helpText={formable ? undefined : 'This flow has no input schema the form can show; type its input as JSON.'}
            />
          )}
        </BlockStack>
      </Modal.Section>
    </Modal>
  );
}
