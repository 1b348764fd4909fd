/** GET /api/runs/:id/logs and /logs/export over real HTTP: parameters, errors, paging, context, CSV, streaming, isolation. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineApp } from '../../src/app/app.ts';
import { describeEngines } from '../../src/db/testing.ts';
import { FAST_WORKER, OTHER_SHOP, SHOP, type TestRuntime, startTestRuntime, waitForRun } from '../helpers/runtime.ts';
import { insertLines, insertManyLines, insertRun } from './fixture.ts';
import { json } from '../kit/index.ts';

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    chatty: app.defineFlow({
      name: 'chatty',
      input: z.object({}),
      run: async (ctx) => {
        await ctx.log.info('starting', { orderId: 7 });
        await ctx.step('fetch', async () => {
          await ctx.log.warn('slow upstream', { ms: 1200 });
        });
        await ctx.log.error('giving up on order 7', { orderId: 7 });
        return 'ok';
      },
    }),
  },
  worker: FAST_WORKER,
});

/** RFC 4180 reader (quoted fields with doubled quotes, CRLF rows). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += ch;
  }
  if (cell !== '' || row.length > 0) throw new Error('CSV does not end with CRLF');
  return rows;
}

describeEngines('logs API', (get) => {
  let t: TestRuntime;
  let runId: string;
  let ids: number[];
  const logs = (id: string, query = '', shop?: string) => t.api(`/api/runs/${id}/logs${query}`, { shop }).then(json);

  beforeAll(async () => {
    t = await startTestRuntime(instance, get().db, { worker: true, http: true });
    runId = await insertRun(get().db, SHOP);
    ids = await insertLines(
      get().db,
      runId,
      SHOP,
      Array.from({ length: 120 }, (_, i) => ({
        level: (['info', 'warn', 'error'] as const)[i % 3],
        message: `line ${i + 1}`,
        data: { n: i + 1 },
        step: `s${i % 4}`,
      })),
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lines written by ctx.log come back newest first with level, data, step and attempt', async () => {
    const { body: started } = await t.api('/api/flows/chatty/run', { method: 'POST', json: { input: {} } }).then(json);
    await waitForRun(get().db, started.runId);
    const { status, body } = await logs(started.runId);
    expect(status).toBe(200);
    expect(body.total).toBe(3);
    expect(body.logs.map((l: any) => [l.level, l.message, l.data, l.step, l.attempt, l.context])).toEqual([
      ['error', 'giving up on order 7', { orderId: 7 }, null, 1, false],
      ['warn', 'slow upstream', { ms: 1200 }, 'fetch', 1, false],
      ['info', 'starting', { orderId: 7 }, null, 1, false],
    ]);
    expect(Date.parse(body.logs[0].createdAt)).toBeGreaterThan(Date.now() - 60_000);
    expect((await logs(started.runId, '?q=orderId%3D7%20level%3Aerror')).body.logs.map((l: any) => l.message)).toEqual([
      'giving up on order 7',
    ]);
  });

  it('pages with limit/offset and with the before cursor; total counts every match and ignores paging', async () => {
    const first = await logs(runId, '?limit=50');
    expect(first.body).toMatchObject({ total: 120, totalExact: true, limit: 50, offset: 0, nextBefore: ids[70] });
    expect(first.body.logs.map((l: any) => l.message)).toEqual(Array.from({ length: 50 }, (_, i) => `line ${120 - i}`));
    const second = await logs(runId, `?limit=50&before=${first.body.nextBefore}`);
    expect(second.body.logs[0].message).toBe('line 70');
    expect(second.body.total).toBe(120);
    const third = await logs(runId, `?limit=50&before=${second.body.nextBefore}`);
    expect(third.body.logs.map((l: any) => l.message).slice(-2)).toEqual(['line 2', 'line 1']);
    expect(third.body).toMatchObject({ nextBefore: null });
    expect(third.body.logs).toHaveLength(20);
    const byOffset = await logs(runId, '?limit=50&offset=100');
    expect(byOffset.body.logs.map((l: any) => l.message)).toEqual(third.body.logs.map((l: any) => l.message));
    expect((await logs(runId)).body.logs).toHaveLength(50); // default limit
    expect((await logs(runId, '?limit=200')).body.logs).toHaveLength(120);
    const filtered = await logs(runId, `?q=${encodeURIComponent('step:s1')}&levels=warn&limit=3`);
    expect(filtered.body.total).toBe(10); // s1 and warn: i % 4 == 1 and i % 3 == 1 → i ≡ 1 (mod 12)
    expect(filtered.body.logs.map((l: any) => l.message)).toEqual(['line 110', 'line 98', 'line 86']);
  });

  it('levels is a comma-separated subset of info,warn,error (default all); anything else is 400', async () => {
    expect((await logs(runId, '?levels=error&limit=200')).body.total).toBe(40);
    expect((await logs(runId, '?levels=warn,error&limit=200')).body.logs.every((l: any) => l.level !== 'info')).toBe(true);
    expect((await logs(runId, '?levels=info,warn,error')).body.total).toBe(120);
    expect((await logs(runId, '?levels=%20warn%20,info')).body.total).toBe(80);
    for (const bad of ['debug', 'info,', '', 'INFO', 'info;warn']) {
      const r = await logs(runId, `?levels=${encodeURIComponent(bad)}`);
      expect(r, bad).toMatchObject({ status: 400, body: { field: 'levels' } });
    }
  });

  it('limit, offset and before are validated; unknown parameters are 400 naming them', async () => {
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['offset=-1', 'offset'],
      ['offset=x', 'offset'],
      ['before=0', 'before'],
      ['before=abc', 'before'],
      ['search=x', 'search'],
      ['format=csv', 'format'],
    ]) {
      const r = await logs(runId, `?${query}`);
      expect(r, query).toMatchObject({ status: 400, body: { field } });
      expect(r.body.error).toMatch(new RegExp(`^${field}`));
    }
  });

  it('a query that does not parse is 400 with the position and reason', async () => {
    const r = await logs(runId, `?q=${encodeURIComponent('line (a OR')}`);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ field: 'q', position: 8, reason: 'OR needs a term on each side' });
    expect(r.body.error).toMatch(/position 8/);
    const badLevel = await logs(runId, `?q=${encodeURIComponent('x level:fatal')}`);
    expect(badLevel.body).toMatchObject({ position: 8, reason: 'level: must be info, warn or error' });
  });

  it('an invalid regular expression is 400 at its position, checked by the database before searching', async () => {
    const r = await logs(runId, `?q=${encodeURIComponent('line /(unclosed/')}`);
    expect(r).toMatchObject({ status: 400, body: { field: 'q', position: 5 } });
    expect(r.body.reason).toMatch(/^invalid regular expression: .*parenthes/);
    expect(r.body.reason).not.toMatch(/invalid regular expression.*invalid regular expression/); // said once
    const r2 = await logs(runId, `?q=${encodeURIComponent('/ok/ -/[z-a]/')}`);
    expect(r2).toMatchObject({ status: 400, body: { position: 6 } });
    const ok = await logs(runId, `?q=${encodeURIComponent('/^line 1[0-9]$/')}`);
    expect(ok.body.total).toBe(10);
  });

  it('context lines carry context: true and the ids of the matches they surround; total counts matches only', async () => {
    const r = await logs(runId, `?q=${encodeURIComponent('"line 60" C:2')}`);
    expect(r.body.total).toBe(1);
    expect(r.body.logs.map((l: any) => [l.message, l.context, l.contextOf ?? null])).toEqual([
      ['line 62', true, [ids[59]]],
      ['line 61', true, [ids[59]]],
      ['line 60', false, null],
      ['line 59', true, [ids[59]]],
      ['line 58', true, [ids[59]]],
    ]);
    const onlyAfter = await logs(runId, `?q=${encodeURIComponent('"line 60" A:1')}`);
    expect(onlyAfter.body.logs.map((l: any) => l.message)).toEqual(['line 61', 'line 60']);
    const paged = await logs(runId, `?limit=2&q=${encodeURIComponent('level:error B:1')}`);
    expect(paged.body.total).toBe(40);
    expect(paged.body.logs.filter((l: any) => !l.context)).toHaveLength(2);
    expect(paged.body.logs.map((l: any) => l.message)).toEqual(['line 120', 'line 119', 'line 117', 'line 116']);
  });

  it("another tenant's run, an unknown id and a malformed id are 404 on search and export", async () => {
    const foreign = await insertRun(get().db, OTHER_SHOP);
    await insertLines(get().db, foreign, OTHER_SHOP, [{ level: 'info', message: 'secret' }]);
    for (const path of [`/api/runs/${runId}/logs`, `/api/runs/${runId}/logs/export`]) {
      expect((await t.api(path, { shop: OTHER_SHOP })).status).toBe(404);
    }
    for (const id of [foreign, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      for (const path of [`/api/runs/${id}/logs`, `/api/runs/${id}/logs/export?format=csv`]) {
        const r = await t.api(path);
        expect(r.status, path).toBe(404);
        expect(await r.json()).toEqual({ error: 'Run not found' });
      }
    }
    expect((await logs(foreign, '', OTHER_SHOP)).body.logs.map((l: any) => l.message)).toEqual(['secret']);
  });

  it('CSV export: documented columns, RFC 4180 quoting, formula neutralising, attachment filename', async () => {
    const run = await insertRun(get().db, SHOP);
    const tricky = ['plain', 'a, b', 'say "hi"', 'two\nlines', 'cr\r\nlf', '=SUM(A1:A2)', '+1', '-2', '@cmd', ' =not first'];
    const lineIds = await insertLines(
      get().db,
      run,
      SHOP,
      tricky.map((message, i) => ({
        level: 'info' as const,
        message,
        data: i === 1 ? { note: 'x,"y"' } : undefined,
        step: i === 2 ? '=step' : null,
        attempt: 2,
      })),
    );
    const res = await t.api(`/api/runs/${run}/logs/export?format=csv`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="run-${run}-logs.csv"`);
    const rows = parseCsv(await res.text());
    expect(rows[0]).toEqual(['id', 'createdAt', 'level', 'step', 'attempt', 'message', 'data']);
    expect(rows.slice(1).map((r) => r[5])).toEqual([
      'plain',
      'a, b',
      'say "hi"',
      'two\nlines',
      'cr\r\nlf',
      "'=SUM(A1:A2)",
      "'+1",
      "'-2",
      "'@cmd",
      ' =not first',
    ]);
    expect(rows[1]).toEqual([String(lineIds[0]), expect.stringMatching(/^\d{4}-\d\d-\d\dT/), 'info', '', '2', 'plain', '']);
    expect(rows[2][6]).toBe('{"note":"x,\\"y\\""}');
    expect(rows[3][3]).toBe("'=step");
    expect(rows.every((r) => r.length === 7)).toBe(true);
  });

  it('JSON export (any other format): an array of matching lines oldest first, no context, levels and q applied', async () => {
    const res = await t.api(`/api/runs/${runId}/logs/export?format=xml&levels=error&q=${encodeURIComponent('step:s3 C:5')}`);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="run-${runId}-logs.json"`);
    const body = (await res.json()) as any[];
    // error: i % 3 == 2; s3: i % 4 == 3 → i ≡ 11 (mod 12) → lines 12, 24, …, 120
    expect(body.map((l) => l.message)).toEqual(Array.from({ length: 10 }, (_, k) => `line ${12 * (k + 1)}`));
    expect(Object.keys(body[0])).toEqual(['id', 'createdAt', 'level', 'step', 'attempt', 'message', 'data']);
    expect(body[0]).toMatchObject({ id: ids[11], level: 'error', step: 's3', attempt: 1, data: { n: 12 } });
    const noFormat = await t.api(`/api/runs/${runId}/logs/export?q=nomatch`);
    expect(noFormat.headers.get('content-disposition')).toMatch(/\.json"$/);
    expect(await noFormat.json()).toEqual([]);
    const emptyCsv = await t.api(`/api/runs/${runId}/logs/export?format=csv&q=nomatch`);
    expect(await emptyCsv.text()).toBe('id,createdAt,level,step,attempt,message,data\r\n');
  });

  it('export validates its parameters before the download starts', async () => {
    expect(await t.api(`/api/runs/${runId}/logs/export?levels=debug`).then(json)).toMatchObject({ status: 400, body: { field: 'levels' } });
    expect(await t.api(`/api/runs/${runId}/logs/export?limit=5`).then(json)).toMatchObject({ status: 400, body: { field: 'limit' } });
    expect(await t.api(`/api/runs/${runId}/logs/export?q=${encodeURIComponent('"open')}`).then(json)).toMatchObject({
      status: 400,
      body: { field: 'q', position: 0 },
    });
    expect(await t.api(`/api/runs/${runId}/logs/export?q=${encodeURIComponent('/[/')}`).then(json)).toMatchObject({
      status: 400,
      body: { field: 'q', position: 0 },
    });
  });

  it('export streams: 20,000 lines arrive complete and in order, chunked, in CSV and in JSON', async () => {
    const big = await insertRun(get().db, SHOP);
    await insertManyLines(get().db, big, SHOP, 20_000);
    const csv = await t.api(`/api/runs/${big}/logs/export?format=csv`);
    expect(csv.headers.get('content-length')).toBeNull();
    expect(csv.headers.get('transfer-encoding')).toBe('chunked');
    const reader = csv.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let chunks = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks++;
      text += decoder.decode(value, { stream: true });
    }
    expect(chunks).toBeGreaterThan(1);
    const rows = parseCsv(text);
    expect(rows).toHaveLength(20_001);
    expect(rows.slice(1).every((r, i) => r[5] === `line ${i + 1}`)).toBe(true);
    const ids = rows.slice(1).map((r) => Number(r[0]));
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1])).toBe(true);
    const body = (await t.api(`/api/runs/${big}/logs/export`).then((r) => r.json())) as any[];
    expect(body).toHaveLength(20_000);
    expect(body.every((l, i) => l.message === `line ${i + 1}` && l.data.n === i + 1)).toBe(true);
    const filtered = (await t.api(`/api/runs/${big}/logs/export?q=${encodeURIComponent('n>=19990')}`).then((r) => r.json())) as any[];
    expect(filtered.map((l) => l.data.n)).toEqual(Array.from({ length: 11 }, (_, i) => 19_990 + i));
  });
});
