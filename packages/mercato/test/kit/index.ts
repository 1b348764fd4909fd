/** The shared test kit: shop constants, the JSON response reader, thrown-error capture, polling and a captured logger. */
import { expect } from 'vitest';
import { type Logger, createLogger } from '../../src/logger.ts';

/** The test shop: the first preview shop of `mercato dev` (`DEV_SHOPS[0]` in src/dev/preview.ts), so dev tests can use it too. */
export const SHOP = 'demo-1.myshopify.com';
/** A second shop, for tenant isolation. */
export const OTHER_SHOP = 'shop-two.myshopify.com';

/** The status and parsed JSON body of a response (the body typed `any`, as tests read it). */
export async function json(res: Response): Promise<{ status: number; body: any }> {
  return { status: res.status, body: (await res.json()) as any };
}

type ErrorClass<E> = abstract new (...args: any[]) => E;

/**
 * The error `fn` throws. Fails the test when `fn` returns, or, given `type`, when it throws something else.
 * For a promise use `rejection`.
 */
export function thrown(fn: () => unknown): unknown;
export function thrown<E>(fn: () => unknown, type: ErrorClass<E>): E;
export function thrown(fn: () => unknown, type?: ErrorClass<unknown>): unknown {
  let result: unknown;
  try {
    result = fn();
  } catch (error) {
    if (type) expect(error).toBeInstanceOf(type);
    return error;
  }
  if (result instanceof Promise) {
    result.catch(() => undefined);
    throw new Error('thrown(): the function returned a promise; use rejection() for a promise');
  }
  throw new Error(`expected ${type ? `a ${type.name}` : 'an error'} to be thrown, but the function returned`);
}

/** The reason `promise` rejects with. Fails the test when it resolves, or, given `type`, when it rejects with something else. */
export async function rejection(promise: PromiseLike<unknown>): Promise<unknown>;
export async function rejection<E>(promise: PromiseLike<unknown>, type: ErrorClass<E>): Promise<E>;
export async function rejection(promise: PromiseLike<unknown>, type?: ErrorClass<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    if (type) expect(error).toBeInstanceOf(type);
    return error;
  }
  throw new Error(`expected ${type ? `a ${type.name}` : 'a rejection'}, but the promise resolved`);
}

export interface EventuallyOptions {
  /** Milliseconds before the test fails (default 10 s; `expect.poll` alone defaults to 1 s). */
  timeout?: number;
  /** Milliseconds between two calls (default 20). */
  interval?: number;
  /** Shown when the time runs out. */
  message?: string;
}

type Truthy<T> = Exclude<T, undefined | null | false | 0 | ''>;

/**
 * Calls `probe` until it returns a truthy value and returns that value: vitest's `expect.poll(probe).toBeTruthy()`,
 * keeping the value. Only inside a test (expect.poll refuses hooks). When the value is not needed, use `expect.poll`.
 * A probe that throws is called again; its last error fails the test when the time runs out.
 */
export async function eventually<T>(probe: () => T | Promise<T>, options: EventuallyOptions = {}): Promise<Truthy<T>> {
  const { timeout = 10_000, interval = 20, message } = options;
  let value: T | undefined;
  await expect.poll(async () => (value = await probe()), { timeout, interval, message }).toBeTruthy();
  return value as Truthy<T>;
}

/** A Mercato logger (`createLogger`, with its redaction) whose output is kept: `lines` parsed, `raw` as written. */
export function capturingLogger(level = 'debug'): { logger: Logger; lines: Array<Record<string, any>>; raw: string[] } {
  const lines: Array<Record<string, any>> = [];
  const raw: string[] = [];
  const destination = {
    write(chunk: string) {
      raw.push(chunk);
      for (const line of chunk.split('\n')) if (line.trim()) lines.push(JSON.parse(line));
    },
  };
  return { logger: createLogger({ level, destination }), lines, raw };
}
