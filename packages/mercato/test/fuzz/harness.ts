/**
 * The fuzz suite's shared parts: sizes and seed, the server (a real runtime, worker and HTTP server on a test database,
 * with the platform simulator and the fuzz app of ./app), the properties every answer must hold, and the generators of
 * odd input.
 *
 * Sizes: MERCATO_FUZZ_CASES is the total number of cases of the suite (default 3,000; full size 100,000), split
 * between the files by their share. MERCATO_FUZZ_SEED replays a run (each file prints its seed and case count).
 */
import { Agent, request as httpRequest } from 'node:http';
import { dirname, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import type { PlatformSim } from 'platform-sim';
import { expect } from 'vitest';
import type { Database } from '../../src/db/engine.ts';
import { saveInstallation } from '../../src/platform/store.ts';
import { serve } from '../../src/serve.ts';
import { OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime } from '../helpers/runtime.ts';
import { capturingLogger } from '../kit/index.ts';
import { ENCRYPTION_KEY, startSim } from '../platform/helpers.ts';
import { instance } from './app/app.ts';

export { OTHER_SHOP, SHOP };

/** Total cases of the suite (all files): 3,000 by default, 100,000 at full size. */
export const FUZZ_TOTAL = positiveInt(process.env.MERCATO_FUZZ_CASES, 3000);
/** One seed per process unless MERCATO_FUZZ_SEED is set (each file prints it). */
export const FUZZ_SEED = process.env.MERCATO_FUZZ_SEED ? Number(process.env.MERCATO_FUZZ_SEED) : Date.now() % 2_147_483_647;
/**
 * Bounds on the growth of the process's memory (the server, the worker and the client share it) over one file's run,
 * each measured after a full garbage collection at the start and at the end: the live JavaScript heap, and the
 * resident set (which also holds PGlite's WebAssembly memory, which grows with the data stored and never shrinks).
 */
export const HEAP_GROWTH_BOUND_MB = 64;
export const RSS_GROWTH_BOUND_MB = 256;

function positiveInt(raw: string | undefined, fallback: number): number {
  const n = Number(raw);
  return raw !== undefined && Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** This file's number of cases: its share of the total (at least 1). */
export const casesFor = (share: number) => Math.max(1, Math.round(FUZZ_TOTAL * share));
/** A test time-out fitting `cases` at `msPerCase` (plus start-up). */
export const timeoutFor = (cases: number, msPerCase: number) => 60_000 + cases * msPerCase;

/** fast-check parameters: the seed, the number of runs, and a replay line on failure. */
export function fuzzParams(numRuns: number): fc.Parameters<unknown> {
  return { numRuns, seed: FUZZ_SEED, endOnFailure: false };
}

export function report(
  name: string,
  figures: { cases: number; ms: number; rssGrowthMb?: number; heapGrowthMb?: number; statuses?: Record<string, number> },
) {
  const statuses = figures.statuses
    ? ' statuses ' +
      Object.entries(figures.statuses)
        .sort()
        .map(([s, n]) => `${s}:${n}`)
        .join(' ')
    : '';
  const rss =
    figures.rssGrowthMb === undefined
      ? ''
      : `, RSS growth ${figures.rssGrowthMb.toFixed(1)} MB (bound ${RSS_GROWTH_BOUND_MB}), heap growth ${figures.heapGrowthMb?.toFixed(1)} MB (bound ${HEAP_GROWTH_BOUND_MB})`;
  console.log(
    `[fuzz] ${name}: ${figures.cases} cases in ${(figures.ms / 1000).toFixed(1)} s${rss}, seed ${FUZZ_SEED}${statuses}` +
      ` (replay: MERCATO_FUZZ_SEED=${FUZZ_SEED} MERCATO_FUZZ_CASES=${FUZZ_TOTAL} npm run test:fuzz)`,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// The server

const here = dirname(fileURLToPath(import.meta.url));
export const FUZZ_APP_DIR = resolve(here, 'app');

export interface FuzzServer {
  t: TestRuntime;
  sim: PlatformSim;
  url: string;
  /** A fresh session token of `shop` (default SHOP). */
  token(shop?: string): string;
  /** Error lines the server logged (level 50), for the report. */
  errorLines(): Array<Record<string, unknown>>;
  close(): Promise<void>;
}

/**
 * The runtime with a worker, the platform simulator (token exchange and Admin API), SHOP installed, and the full HTTP
 * surface as `mercato start` serves it: /api, /mcp, /webhooks, /routes/* (the routes of ./app/routes), the admin UI.
 */
export async function startFuzzServer(db: Database, options: { env?: Record<string, string> } = {}): Promise<FuzzServer> {
  const sim = await startSim();
  const { logger, lines } = capturingLogger('warn');
  const t = await startTestRuntime(instance, db, {
    worker: { concurrency: 2 },
    logger,
    env: { PLATFORM_ORIGIN: sim.url, ENCRYPTION_KEY, ...options.env },
  });
  await saveInstallation(db.query, t.runtime.secrets, { appHandle: 'default', shop: SHOP, accessToken: 'shpat_fuzz', scopes: null });
  const server = await serve({ ...t.runtime, projectDir: FUZZ_APP_DIR }, { port: 0, hostname: '127.0.0.1' });
  return {
    t,
    sim,
    url: server.url,
    token: (shop) => t.token(shop),
    errorLines: () => lines.filter((l) => Number(l.level) >= 50),
    async close() {
      await t.close();
      await sim.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Sending a request and checking the answer

export interface FuzzRequest {
  method: string;
  /** Path and query, already encoded. */
  path: string;
  headers?: Record<string, string>;
  /** A stream is sent chunked (no Content-Length). */
  body?: string | Uint8Array | ReadableStream<Uint8Array>;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json?: unknown;
}

/** Things a body must never show: each is checked against every string of the answer. */
export const LEAK_PATTERNS: ReadonlyArray<readonly [string, RegExp]> = [
  ['a stack frame', /\bat (?:async )?[\w$.<>[\] ]*\(?(?:file:\/\/|node:|\/|[A-Za-z]:\\)/],
  ['a stack frame', /\n\s+at \S/],
  ['a file path', /(?:\/work\/|\/home\/|\/tmp\/|\/usr\/(?:lib|local)\/|\/private\/var\/)[\w.-]/],
  ['a source location', /[\w-]+\.(?:ts|mts|js|mjs|cjs):\d+/],
  ['node_modules', /node_modules/],
  ['SQL text', /\b(?:select\s[\s\S]{0,200}?\bfrom\s+"?\w|insert\s+into\s|update\s+"?\w+"?\s+set\s|delete\s+from\s)/i],
  [
    'a PostgreSQL message',
    /syntax error at or near|violates (?:foreign key|unique|check|not-null) constraint|invalid input syntax for|relation "[^"]*" does not exist|stack depth limit exceeded|duplicate key value|current transaction is aborted/i,
  ],
  [
    'an error class',
    /\b[A-Z][A-Za-z]*Error:|\b(?:TypeError|RangeError|SyntaxError|ReferenceError|ZodError|DrizzleQueryError|HTTPException)\b/,
  ],
  ['a stack overflow message', /maximum call stack/i],
];

/**
 * Strings the generators send on purpose that look like the patterns above (SQL, paths): an answer may echo them
 * (`Flow "' or 1=1; select * from runs --" is not registered`) without leaking anything.
 */
export const NASTY_STRINGS: readonly string[] = [
  "' OR '1'='1",
  "'; DROP TABLE runs; --",
  'select * from runs where 1=1',
  "1; delete from mcp_tokens where ''=''",
  'update runs set status = $1',
  'insert into runs values (1)',
  '$1',
  '%00',
  '../../../../etc/passwd',
  '/tmp/../work/main',
  '<script>alert(1)</script>',
  '{{7*7}}',
  '${process.env.PATH}',
  'at Object.<anonymous> (/work/x.ts:1:1)',
  'TypeError: x is not a function',
  'node_modules/.bin/sh',
  '\u0000',
  '\ud800',
  '\udfff',
  'a\ud83dz',
  '\u202eevil\u202c',
  '\u200b\u200c\u200d\u2060\ufeff',
  '\u0645\u0631\u062d\u0628\u0627',
  'e\u0301\u0301\u0301',
  '\u2028\u2029',
  '\\u0000',
  '\\',
  '"',
  "'",
  '%',
  '%zz',
  '\r\n',
  'NaN',
  '-0',
  '1e309',
  '9007199254740993',
  '\u{1F600}',
  '\uFFFF',
  '\u00ff\u00fe',
];

/** Every string inside a JSON value (keys too), without recursion. */
function stringsOf(value: unknown, out: string[]): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) stack.push(...v);
    else if (v && typeof v === 'object')
      for (const [k, child] of Object.entries(v)) {
        out.push(k);
        stack.push(child);
      }
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** What the request itself carried, for telling an echo from a leak. */
function requestText(req: FuzzRequest): string {
  const parts = [req.path, safeDecode(req.path), ...Object.values(req.headers ?? {})];
  if (typeof req.body === 'string') {
    parts.push(req.body);
    try {
      stringsOf(JSON.parse(req.body), parts);
    } catch {
      // not JSON: the text itself is enough
    }
  } else if (req.body instanceof Uint8Array) parts.push(new TextDecoder().decode(req.body));
  return parts.join('\n');
}

/** The leaks found in an answer (empty when none): a pattern matched by text the request did not carry. */
export function leaksIn(answer: Answer, req: FuzzRequest): string[] {
  const strings: string[] = [];
  if (answer.json !== undefined) stringsOf(answer.json, strings);
  else strings.push(answer.text);
  let sent: string | undefined;
  const found: string[] = [];
  for (const s of strings) {
    for (const [what, re] of LEAK_PATTERNS) {
      const m = re.exec(s);
      if (!m) continue;
      sent ??= requestText(req);
      const echoed = sent.includes(m[0]) || sent.includes(s) || NASTY_STRINGS.some((n) => n.includes(m[0]));
      if (!echoed) found.push(`${what}: ${JSON.stringify(s.slice(0, 300))}`);
    }
  }
  return found;
}

export interface CheckOptions {
  /** /mcp: a 4xx body may be a JSON-RPC error (`error: { code, message }`). */
  jsonRpc?: boolean;
}

const describeRequest = (req: FuzzRequest) => {
  const body =
    req.body === undefined
      ? ''
      : typeof req.body === 'string'
        ? ` body(${req.body.length} chars)=${JSON.stringify(req.body.slice(0, 200))}`
        : req.body instanceof Uint8Array
          ? ` body(${req.body.byteLength} bytes)`
          : ' body(stream)';
  return `${req.method} ${req.path.slice(0, 300)} (path ${req.path.length} chars) headers=${JSON.stringify(req.headers ?? {}).slice(0, 300)}${body}`;
};

/** Sends the request over HTTP and reads the whole answer (a 20 s time-out: a hang is a failure). */
let previous = '(none)';
/** No keep-alive: each request on a fresh connection, so no answer depends on the state a previous one left. */
const agent = new Agent({ keepAlive: false });

/**
 * Sends the request over HTTP (node:http, a fresh connection each time) and reads the whole answer; a 20 s time-out
 * and a connection closed without an answer are failures that name the request and the one before it.
 */
export async function send(baseUrl: string, req: FuzzRequest): Promise<Answer> {
  const before = previous;
  previous = describeRequest(req);
  const url = new URL(baseUrl);
  const headers: Record<string, string> = { ...req.headers };
  const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : req.body;
  if (typeof body === 'string' || body instanceof Uint8Array) headers['content-length'] = String(Buffer.byteLength(body));
  // node:http frames a stream as chunked by default only for some methods (not DELETE, OPTIONS): always say it
  else if (body instanceof ReadableStream) headers['transfer-encoding'] = 'chunked';
  let status = 0;
  let text = '';
  let resHeaders: Headers;
  try {
    ({
      status,
      text,
      headers: resHeaders,
    } = await new Promise<{ status: number; text: string; headers: Headers }>((resolve, reject) => {
      let answered = false;
      const r = httpRequest(
        { host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent, timeout: 20_000 },
        (res) => {
          answered = true;
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const h = new Headers();
            for (const [name, value] of Object.entries(res.headers)) {
              if (value !== undefined) h.set(name, Array.isArray(value) ? value.join(', ') : value);
            }
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: h });
          });
        },
      );
      r.on('timeout', () => r.destroy(new Error('no answer within 20 s')));
      // an early answer (413) may cut the upload: the error that follows it is not a failure
      r.on('error', (error) => {
        if (!answered) reject(error);
      });
      if (body instanceof ReadableStream) {
        const stream = Readable.fromWeb(body as never);
        stream.on('error', () => r.destroy());
        stream.pipe(r);
      } else r.end(body === undefined ? undefined : typeof body === 'string' ? body : Buffer.from(body));
    }));
  } catch (error) {
    throw new Error(`no answer: ${describeRequest(req)}: ${String(error)}; previous request: ${before}`);
  }
  let json: unknown;
  if (/\bjson\b/i.test(resHeaders.get('content-type') ?? '') && text !== '') {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status, headers: resHeaders, text, json };
}

/**
 * 5xx answers this suite found in code outside the fuzz suite owner's files, each with its file and input, allowed
 * (and counted in the report) until fixed; MERCATO_FUZZ_STRICT=1 refuses them like any other 5xx. Remove an entry
 * with its fix.
 */
/** 5xx answers found and not fixed yet (each with where to fix it); empty: every one found so far is fixed. */
export const KNOWN_5XX: ReadonlyArray<{ id: string; where: string; matches(req: FuzzRequest, answer: Answer): boolean }> = [];
const knownHits = new Map<string, number>();

/**
 * The properties of every answer: no 5xx (but KNOWN_5XX); no stack, path, SQL or error class in the body; a 4xx is
 * JSON with an `error` string (or, on /mcp, a JSON-RPC error object).
 */
export function checkAnswer(answer: Answer, req: FuzzRequest, options: CheckOptions = {}): void {
  const where = `${describeRequest(req)} → ${answer.status} ${answer.text.slice(0, 500)}`;
  const known = process.env.MERCATO_FUZZ_STRICT ? undefined : KNOWN_5XX.find((k) => k.matches(req, answer));
  if (known) {
    knownHits.set(known.id, (knownHits.get(known.id) ?? 0) + 1);
    expect(answer.json, `a known 5xx is still the generic JSON 500: ${where}`).toEqual({
      error: 'Internal server error',
      requestId: expect.any(String),
    });
    return;
  }
  expect(answer.status, `no 5xx: ${where}`).toBeLessThan(500);
  expect(leaksIn(answer, req), `no internal detail: ${where}`).toEqual([]);
  if (answer.status >= 400 && req.method !== 'HEAD') {
    expect(answer.json, `a ${answer.status} is JSON: ${where}`).toBeTypeOf('object');
    const error = (answer.json as { error?: unknown } | null)?.error;
    const rpcError = options.jsonRpc && typeof error === 'object' && error !== null;
    if (rpcError) {
      expect((error as { message?: unknown }).message, `JSON-RPC error message: ${where}`).toBeTypeOf('string');
      expect((error as { code?: unknown }).code, `JSON-RPC error code: ${where}`).toBeTypeOf('number');
    } else {
      expect(error, `a ${answer.status} has an error string: ${where}`).toBeTypeOf('string');
      expect((error as string).length, `a non-empty error: ${where}`).toBeGreaterThan(0);
    }
  }
}

/** Counts answers by status class, and memory from the start. */
/**
 * A full garbage collection (the flag is turned on at run time), so that the memory figures compare what is alive,
 * not garbage the collector has not reached yet.
 */
export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

export function tally() {
  const statuses: Record<string, number> = {};
  const errors = new Map<string, number>();
  collectGarbage();
  const rssStart = process.memoryUsage().rss;
  const heapStart = process.memoryUsage().heapUsed;
  const started = performance.now();
  let cases = 0;
  return {
    add(status: number, answer?: Answer) {
      cases++;
      const key = String(status);
      statuses[key] = (statuses[key] ?? 0) + 1;
      if (process.env.MERCATO_FUZZ_VERBOSE && answer && status >= 400) {
        const error = (answer.json as { error?: unknown } | undefined)?.error;
        const message = `${status} ${typeof error === 'string' ? error : JSON.stringify(error)}`.slice(0, 70);
        errors.set(message, (errors.get(message) ?? 0) + 1);
      }
    },
    get cases() {
      return cases;
    },
    finish(name: string) {
      const ms = performance.now() - started;
      collectGarbage();
      const rssGrowthMb = (process.memoryUsage().rss - rssStart) / 1e6;
      const heapGrowthMb = (process.memoryUsage().heapUsed - heapStart) / 1e6;
      report(name, { cases, ms, rssGrowthMb, heapGrowthMb, statuses });
      for (const [id, n] of knownHits)
        console.log(`  known 5xx, not fixed yet: ${n} × ${id} — ${KNOWN_5XX.find((k) => k.id === id)?.where}`);
      knownHits.clear();
      // MERCATO_FUZZ_VERBOSE=1: the most frequent refusals, to see what the generators reach
      const top = [...errors].sort((a, b) => b[1] - a[1]).slice(0, 12);
      if (top.length > 0) console.log(top.map(([m, n]) => `  ${n} × ${m}`).join('\n'));
      return { rssGrowthMb, heapGrowthMb, statuses, cases };
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Generators

/** One odd character: any code point, or one of the troublemakers (NUL, lone surrogates, RTL, zero-width, quotes). */
export const oddChar: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '\u0000',
      '\ud800',
      '\udbff',
      '\udc00',
      '\udfff',
      '\u202e',
      '\u202d',
      '\u200f',
      '\u200b',
      '\u200d',
      '\ufeff',
      '\u0301',
      '\\',
      '"',
      "'",
      '\n',
      '\u2028',
      '\u0085',
      '\x7f',
    ),
  },
);

/** Strings a hostile client would send: odd characters, SQL-looking and path-looking strings, long runs. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: oddChar, maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('a', '\\', '"', '\u0000', 'é', '['), fc.integer({ min: 100, max: 20_000 }))
      .map(([c, n]) => c.repeat(n)),
  },
);

/** Short odd strings (no long runs): for places where size is not the point, such as claims and keys. */
export const shortOddString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: oddChar, maxLength: 20 }),
  fc.constantFrom(...NASTY_STRINGS),
);

/** JSON values with odd strings and keys (including `__proto__`, `constructor`). */
export const oddJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.constantFrom(-1, 0, 2 ** 53, -(2 ** 53), 1e308, -1e-308, 2 ** 31),
    oddString,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.oneof(oddString, fc.constantFrom('__proto__', 'constructor', 'prototype', '', 'input', 'ids')), tie('value'), {
      maxKeys: 5,
    }),
  ),
})).value;

