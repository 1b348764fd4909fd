/**
 * Live runs lists (Home, Runs): long polling GET /api/runs/watch?since=<version>, the tenant-wide sibling of the run
 * watch (useRunWatch.ts). Each request waits on the server until a run of this shop is dispatched, changes status or
 * finishes — then `onChange` reloads what the page shows — or until the timeout (then the next request waits again).
 * No timer in the browser: the server holds the request.
 */
import type { RunsWatchResponse } from 'mercato/api';
import { useEffect, useRef, useState } from 'react';
import { ApiError, api } from '../lib/api.ts';

const WATCH_TIMEOUT_S = 25;

/** Calls `onChange` after every change of the shop's runs while the page is open; `live` once the first answer came. */
export function useRunsWatch(onChange: () => void): { live: boolean } {
  const latest = useRef(onChange);
  latest.current = onChange;
  const [live, setLive] = useState(false);

  useEffect(() => {
    const controller = new AbortController();
    let version: string | undefined;
    let failures = 0;
    const loop = async () => {
      while (!controller.signal.aborted) {
        try {
          const query = version === undefined ? '?timeout=0' : `?since=${encodeURIComponent(version)}&timeout=${WATCH_TIMEOUT_S}`;
          const answer = await api<RunsWatchResponse>(`/api/runs/watch${query}`, { signal: controller.signal });
          failures = 0;
          // the first answer only gives the version to wait from: the page has just loaded what it shows
          if (answer.changed && version !== undefined) latest.current();
          version = answer.version;
          setLive(true);
        } catch (e) {
          if (controller.signal.aborted) return;
          setLive(false);
          // a page that is turned off or a lost session does not come back by asking again
          if (e instanceof ApiError && (e.status === 404 || e.status === 401 || e.status === 403)) return;
          failures++;
          await new Promise((r) => setTimeout(r, Math.min(30_000, 1000 * 2 ** failures)));
        }
      }
    };
    void loop();
    return () => controller.abort();
  }, []);

  return { live };
}
