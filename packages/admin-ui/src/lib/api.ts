/**
 * The admin API client: every request carries a fresh session token; a 401 gets one new token and one retry.
 * Error answers become ApiError with the JSON body, so pages can show `error`, `field`, `errors`, `existingRunId`, …
 */
import type { TokenSource } from './session.ts';

export class ApiError extends Error {
  readonly status: number;
  readonly body: Record<string, any>;
  constructor(status: number, body: Record<string, any>) {
    super(typeof body.error === 'string' ? body.error : `Request failed with HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

export interface RequestOptions {
  method?: string;
  json?: unknown;
  signal?: AbortSignal;
}

let source: TokenSource | null = null;

export function setTokenSource(next: TokenSource | null): void {
  source = next;
}

export function currentTokenSource(): TokenSource | null {
  return source;
}

async function send(path: string, options: RequestOptions): Promise<Response> {
  if (!source) throw new ApiError(401, { error: 'No session: open the admin from the platform or from the admin preview' });
  const attempt = async (fresh: boolean) => {
    const token = await source!.token(fresh);
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (options.json !== undefined) headers['content-type'] = 'application/json';
    return fetch(path, {
      method: options.method ?? 'GET',
      headers,
      body: options.json === undefined ? undefined : JSON.stringify(options.json),
      signal: options.signal,
    });
  };
  const first = await attempt(false);
  if (first.status !== 401) return first;
  // The token may have expired between minting and arrival: one fresh token, one retry.
  await first.body?.cancel().catch(() => {});
  return attempt(true);
}

async function errorBody(res: Response): Promise<Record<string, any>> {
  const text = await res.text().catch(() => '');
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, any>;
  } catch {
    /* not JSON */
  }
  return { error: text.trim() ? text.trim().slice(0, 300) : `Request failed with HTTP ${res.status}` };
}

/** JSON request; throws ApiError for any status >= 400. */
export async function api<T = any>(path: string, options: RequestOptions = {}): Promise<T> {
  const res = await send(path, options);
  if (!res.ok) throw new ApiError(res.status, await errorBody(res));
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

/** Downloads an authenticated file (exports): fetch with the token, then save the blob under the server's file name. */
export async function download(path: string, fallbackName: string): Promise<string> {
  const res = await send(path, {});
  if (!res.ok) throw new ApiError(res.status, await errorBody(res));
  const blob = await res.blob();
  const disposition = res.headers.get('content-disposition') ?? '';
  const match = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition);
  const name = match ? decodeURIComponent(match[1]!) : fallbackName;
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.style.display = 'none';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return name;
}

export function qs(params: Record<string, string | number | boolean | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text ? `?${text}` : '';
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
