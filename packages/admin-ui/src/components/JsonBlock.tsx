import { prettyJson } from '../lib/format.ts';

/** Read-only JSON, scrollable, with a label for screen readers. */
export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  return (
    <pre className="json-block" aria-label={label} tabIndex={0}>
      {prettyJson(value)}
    </pre>
  );
}