/** Small JSON values with short odd strings (claims, headers): never more than a few hundred characters. */
export const smallOddJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  shortOddString,
  fc.array(fc.oneof(shortOddString, fc.integer()), { maxLength: 3 }),
  fc.dictionary(shortOddString, fc.oneof(shortOddString, fc.integer()), { maxKeys: 3 }),
);

/** Nested JSON text `depth` levels deep, of objects, arrays or both. */
export function deepJson(depth: number, kind: 'object' | 'array' | 'mixed' = 'object', leaf = '1'): string {
  if (kind === 'object') return '{"a":'.repeat(depth) + leaf + '}'.repeat(depth);
  if (kind === 'array') return '['.repeat(depth) + leaf + ']'.repeat(depth);
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    open += i % 2 ? '[' : '{"k":';
    close = (i % 2 ? ']' : '}') + close;
  }
  return open + leaf + close;
}

/** Depths around the limit (256), and far beyond (5,000; 50,000 for arrays, well inside 1 MB). */
export const deepJsonText: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom(2, 255, 256, 257, 300, 1000, 5000, 20_000),
    fc.constantFrom('object', 'array', 'mixed') as fc.Arbitrary<'object' | 'array' | 'mixed'>,
  )
  .map(([depth, kind]) => deepJson(depth, kind));

