/**
 * Fuzz of the session-token parser: `verifySessionToken` directly (arbitrary text, arbitrary base64url parts, and
 * tokens signed with crafted headers and claims, checked against an oracle of the rules in docs/admin-api.md), and the
 * same crafted tokens through the Authorization header of a real server (200 exactly when the oracle says valid,
 * else 401 `{ error }` with one of the documented messages).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResolvedApp } from '../../src/app/platform.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { AUTH_ERRORS } from '../../src/http/auth.ts';
import {
  MAX_SESSION_TOKEN_LENGTH,
  MAX_SESSION_TOKEN_LIFETIME_SECONDS,
  SESSION_TOKEN_ERRORS,
  SESSION_TOKEN_LEEWAY_SECONDS,
  signJwt,
  verifySessionToken,
} from '../../src/http/session-token.ts';
import { TEST_API_KEY, TEST_API_SECRET } from '../helpers/runtime.ts';
import {
  type FuzzRequest,
  type FuzzServer,
  OTHER_SHOP,
  SHOP,
  casesFor,
  checkAnswer,
  fuzzParams,
  headerText,
  smallOddJson,
  report,
  shortOddString,
  send,
  startFuzzServer,
  timeoutFor,
} from './harness.ts';

const DIRECT_CASES = casesFor(0.15);
const HTTP_CASES = casesFor(0.05);

const APP: ResolvedApp = { handle: 'default', apiKey: TEST_API_KEY, apiSecret: TEST_API_SECRET, appUrl: null };
const platform = { byApiKey: (key: string) => (key === APP.apiKey ? APP : undefined) };
const FAILURE_MESSAGES = new Set<string>(Object.values(SESSION_TOKEN_ERRORS));
const b64 = (value: string) => Buffer.from(value).toString('base64url');

/** A token signed with crafted parts, and whether the rules accept it (the oracle). */
interface Crafted {
  token: string;
  valid: boolean;
  /** The rules the token breaks (empty when valid). */
  broken: string[];
}

/**
 * Crafted tokens. Offsets from `now` stay 5 s away from the leeway's edges so a second ticking between signing and
 * verifying cannot change the answer.
 */
