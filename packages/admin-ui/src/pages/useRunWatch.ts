/**
 * Live run state by long polling: GET /api/runs/:id/watch?since=<version> answers at once when the run, its steps or its
 * log count changed since `version`, otherwise after `timeout` seconds with `changed: false`. The loop stops once the
 * run is finished; `restart()` (after cancel or retry) starts it again.
 */
import type { RunDetail, WatchResponse } from 'mercato/api';
import { useCallback, useEffect, useState } from 'react';
import { ACTIVE_STATUSES } from '../components/badges.tsx';
import { ApiError, api } from '../lib/api.ts';

const WATCH_TIMEOUT_S = 25;

export function useRunWatch(id: string) {
  const [run, setRun] = useState<RunDetail | undefined>(undefined);
  const [logCount, setLogCount] = useState<number | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [live, setLive] = useState(false);
  const [generation, setGeneration] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    let version: string | undefined;
    let failures = 0;
    let stopped = false;
    const loop = async () => {
      while (!controller.signal.aborted) {
        try {
          const query = version === undefined ? `?timeout=0` : `?since=${encodeURIComponent(version)}&timeout=${WATCH_TIMEOUT_S}`;
          const answer = await api<WatchResponse>(`/api/runs/${encodeURIComponent(id)}/watch${query}`, { signal: controller.signal });
          failures = 0;
          setError(undefined);
          version = answer.version;
          if (answer.changed) {
            setRun(answer.run);
            setLogCount(answer.lastLogId);
            if (!ACTIVE_STATUSES.includes(answer.run.status)) break;
          }
          setLive(true);
        } catch (e) {
          if (controller.signal.aborted) return;
          if (e instanceof ApiError && (e.status === 404 || e.status === 401)) {
            setError(e);
            break;
          }
          failures++;
          setError(e as Error);
          await new Promise((r) => setTimeout(r, Math.min(30_000, 1000 * 2 ** failures)));
        }
      }
      stopped = true;
      if (!controller.signal.aborted) setLive(false);
    };
    void loop();
    return () => {
      if (!stopped) controller.abort();
    };
  }, [id, generation]);

  const restart = useCallback(() => setGeneration((g) => g + 1), []);
  return { run, logCount, error, live, restart };
}