/** Text that is not JSON, or barely: truncated, single-quoted, trailing commas, NaN, BOM, NUL, garbage. */
export const malformedJson: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '{',
    '}',
    '{"a":}',
    "{'a':1}",
    '[1,]',
    '{"a":1,}',
    'NaN',
    'undefined',
    '\ufeff{}',
    '{"a":"\u0000"}',
    '{"a"\u0000:1}',
    '{"a":1}{"b":2}',
    '"\\ud800"',
    '{"\\u0000":1}',
    '[',
    '{"a":1e999999}',
    '{"a":-}',
    'nul',
    'tru',
    '0x10',
    '//{}',
    '{"a":1}//',
  ),
  oddJson.map((v) => JSON.stringify(v) ?? 'null').map((s) => s.slice(0, Math.max(0, s.length - 1))),
  fc.string({ unit: oddChar, maxLength: 60 }),
);

/** Bytes that are not UTF-8 (overlong forms, lone continuation bytes, encoded surrogates). */
export const invalidUtf8: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.constantFrom(
    Uint8Array.from([0xc0, 0xaf]),
    Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
    Uint8Array.from([0xff, 0xfe, 0x7b, 0x7d]),
    Uint8Array.from([0x80]),
  ),
  fc.uint8Array({ maxLength: 64 }),
);