const crafted = (now: () => number): fc.Arbitrary<Crafted> =>
  fc
    .record({
      alg: fc.oneof(
        { weight: 8, arbitrary: fc.constant<unknown>('HS256') },
        { weight: 1, arbitrary: fc.constantFrom('none', 'NONE', 'HS512', 'RS256', 'hs256', '') },
        { weight: 1, arbitrary: smallOddJson },
      ),
      typ: fc.constantFrom<unknown>('JWT', undefined, 'jwt'),
      kid: fc.oneof(fc.constant<unknown>(undefined), shortOddString),
      aud: fc.oneof(
        { weight: 8, arbitrary: fc.constant<unknown>(TEST_API_KEY) },
        { weight: 1, arbitrary: fc.constantFrom('other-key', '', [TEST_API_KEY]) },
        { weight: 1, arbitrary: smallOddJson },
      ),
      issShop: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom(SHOP, OTHER_SHOP) },
        { weight: 1, arbitrary: fc.constantFrom('evil.example.com', '', SHOP.toUpperCase()) },
        { weight: 1, arbitrary: shortOddString },
      ),
      destShop: fc.oneof(
        { weight: 8, arbitrary: fc.constant<string | null>(null) },
        { weight: 1, arbitrary: fc.constantFrom(OTHER_SHOP, 'evil.example.com') },
        { weight: 1, arbitrary: shortOddString },
      ),
      issForm: fc.constantFrom('admin', 'admin', 'admin', 'bare', 'http', 'path'),
      exp: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom(60, 3600, -5, -15, -3600).map((d): unknown => ({ offset: d })) },
        { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, '9999999999', null) },
        { weight: 1, arbitrary: smallOddJson },
      ),
      nbf: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom(0, -60, 5, 15, 3600).map((d): unknown => ({ offset: d })) },
        { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, '0', null) },
        { weight: 1, arbitrary: smallOddJson },
      ),
      iat: fc.oneof(
        { weight: 6, arbitrary: fc.constant<unknown>({ offset: 0 }) },
        { weight: 2, arbitrary: fc.constant<unknown>(undefined) },
        { weight: 1, arbitrary: smallOddJson },
      ),
      extra: fc.dictionary(shortOddString, fc.oneof(shortOddString, fc.integer(), fc.constant(null)), { maxKeys: 3 }),
      secret: fc.oneof(
        { weight: 8, arbitrary: fc.constant(TEST_API_SECRET) },
        { weight: 1, arbitrary: fc.constantFrom('wrong-secret', '') },
      ),
      mutation: fc.oneof(
        { weight: 8, arbitrary: fc.constant<string>('none') },
        { weight: 1, arbitrary: fc.constantFrom('flip-signature', 'drop-signature', 'append', 'swap-payload', 'padding', 'oversize') },
      ),
    })
    .map((c) => {
      const t = Math.floor(now());
      const time = (v: unknown) => (v && typeof v === 'object' && 'offset' in v ? t + (v as { offset: number }).offset : v);
      const dest = c.destShop ?? c.issShop;
      const iss =
        c.issForm === 'admin'
          ? `https://${c.issShop}/admin`
          : c.issForm === 'bare'
            ? `https://${c.issShop}`
            : c.issForm === 'http'
              ? `http://${c.issShop}/admin`
              : `https://${c.issShop}/admin/x`;
      const header: Record<string, unknown> = { alg: c.alg };
      if (c.typ !== undefined) header.typ = c.typ;
      if (c.kid !== undefined) header.kid = c.kid;
      const payload: Record<string, unknown> = { ...c.extra, iss, dest: `https://${dest}`, aud: c.aud };
      // over MAX_SESSION_TOKEN_LENGTH once encoded (still under the HTTP server's header limit)
      if (c.mutation === 'oversize') payload.pad = 'p'.repeat(MAX_SESSION_TOKEN_LENGTH);
      for (const [claim, value] of [
        ['exp', c.exp],
        ['nbf', c.nbf],
        ['iat', c.iat],
      ] as const) {
        if (value !== undefined) payload[claim] = time(value);
        else delete payload[claim];
      }
      let token = signJwt(header, payload, c.secret);
      const [h, p, s] = token.split('.') as [string, string, string];
      if (c.mutation === 'flip-signature') token = `${h}.${p}.${s.slice(0, -2)}${s.at(-2) === 'A' ? 'B' : 'A'}${s.at(-1)}`;
      if (c.mutation === 'drop-signature') token = `${h}.${p}.`;
      if (c.mutation === 'append') token = `${token}.x`;
      if (c.mutation === 'swap-payload') token = `${h}.${b64(JSON.stringify({ ...payload, tampered: true }))}.${s}`;
      if (c.mutation === 'padding') token = `${token}==`;

      const exp = payload.exp;
      const nbf = payload.nbf;
      const iat = payload.iat;
      // the host of iss and dest, lower-cased, is a shop domain (<name>.myshopify.com), the same in both
      const isShop = (s: string) => /^[a-z0-9][a-z0-9-]{0,59}\.myshopify\.com$/.test(s.toLowerCase());
      const rules: Array<[string, boolean]> = [
        ['alg HS256', c.alg === 'HS256'],
        ['aud is the API key', c.aud === TEST_API_KEY],
        ['signed with the secret', c.secret === TEST_API_SECRET],
        ['untouched', c.mutation === 'none'],
        ['short enough', token.length <= MAX_SESSION_TOKEN_LENGTH],
        ['exp a number within the leeway', typeof exp === 'number' && exp > t - SESSION_TOKEN_LEEWAY_SECONDS],
        ['nbf a number within the leeway', typeof nbf === 'number' && nbf <= t + SESSION_TOKEN_LEEWAY_SECONDS],
        ['iat absent or a number', iat === undefined || typeof iat === 'number'],
        // exp − iat (or − now when iat is missing, not a number, or later) at most the bound
        [
          'a lifetime within the bound',
          typeof exp === 'number' &&
            exp - Math.min(typeof iat === 'number' && Number.isFinite(iat) ? iat : t, t) <= MAX_SESSION_TOKEN_LIFETIME_SECONDS,
        ],
        ['iss https://<shop>/admin', c.issForm === 'admin' && isShop(c.issShop)],
        ['dest the same shop', dest.toLowerCase() === c.issShop.toLowerCase()],
      ];
      const broken = rules.filter(([, ok]) => !ok).map(([rule]) => rule);
      return { token, valid: broken.length === 0, broken };
    });

