/** The logs of a run: query box with syntax help, level toggles, context lines marked, paging, CSV/JSON export. */
import { BlockStack, Button, ButtonGroup, Card, Collapsible, InlineStack, Pagination, Text, TextField } from '@shopify/polaris';
import type { LogLevel, LogSearchQuery, LogSearchResponse } from 'mercato/api';
import { useEffect, useId, useState } from 'react';
import { LevelBadge } from '../components/badges.tsx';
import { Empty, ErrorBanner, LoadingBlock } from '../components/states.tsx';
import { ApiError, download, errorMessage, qs } from '../lib/api.ts';
import { useShell } from '../lib/context.tsx';
import { formatDateTime } from '../lib/format.ts';
import { useApi } from '../lib/useApi.ts';

const LEVELS: readonly LogLevel[] = ['info', 'warn', 'error'];
const PAGE_SIZE = 50;

const SYNTAX: [string, string][] = [
  ['timeout', 'message contains the text, ignoring case; several terms must all match'],
  ['"payment failed"', 'message contains the phrase'],
  ['/^refund/i', 'message matches the regular expression (i: ignore case)'],
  ['level:warn  level>=warn  level!=info', 'by level (info < warn < error)'],
  ['step:fetch  step:"fetch orders"  step:push:*', 'by step name, exactly; a trailing * makes it a prefix'],
  ['attempt:2  attempt>1', 'by attempt number'],
  ['orderId=1001  data.customer.id=42  total>100', 'by a key of the data logged with the line (=, !=, >, >=, <, <=)'],
  ['last:15m  from:2026-11-01T08:00:00Z  to:2026-11-01', 'by time (s, m, h, d, w; no offset means UTC)'],
  ['C:3  B:2  A:5', 'context: show that many lines around, before or after each match (0 to 20)'],
  ['a OR b   -a   NOT a   (a OR b) c', 'combine terms: a space (or AND) means both'],
];

function dataText(data: unknown): string {
  if (data === null || data === undefined) return '';
  try {
    return JSON.stringify(data);
  } catch {
    return String(data);
  }
}