/** Content types right, wrong and broken. */
export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      undefined,
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=xyz',
      'multipart/form-data',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/xml',
      'application/octet-stream',
      '*/*',
      ';;;',
      'application/json, text/html',
    ),
  },
);

/** Query values for pagination and filters: negative, huge, fractional, non-numeric, odd. */
export const oddNumberText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '-1',
    '0',
    '1',
    '200',
    '201',
    '1e309',
    'NaN',
    'Infinity',
    '-Infinity',
    '9007199254740993',
    '-0',
    '0x10',
    '1.5',
    ' 3',
    '',
    'abc',
    '\u0663',
    '\uff11',
    '1_000',
    '+5',
    '99999999999999999999999',
  ),
  fc.integer().map(String),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
);

/**
 * Strings for URLs: short odd ones, and runs of up to 500 characters (the request line and headers together must stay
 * under Node's 16 KB header limit, above which Node itself answers 431 without a body; see the report of the suite).
 */
export const urlString: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: shortOddString },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom('a', '\\', '"', '\u0000', 'é', '['), fc.integer({ min: 100, max: 1500 }))
      .map(([c, n]) => c.repeat(n)),
  },
);

/** A path segment: the UTF-8 bytes of an odd string percent-encoded, or raw percent garbage. */
export const oddSegment: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: urlString.map(encodeSegment) },
  { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%00', '%C0%AF', '%ED%A0%80', '%FF', '..', '.', '%2e%2e', '%2F', 'a%2Fb', '%25') },
  { weight: 1, arbitrary: fc.uuid().map(String) },
);

/** Percent-encodes every byte of the UTF-8 form except unreserved characters (lone surrogates become U+FFFD). */
export function encodeSegment(s: string): string {
  let out = '';
  for (const byte of new TextEncoder().encode(s)) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_~-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out === '' ? '%20' : out;
}

/** A query string: known keys with odd values, and unknown keys; some keys repeated. */
export function queryOf(keys: readonly string[]): fc.Arbitrary<string> {
  return fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...keys), urlString), fc.oneof(oddNumberText, urlString)), { maxLength: 4 })
    .map((pairs) => {
      // at most 4,000 characters of query (pairs past that are dropped): the request stays under Node's header limit
      let query = '';
      for (const [k, v] of pairs) {
        const pair = `${encodeSegment(k)}=${encodeSegment(v)}`;
        if (query.length + pair.length > 4000) break;
        query += (query ? '&' : '?') + pair;
      }
      return query;
    });
}

/** Header-safe text (what an HTTP client can send): visible Latin-1 and tabs. */
export const headerText: fc.Arbitrary<string> = fc.string({
  unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff })).map((c) => String.fromCharCode(c)),
  maxLength: 80,
});