/** Text that is only shaped like a token: any characters, or three base64url parts of odd JSON. */
const shapedLikeToken = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 100 }),
  fc
    .tuple(smallOddJson, smallOddJson, fc.string({ maxLength: 50 }))
    .map(([h, p, s]) => `${b64(JSON.stringify(h) ?? '')}.${b64(JSON.stringify(p) ?? '')}.${b64(s)}`),
  fc.constantFrom('a.b.c', '..', '.', 'x'.repeat(9000), `${'a'.repeat(8192)}`, 'eyJhbGciOiJIUzI1NiJ9..'),
);

describe('fuzz: verifySessionToken directly', () => {
  it(
    `${DIRECT_CASES} tokens: never throws, accepts exactly what the rules accept, every refusal a documented reason`,
    async () => {
      const started = performance.now();
      let cases = 0;
      const now = () => Date.now() / 1000;
      const check = async (token: string, valid: boolean, broken: string[]) => {
        cases++;
        const result = await verifySessionToken(token, platform, now());
        expect(
          result.ok,
          `${token.slice(0, 300)} (oracle: ${valid ? 'valid' : `breaks ${broken.join(', ')}`}) → ${JSON.stringify(result).slice(0, 300)}`,
        ).toBe(valid);
        if (!result.ok) expect(FAILURE_MESSAGES.has(result.error)).toBe(true);
        else expect(result.tenant.shop).toBe(result.claims.dest.slice('https://'.length).toLowerCase());
      };
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            { weight: 3, arbitrary: crafted(now) },
            { weight: 1, arbitrary: shapedLikeToken.map((token) => ({ token, valid: false, broken: ['not a token'] })) },
          ),
          (c) => check(c.token, c.valid, c.broken),
        ),
        fuzzParams(DIRECT_CASES),
      );
      report('session tokens (verifySessionToken)', { cases, ms: performance.now() - started });
    },
    timeoutFor(DIRECT_CASES, 10),
  );
});

describeEngines('fuzz: session tokens through the Authorization header', (get) => {
  let server: FuzzServer;

  beforeAll(async () => {
    server = await startFuzzServer(get().db);
  });
  afterAll(async () => {
    await server?.close();
  });

  it(
    `${HTTP_CASES} Authorization headers on GET /api/home: 200 exactly for a valid token, else 401 { error } with a documented message`,
    async () => {
      const started = performance.now();
      let cases = 0;
      const known = new Set<string>([...FAILURE_MESSAGES, ...Object.values(AUTH_ERRORS)]);
      const header = fc.oneof(
        {
          weight: 4,
          arbitrary: crafted(() => Date.now() / 1000).map((c) => ({ value: `Bearer ${c.token}`, valid: c.valid, broken: c.broken })),
        },
        {
          weight: 1,
          arbitrary: crafted(() => Date.now() / 1000).map((c) => ({ value: `bearer   ${c.token}  `, valid: c.valid, broken: c.broken })),
        },
        { weight: 1, arbitrary: headerText.map((value) => ({ value, valid: false, broken: ['not a bearer token'] })) },
        {
          weight: 1,
          arbitrary: fc
            .constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', `Token ${'a'.repeat(10)}`, 'Bearer a b')
            .map((value) => ({ value, valid: false, broken: ['not a bearer token'] })),
        },
      );
      await fc.assert(
        fc.asyncProperty(header, async ({ value, valid, broken }) => {
          cases++;
          const req: FuzzRequest = { method: 'GET', path: '/api/home', headers: { authorization: value } };
          const answer = await send(server.url, req);
          checkAnswer(answer, req);
          expect(answer.status, `${value.slice(0, 300)} (oracle: ${broken.join(', ') || 'valid'}) → ${answer.text.slice(0, 200)}`).toBe(
            valid ? 200 : 401,
          );
          if (!valid) {
            expect(known.has((answer.json as { error: string }).error), answer.text).toBe(true);
            expect(answer.headers.get('x-shopify-retry-invalid-session-request')).toBe('1');
          }
        }),
        fuzzParams(HTTP_CASES),
      );
      report(`session tokens (Authorization header) [${get().kind}]`, { cases, ms: performance.now() - started });
    },
    timeoutFor(HTTP_CASES, 60),
  );
});
