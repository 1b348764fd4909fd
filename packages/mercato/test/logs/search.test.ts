/** Every construct of the query language against real rows in the database, through the SQL the search runs. */
import { sql } from 'drizzle-orm';
import { beforeAll, expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { InvalidInputError, NotFoundError } from '../../src/errors.ts';
import { parseQuery } from '../../src/logs/query.ts';
import { LOG_COUNT_CAP, type LogSearchParams, searchLogs, withLogQuery } from '../../src/logs/search.ts';
import { LINES, insertLines, insertManyLines, insertRun } from './fixture.ts';
import { SHOP } from '../kit/index.ts';

const tenant = { appHandle: 'default', shop: SHOP };

describeEngines('log search SQL', (get) => {
  let runId: string;
  let ids: number[];
  /** Line numbers (1-based, as in LINES) of the matches, newest first. */
  const find = async (q: string, extra: Partial<LogSearchParams> = {}) => {
    const result = await searchLogs(get().db, tenant, runId, {
      query: parseQuery(q),
      levels: ['info', 'warn', 'error'],
      limit: 200,
      offset: 0,
      ...extra,
    });
    return result.logs.filter((l) => !l.context).map((l) => ids.indexOf(l.id) + 1);
  };

  beforeAll(async () => {
    const db = get().db;
    runId = await insertRun(db, SHOP);
    ids = await insertLines(db, runId, SHOP, LINES);
    // Same text in another run of the same tenant and in a run of another tenant: never found.
    const otherRun = await insertRun(db, SHOP);
    await insertLines(db, otherRun, SHOP, [{ level: 'error', message: 'Payment failed elsewhere', data: { orderId: 1001 } }]);
    const foreignRun = await insertRun(db, 'shop-two.myshopify.com');
    await insertLines(db, foreignRun, 'shop-two.myshopify.com', [
      { level: 'error', message: 'Payment failed foreign', data: { orderId: 1001 } },
    ]);
  });

  it('no query: every line of the run, newest first', async () => {
    expect(await find('')).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1]);
  });

  it('free text is a case-insensitive substring of the message; % _ \\ are literal', async () => {
    expect(await find('payment')).toEqual([8, 4]);
    expect(await find('PAYMENT failed')).toEqual([8, 4]);
    expect(await find('50%_')).toEqual([5]);
    expect(await find('0%x')).toEqual([]);
    expect(await find('_done')).toEqual([5]);
    expect(await find('nothing-like-this')).toEqual([]);
  });

  it('quoted phrases match as a whole, operators and keywords inside quotes are text', async () => {
    expect(await find('"failed for order"')).toEqual([4]);
    expect(await find('"failed order"')).toEqual([]);
    expect(await find('"C:3"')).toEqual([9]);
    expect(await find('"(a/b)"')).toEqual([9]);
    expect(await find('"\\"quoted\\""')).toEqual([9]);
  });

  it('exclusion of words, phrases, fields and groups', async () => {
    expect(await find('payment -again')).toEqual([4]);
    expect(await find('-"failed for order" payment')).toEqual([8]);
    expect(await find('-level:info')).toEqual([8, 6, 4, 3]);
    expect(await find('-step:charge -step:fetch')).toEqual([9, 7, 6, 1]); // lines without a step are included
    expect(await find('-(level:info OR level:warn)')).toEqual([8, 4]);
    expect(await find('NOT ms')).toEqual([9, 8, 7, 5, 4, 2, 1]);
  });

  it('OR and parentheses', async () => {
    expect(await find('timeout OR slow')).toEqual([6, 3]);
    expect(await find('level:error OR step:fetch level:info')).toEqual([8, 4, 2]);
    expect(await find('(level:error OR step:fetch) level:info')).toEqual([2]);
  });

  it('regular expressions: case-sensitive by default, /i case-insensitive, combined with other terms', async () => {
    expect(await find('/\\d{4}ms/')).toEqual([6, 3]);
    expect(await find('/^Payment/')).toEqual([4]);
    expect(await find('/^payment/i')).toEqual([8, 4]);
    expect(await find('/(slow|timeout)/i level:warn -/3000/')).toEqual([3]);
    expect(await find('/a\\/b/')).toEqual([9]);
  });

  it('level field with comparisons', async () => {
    expect(await find('level:warn')).toEqual([6, 3]);
    expect(await find('level:>=warn')).toEqual([8, 6, 4, 3]);
    expect(await find('level:>warn')).toEqual([8, 4]);
    expect(await find('level:<warn')).toEqual([9, 7, 5, 2, 1]);
    expect(await find('level:<info')).toEqual([]);
    expect(await find('level>=warn')).toEqual([8, 6, 4, 3]);
    expect(await find('level!=info')).toEqual([8, 6, 4, 3]);
  });

  it('step field: exact, quoted, prefix with *', async () => {
    expect(await find('step:fetch')).toEqual([3, 2]);
    expect(await find('step:push:*')).toEqual([7, 6]);
    expect(await find('step:push')).toEqual([]);
    expect(await find('step:"push:2"')).toEqual([7]);
    expect(await find('step=fetch')).toEqual([3, 2]);
    expect(await find('step!=charge')).toEqual([9, 7, 6, 3, 2, 1]);
  });

  it('attempt field with comparisons', async () => {
    expect(await find('attempt:2')).toEqual([8, 7, 6, 5]);
    expect(await find('attempt:>2')).toEqual([9]);
    expect(await find('attempt:<=1')).toEqual([4, 3, 2, 1]);
    expect(await find('attempt>=2 attempt!=3')).toEqual([8, 7, 6, 5]);
  });

  it('data keys: numbers match numbers and numeric strings, quoted values only strings', async () => {
    expect(await find('orderId=1001')).toEqual([8, 4, 1]);
    expect(await find('orderId=1002')).toEqual([3]); // stored as the string "1002"
    expect(await find('orderId="1001"')).toEqual([]);
    expect(await find('orderId="1002"')).toEqual([3]);
    expect(await find('data.orderId=1001.0')).toEqual([8, 4, 1]); // numeric equality
  });

  it('data keys: nested paths, array indexes, strings, booleans, null', async () => {
    expect(await find('data.customer.id=42')).toEqual([8, 1]);
    expect(await find('customer.name="Jane Doe"')).toEqual([1]);
    expect(await find('items.0.sku=AB-1')).toEqual([1]);
    expect(await find('items.1.sku=AB-1')).toEqual([]);
    expect(await find('reason=card_declined')).toEqual([4]);
    expect(await find('paid=true')).toEqual([9, 1]); // boolean true and the string "true"
    expect(await find('coupon=null')).toEqual([4]);
  });

  it('data keys: != includes lines without the key; > >= < <= compare numbers, or strings for a string value', async () => {
    expect(await find('orderId!=1001')).toEqual([9, 7, 6, 5, 3, 2]);
    expect(await find('total>50')).toEqual([9, 1]);
    expect(await find('total>=99.5')).toEqual([9, 1]);
    expect(await find('total<100')).toEqual([5, 1]);
    expect(await find('total<=10')).toEqual([5]);
    expect(await find('ms>2000 level:warn')).toEqual([6]);
    expect(await find('when>2026-11-01')).toEqual([5]); // ISO dates compare as strings
    expect(await find('when<2026-11-01')).toEqual([9]);
    expect(await find('-total>50')).toEqual([8, 7, 6, 5, 4, 3, 2]);
  });

  it('time bounds: from:/to: (inclusive) and last:', async () => {
    expect(await find('from:2026-11-01T00:07:00Z')).toEqual([9, 8]);
    expect(await find('to:2026-11-01T00:01:00Z')).toEqual([2, 1]);
    expect(await find('from:2026-11-01T00:02:00 to:2026-11-01T00:03:00Z')).toEqual([4, 3]);
    expect(await find('from:2026-11-01T02:05:00+02:00 to:2026-11-01T00:05:00Z')).toEqual([6]);
    expect(await find('last:15m')).toEqual([]);
    const db = get().db;
    const recent = await insertRun(db, SHOP);
    await insertLines(db, recent, SHOP, [
      { level: 'info', message: 'an hour ago', at: new Date(Date.now() - 3_600_000).toISOString() },
      { level: 'info', message: 'just now' },
    ]);
    const r = await searchLogs(db, tenant, recent, { query: parseQuery('last:15m'), levels: ['info'], limit: 10, offset: 0 });
    expect(r.logs.map((l) => l.message)).toEqual(['just now']);
    const r2 = await searchLogs(db, tenant, recent, { query: parseQuery('last:2h'), levels: ['info'], limit: 10, offset: 0 });
    expect(r2.logs.map((l) => l.message)).toEqual(['just now', 'an hour ago']);
  });

  it('levels restrict the matches and combine with the query', async () => {
    expect(await find('', { levels: ['warn'] })).toEqual([6, 3]);
    expect(await find('payment', { levels: ['info', 'warn'] })).toEqual([]);
    expect(await find('orderId=1001', { levels: ['info', 'error'] })).toEqual([8, 4, 1]);
  });

  it('context lines: B/A/C around each match, marked with the matches they surround, in the same run only', async () => {
    const r = await searchLogs(get().db, tenant, runId, {
      query: parseQuery('timeout C:1'),
      levels: ['info', 'warn', 'error'],
      limit: 50,
      offset: 0,
    });
    expect(r.total).toBe(1);
    expect(r.logs.map((l) => [ids.indexOf(l.id) + 1, l.context, l.contextOf])).toEqual([
      [7, true, [ids[5]]],
      [6, false, undefined],
      [5, true, [ids[5]]],
    ]);
    // Two matches sharing a neighbour: the neighbour is listed once, with both matches; a match is never context.
    const r2 = await searchLogs(get().db, tenant, runId, {
      query: parseQuery('level:warn B:3 A:0'),
      levels: ['info', 'warn', 'error'],
      limit: 50,
      offset: 0,
    });
    expect(r2.logs.map((l) => [ids.indexOf(l.id) + 1, l.context, l.contextOf?.map((id) => ids.indexOf(id) + 1)])).toEqual([
      [6, false, undefined],
      [5, true, [6]],
      [4, true, [6]],
      [3, false, undefined],
      [2, true, [3]],
      [1, true, [3]],
    ]);
    // At the ends of the run there is simply less context; the other runs' lines never appear.
    const r3 = await searchLogs(get().db, tenant, runId, {
      query: parseQuery('starting A:0 B:5'),
      levels: ['info', 'warn', 'error'],
      limit: 50,
      offset: 0,
    });
    expect(r3.logs.map((l) => l.message)).toEqual(['Starting sync']);
    // Context ignores `levels` and the query: it shows the neighbours as they are.
    const r4 = await searchLogs(get().db, tenant, runId, { query: parseQuery('A:1 "Done C"'), levels: ['info'], limit: 50, offset: 0 });
    expect(r4.logs.map((l) => [ids.indexOf(l.id) + 1, l.context])).toEqual([[9, false]]);
    const r5 = await searchLogs(get().db, tenant, runId, {
      query: parseQuery('B:1 "PAYMENT FAILED again"'),
      levels: ['error'],
      limit: 50,
      offset: 0,
    });
    expect(r5.logs.map((l) => [ids.indexOf(l.id) + 1, l.context, l.level])).toEqual([
      [8, false, 'error'],
      [7, true, 'info'],
    ]);
  });

  it('a run of another tenant (or an unknown or malformed id) is not found, whatever its lines', async () => {
    const q = { query: parseQuery(''), levels: ['info', 'warn', 'error'] as const, limit: 10, offset: 0 };
    await expect(searchLogs(get().db, { appHandle: 'default', shop: 'shop-two.myshopify.com' }, runId, q)).rejects.toThrow(NotFoundError);
    await expect(searchLogs(get().db, { appHandle: 'other-app', shop: SHOP }, runId, q)).rejects.toThrow(NotFoundError);
    await expect(searchLogs(get().db, tenant, '00000000-0000-4000-8000-000000000000', q)).rejects.toThrow(NotFoundError);
    await expect(searchLogs(get().db, tenant, 'nope', q)).rejects.toThrow(NotFoundError);
  });

  it('log statements run under a statement timeout (PostgreSQL; PGlite cannot interrupt a statement)', async () => {
    const db = get().db;
    const [{ t }] = await withLogQuery(db, null, (exec) => exec<{ t: string }>(sql`select current_setting('statement_timeout') as t`));
    expect(t).toBe('5s');
    if (get().kind === 'postgres') {
      const slow = withLogQuery(db, null, (exec) => exec(sql`select pg_sleep(2)`), 100);
      await expect(slow).rejects.toThrow(InvalidInputError);
      await expect(slow).rejects.toThrow(/took longer than 100 ms/);
    }
    // SET LOCAL ends with the transaction: the session's own setting is untouched.
    const [{ t: after }] = await db.query<{ t: string }>(sql`select current_setting('statement_timeout') as t`);
    expect(after).toBe('0');
  });

  it('rows carry id, level, message, data, step, attempt, createdAt and the context marker', async () => {
    const r = await searchLogs(get().db, tenant, runId, {
      query: parseQuery('reason=card_declined'),
      levels: ['error'],
      limit: 50,
      offset: 0,
    });
    expect(r).toEqual({
      logs: [
        {
          id: ids[3],
          level: 'error',
          message: 'Payment failed for order 1001',
          data: { orderId: 1001, reason: 'card_declined', coupon: null },
          step: 'charge',
          attempt: 1,
          createdAt: '2026-11-01T00:03:00+00:00',
          context: false,
        },
      ],
      total: 1,
      totalExact: true,
      limit: 50,
      offset: 0,
      nextBefore: null,
    });
  });

  it(`counts every match exactly up to ${LOG_COUNT_CAP}, then reports the cap with totalExact false`, async () => {
    const db = get().db;
    const big = await insertRun(db, SHOP);
    await insertManyLines(db, big, SHOP, LOG_COUNT_CAP + 30);
    const all = await searchLogs(db, tenant, big, { query: parseQuery(''), levels: ['info', 'warn', 'error'], limit: 5, offset: 0 });
    expect(all).toMatchObject({ total: LOG_COUNT_CAP, totalExact: false });
    expect(all.logs.map((l) => l.message)).toEqual(['line 10030', 'line 10029', 'line 10028', 'line 10027', 'line 10026']);
    // Paging when the matches outnumber the cap (the page is then read along the index, not from the counted set).
    const next = await searchLogs(db, tenant, big, {
      query: parseQuery(''),
      levels: ['info', 'warn', 'error'],
      limit: 3,
      offset: 0,
      before: all.nextBefore!,
    });
    expect(next.logs.map((l) => l.message)).toEqual(['line 10025', 'line 10024', 'line 10023']);
    const deep = await searchLogs(db, tenant, big, {
      query: parseQuery('line'),
      levels: ['info', 'warn', 'error'],
      limit: 2,
      offset: 10_020,
    });
    expect(deep.logs.map((l) => l.message)).toEqual(['line 10', 'line 9']);
    const some = await searchLogs(db, tenant, big, {
      query: parseQuery('step:step-3'),
      levels: ['info', 'warn', 'error'],
      limit: 5,
      offset: 0,
    });
    expect(some).toMatchObject({ total: 1003, totalExact: true });
    const [{ n }] = await db.query<{ n: number }>(sql`select count(*)::int as n from logs where run_id = ${big}::uuid and step = 'step-3'`);
    expect(n).toBe(1003);
  });
});