export function RunLogs({ runId, logCount, active }: { runId: string; logCount: number | undefined; active: boolean }) {
  const { toast } = useShell();
  const helpId = useId();
  const [text, setText] = useState('');
  const [q, setQ] = useState('');
  const [levels, setLevels] = useState<string[]>([...LEVELS]);
  const [cursors, setCursors] = useState<(number | undefined)[]>([undefined]);
  const [help, setHelp] = useState(false);
  const [exporting, setExporting] = useState<string | null>(null);
  const before = cursors[cursors.length - 1];
  const levelParam = levels.length === LEVELS.length ? undefined : levels.join(',');
  const res = useApi<LogSearchResponse>(
    `/api/runs/${encodeURIComponent(runId)}/logs${qs({ q, levels: levelParam, limit: PAGE_SIZE, before } satisfies LogSearchQuery)}`,
  );

  // New lines while the run is active: refresh the first page (later pages are stable: they page by id).
  useEffect(() => {
    if (logCount !== undefined && cursors.length === 1) void res.reload();
  }, [logCount]);

  const queryError = res.error instanceof ApiError && res.error.status === 400 ? res.error.message : undefined;
  const apply = () => {
    setQ(text.trim());
    setCursors([undefined]);
  };
  const toggle = (level: string) => {
    setLevels((current) =>
      current.includes(level)
        ? current.length === 1
          ? current
          : current.filter((l) => l !== level)
        : LEVELS.filter((l) => current.includes(l) || l === level),
    );
    setCursors([undefined]);
  };
  async function exportAs(format: 'csv' | 'json') {
    setExporting(format);
    try {
      const name = await download(
        `/api/runs/${encodeURIComponent(runId)}/logs/export${qs({ format, q, levels: levelParam })}`,
        `run-${runId}-logs.${format}`,
      );
      toast(`Exported ${name}`);
    } catch (error) {
      toast(errorMessage(error), { error: true });
    } finally {
      setExporting(null);
    }
  }

  const page = res.data;
  const matches = page?.logs.filter((l) => !l.context).length ?? 0;
  return (
    <Card>
      <BlockStack gap="300">
        <InlineStack align="space-between" blockAlign="center">
          <Text as="h2" variant="headingMd">
            Logs
          </Text>
          <ButtonGroup>
            <Button onClick={() => void exportAs('csv')} loading={exporting === 'csv'} accessibilityLabel="Export CSV of the matching logs">
              Export CSV
            </Button>
            <Button
              onClick={() => void exportAs('json')}
              loading={exporting === 'json'}
              accessibilityLabel="Export JSON of the matching logs"
            >
              Export JSON
            </Button>
          </ButtonGroup>
        </InlineStack>
        <form
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            apply();
          }}
        >
          <BlockStack gap="200">
            <TextField
              label="Search logs"
              value={text}
              onChange={setText}
              autoComplete="off"
              placeholder='e.g. level>=warn "order 1001" C:2'
              monospaced
              error={queryError}
              clearButton
              onClearButtonClick={() => {
                setText('');
                setQ('');
                setCursors([undefined]);
              }}
              connectedRight={<Button submit>Search</Button>}
            />
            <InlineStack gap="300" blockAlign="center" wrap>
              <ButtonGroup variant="segmented">
                {LEVELS.map((level) => (
                  <Button
                    key={level}
                    pressed={levels.includes(level)}
                    onClick={() => toggle(level)}
                    accessibilityLabel={`Show ${level} lines`}
                  >
                    {level}
                  </Button>
                ))}
              </ButtonGroup>
              <Button variant="plain" onClick={() => setHelp((v) => !v)} ariaExpanded={help} ariaControls={helpId}>
                {help ? 'Hide syntax help' : 'Syntax help'}
              </Button>
            </InlineStack>
            <Collapsible open={help} id={helpId}>
              <table className="syntax-help">
                <caption className="visually-hidden">Log query syntax</caption>
                <tbody>
                  {SYNTAX.map(([example, meaning]) => (
                    <tr key={example}>
                      <th scope="row">
                        <code>{example}</code>
                      </th>
                      <td>{meaning}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </Collapsible>
          </BlockStack>
        </form>
        {!page && !res.error ? <LoadingBlock label="logs" lines={4} /> : null}
        {res.error && !queryError ? (
          <ErrorBanner error={res.error} title="Logs could not be loaded" onRetry={() => void res.reload()} />
        ) : null}
        {page ? (
          <div role="status">
            <Text as="p" tone="subdued">
              {page.total === 0
                ? 'No matching lines'
                : `${page.totalExact === false ? `${page.total}+` : page.total} matching line${page.total === 1 ? '' : 's'}${matches ? `; showing ${matches} (newest first)` : ''}`}
            </Text>
          </div>
        ) : null}
        {page && page.logs.length === 0 ? (
          <Empty heading={q || levels.length < LEVELS.length ? 'No lines match' : active ? 'No logs yet' : 'This run wrote no logs'}>
            {q || levels.length < LEVELS.length
              ? 'Change the query or the levels.'
              : active
                ? 'Lines appear here while the run writes them.'
                : undefined}
          </Empty>
        ) : null}
        {page && page.logs.length > 0 ? (
          <ol className="log-list" aria-label="Log lines, newest first">
            {page.logs.map((line) => (
              <li
                key={line.id}
                className="log-line"
                data-context={line.context ? 'true' : 'false'}
                data-match={line.context ? 'false' : q ? 'true' : 'false'}
              >
                <span>{formatDateTime(line.createdAt)}</span>
                <span>
                  <LevelBadge level={line.level} />
                </span>
                <span className="log-message">
                  {line.context ? <span className="log-context-label">context · </span> : null}
                  {line.step ? (
                    <span className="log-step">
                      [{line.step}#{line.attempt}]{' '}
                    </span>
                  ) : null}
                  {line.message}
                  {line.data !== null && line.data !== undefined ? <span className="log-data"> {dataText(line.data)}</span> : null}
                </span>
              </li>
            ))}
          </ol>
        ) : null}
        {page && (cursors.length > 1 || page.nextBefore) ? (
          <Pagination
            hasPrevious={cursors.length > 1}
            previousTooltip="Newer lines"
            onPrevious={() => setCursors((c) => c.slice(0, -1))}
            hasNext={!!page.nextBefore}
            nextTooltip="Older lines"
            onNext={() => setCursors((c) => [...c, page.nextBefore!])}
            label={`Page ${cursors.length}`}
          />
        ) : null}
      </BlockStack>
    </Card>
  );
}
