/**
 * Why a pending or sleeping run waits (the API's `run.waiting`): a banner on the run page and a short hint beside the
 * status in the run lists. A *Retrying* run (`retry_backoff`) keeps its own display (nextAttemptAt), so neither shows
 * for it.
 */
import { Banner, Link, Text } from '@shopify/polaris';
import type { RunWaitReason, RunWaiting } from 'mercato/api';
import { useEffect, useState } from 'react';
import { formatCountdown, formatDateTime, formatMoment } from '../lib/format.ts';

/** The current time, updated every `intervalMs` while `active` (a countdown's clock; stopped when not needed). */
export function useNow(active: boolean, intervalMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [active, intervalMs]);
  return now;
}

/** A live "in 1 min 5 s" until `iso` (`past`, "due now", once it has passed); re-renders only itself, once a second. */
export function Countdown({ until, prefix = 'in ', past = 'due now' }: { until: string; prefix?: string; past?: string }) {
  const at = new Date(until).getTime();
  const now = useNow(!Number.isNaN(at) && at > Date.now());
  if (Number.isNaN(at)) return null;
  const left = at - now;
  // never announced on every tick: the banner around it is a live region
  return (
    <span aria-live="off" data-testid="countdown">
      {left > 0 ? `${prefix}${formatCountdown(left)}` : past}
    </span>
  );
}

const TITLES: Record<RunWaitReason, string> = {
  queued: 'Queued for a worker',
  claimed: 'Starting: a worker has claimed it',
  debounced: 'Debounced',
  rate_limited: 'Rate-limited',
  concurrency: 'Waiting for a concurrency slot',
  retry_backoff: 'Waiting to retry',
  sleeping: 'Sleeping',
};

/** The reason in words, as the banner's title says it. */
export function waitingTitle(waiting: RunWaiting): string {
  return TITLES[waiting.reason] ?? 'Waiting';
}

function When({ until, label, past }: { until: string; label: string; past?: string }) {
  return (
    <p data-testid="waiting-until">
      {`${label} `}
      <time dateTime={until} title={formatDateTime(until)}>
        {formatMoment(until)}
      </time>{' '}
      (<Countdown until={until} past={past} />)
    </p>
  );
}

function Key({ value }: { value: string | null }) {
  if (value === null) return null;
  return (
    <p data-testid="waiting-key">
      Key: <span className="mono">{value}</span>
    </p>
  );
}

/** The run page's banner: the reason, when it expects to go on, the key, the run holding the slot, the runs ahead. */
export function WaitingBanner({ waiting, runId }: { waiting: RunWaiting; runId: string }) {
  const { reason, until, key, heldBy, ahead } = waiting;
  let body: React.ReactNode;
  switch (reason) {
    case 'queued':
      body = (
        <>
          <p data-testid="waiting-detail">
            {ahead === null
              ? 'It waits for a free worker; other shops are served in turn.'
              : ahead === 0
                ? 'It is next in line for a free worker; other shops are served in turn.'
                : `${ahead >= 1000 ? '1,000 or more runs' : `${ahead} run${ahead === 1 ? '' : 's'}`} of this shop go before it (${ahead >= 1000 ? '1,000+' : ahead} ahead); other shops are served in turn.`}
          </p>
          {until ? <When until={until} label="Due at" /> : null}
        </>
      );
      break;
    case 'claimed':
      body = <p data-testid="waiting-detail">A worker has taken it and starts its flow as soon as it has a free slot.</p>;
      break;
    case 'debounced':
      body = (
        <>
          <p data-testid="waiting-detail">
            Dispatches with the same key join this run: each one replaces its input and moves its start later.
          </p>
          {until ? <When until={until} label="Starts at" /> : null}
          <Key value={key} />
        </>
      );
      break;
    case 'rate_limited':
      body = (
        <>
          <p data-testid="waiting-detail">The flow&apos;s rate limit for this key is used up; the run starts when the limit allows.</p>
          {until ? <When until={until} label="Can start at" /> : null}
          <Key value={key} />
        </>
      );
      break;
    case 'concurrency':
      body = (
        <>
          <p data-testid="waiting-detail">
            Every slot of the flow&apos;s concurrency key is taken
            {heldBy && heldBy !== runId ? (
              <>
                {'; one is held by run '}
                <Link url={`/runs/${heldBy}`}>
                  <span className="mono">{heldBy}</span>
                </Link>
                .
              </>
            ) : (
              '.'
            )}
          </p>
          {until ? <When until={until} label="Looked at again by" past="any moment now" /> : null}
          <Key value={key} />
        </>
      );
      break;
    case 'sleeping':
      body = until ? <When until={until} label="Wakes up at" /> : <p>It sleeps in a step (ctx.sleep).</p>;
      break;
    default:
      body = <p>{waiting.message}</p>;
  }
  return (
    <div data-testid="waiting" data-reason={reason}>
      <Banner tone="info" title={waitingTitle(waiting)}>
        {body}
      </Banner>
    </div>
  );
}

/** The short words of the list hint, without the countdown. */
const HINTS: Record<RunWaitReason, string> = {
  queued: 'queued',
  claimed: 'starting',
  debounced: 'debounced',
  rate_limited: 'rate-limited',
  concurrency: 'waiting for slot',
  retry_backoff: 'retrying',
  sleeping: 'wakes',
};

/** Beside a list row's status: "rate-limited · 3 s", "debounced · 1 min 5 s", "waiting for slot", "queued". */
export function WaitingHint({ waiting }: { waiting: RunWaiting }) {
  if (waiting.reason === 'retry_backoff') return null;
  const timed = waiting.until !== null && waiting.reason !== 'concurrency';
  return (
    <Text as="span" tone="subdued" variant="bodySm">
      <span className="waiting-hint" data-reason={waiting.reason} title={waiting.message}>
        {` ${HINTS[waiting.reason] ?? 'waiting'}`}
        {timed ? (
          <>
            {waiting.reason === 'sleeping' ? ' ' : ' · '}
            <Countdown until={waiting.until!} prefix={waiting.reason === 'sleeping' ? 'in ' : ''} />
          </>
        ) : null}
      </span>
    </Text>
  );
}
