/** Loads a JSON resource with loading / error states and a reload function; a null path loads nothing. */
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, api } from './api.ts';

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  loading: boolean;
  /** Loads again; keeps the current data on screen while loading. */
  reload(): Promise<void>;
  /** Loads again without the loading state (live updates: no spinner or loading bar each time something changes). */
  refresh(): Promise<void>;
  setData(next: T): void;
}

export function useApi<T>(path: string | null): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | Error | undefined>(undefined);
  const [loading, setLoading] = useState<boolean>(path !== null);
  const seq = useRef(0);

  const load = useCallback(
    async (quiet = false) => {
      if (path === null) return;
      const id = ++seq.current;
      if (!quiet) setLoading(true);
      try {
        const result = await api<T>(path);
        if (id !== seq.current) return;
        setData(result);
        setError(undefined);
      } catch (e) {
        if (id !== seq.current) return;
        setError(e as Error);
      } finally {
        if (id === seq.current) setLoading(false);
      }
    },
    [path],
  );

  useEffect(() => {
    void load(false);
    return () => {
      seq.current++;
    };
  }, [load]);

  const reload = useCallback(() => load(false), [load]);
  const refresh = useCallback(() => load(true), [load]);
  return { data, error, loading, reload, refresh, setData };
}
