/**
 * F4 of the reliability probe: while the database cannot be reached, /api, /mcp and /webhooks answer 503 with
 * Retry-After and a JSON body (not a 500), each logged once at warn without a stack; when it is back they answer normally
 * without a restart. The outage is real: a loopback TCP proxy in front of PostgreSQL drops every connection and refuses
 * new ones (test/kit/tcp-proxy.ts). Before that, the classifier (db/unavailable.ts) on real driver errors of both engines
 * and on the shapes node-postgres and pg-pool produce.
 */
import { sql } from 'drizzle-orm';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/engine.ts';
import { type TestDatabase, createTestDatabase, describeEngines } from '../../src/db/testing.ts';
import { DATABASE_RETRY_AFTER_SECONDS, databaseUnavailableReason, isDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { UNAVAILABLE_MESSAGE } from '../../src/http/errors.ts';
import type { ApiEnv } from '../../src/http/types.ts';
import { bearer, startTestServer, tokenFor } from '../http/helpers.ts';
import { capturingLogger, eventually, rejection } from '../kit/index.ts';
import { type TcpProxy, startTcpProxy } from '../kit/tcp-proxy.ts';
import { type TestRuntime, startTestRuntime, testWorker } from '../helpers/runtime.ts';
import { createMcpToken, instance, rpc, signedWebhook } from './fixture.ts';

describe('what counts as "the database is unreachable"', () => {
  it('a real refused connection of the PostgreSQL engine does', async () => {
    // port 1 on loopback: nothing listens, the kernel refuses at once
    const db = await openDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', poolSize: 1 });
    try {
      const error = await rejection(db.query(sql`select 1`));
      expect(databaseUnavailableReason(error)).toBe('ECONNREFUSED');
    } finally {
      await db.close();
    }
  });

  it('the shapes node-postgres, pg-pool and PostgreSQL give a lost or impossible connection do', () => {
    const coded = (message: string, code: string) => Object.assign(new Error(message), { code });
    for (const error of [
      coded('connect ECONNRESET', 'ECONNRESET'),
      coded('read ETIMEDOUT', 'ETIMEDOUT'),
      coded('getaddrinfo ENOTFOUND db', 'ENOTFOUND'),
      new AggregateError([
        coded('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED'),
        coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
      ]),
      new Error('Connection terminated unexpectedly'),
      new Error('Connection terminated'),
      new Error('Connection terminated due to connection timeout', { cause: new Error('timeout expired') }),
      new Error('timeout exceeded when trying to connect'),
      new Error('Client has encountered a connection error and is not queryable'),
      new Error('Cannot use a pool after calling end on the pool'),
      coded('terminating connection due to administrator command', '57P01'),
      coded('terminating connection due to crash of another server process', '57P02'),
      coded('the database system is starting up', '57P03'),
      coded('sorry, too many clients already', '53300'),
      coded('connection failure', '08006'),
      coded('SSL SYSCALL error', '08000'),
      // drizzle's wrapper around the driver's error
      new Error('Failed query: select 1', { cause: coded('connect ECONNREFUSED', 'ECONNREFUSED') }),
    ]) {
      expect(isDatabaseUnavailable(error), String(error.message)).toBe(true);
    }
  });

  it('everything else does not: domain and SQL errors, look-alike messages, odd values, cycles', () => {
    const coded = (message: string, code: string) => Object.assign(new Error(message), { code });
    const cyclic = new Error('outer') as Error & { cause?: unknown };
    cyclic.cause = cyclic;
    for (const error of [
      new Error('boom'),
      coded('duplicate key value violates unique constraint', '23505'),
      coded('could not serialize access', '40001'),
      coded('syntax error at or near', '42601'),
      coded('canceling statement due to statement timeout', '57014'),
      coded('ENOENT: no such file', 'ENOENT'),
      new Error('The Connection terminated unexpectedly, said the provider'),
      cyclic,
      null,
      undefined,
      'ECONNREFUSED',
      { code: 8006 },
    ]) {
      expect(isDatabaseUnavailable(error), String(error)).toBe(false);
    }
  });
});

describe('an /api route whose database refuses connections', () => {
  const captured = capturingLogger('info');
  let server: Awaited<ReturnType<typeof startTestServer>>;
  let unreachable: Database;
  beforeAll(async () => {
    unreachable = await openDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', poolSize: 1 });
    const group = new Hono<ApiEnv>();
    group.get('/count', async (c) => c.json(await unreachable.query(sql`select count(*) from runs`)));
    server = await startTestServer({ groups: [{ prefix: '/api/test', app: group }], logger: captured.logger });
  });
  afterAll(async () => {
    await server?.close();
    await unreachable?.close();
  });

  it('answers 503 with Retry-After and a JSON body, logged once at warn without a stack', async () => {
    const res = await fetch(`${server.url}/api/test/count`, { headers: bearer(tokenFor()) });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe(String(DATABASE_RETRY_AFTER_SECONDS));
    const requestId = res.headers.get('x-request-id');
    expect(await res.json()).toEqual({ error: UNAVAILABLE_MESSAGE, retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS, requestId });
    // the error's line once, without a stack, beside the request's access line (warn for a 503)
    const lines = captured.lines.filter((l) => l.requestId === requestId && l.msg !== 'request');
    expect(lines.map((l) => [l.level, l.msg, l.reason])).toEqual([[40, 'database unavailable: request answered 503', 'ECONNREFUSED']]);
    expect(lines[0]!.err).toBeUndefined();
    expect(captured.lines.filter((l) => l.requestId === requestId && l.msg === 'request').map((l) => [l.level, l.status])).toEqual([
      [40, 503],
    ]);
  });
});

describeEngines('real SQL errors are not unavailability', (get) => {
  it('a syntax error, a unique violation and a division by zero are not taken for an outage', async () => {
    const { db } = get();
    for (const statement of [sql`selec 1`, sql`select 1 / 0`, sql`select * from no_such_table`]) {
      expect(isDatabaseUnavailable(await rejection(db.query(statement)))).toBe(false);
    }
    await db.exec('create temporary table u (id int primary key); insert into u values (1)');
    expect(isDatabaseUnavailable(await rejection(db.query(sql`insert into u values (1)`)))).toBe(false);
  });
});

describe.skipIf(!process.env.DATABASE_URL)('while PostgreSQL is unreachable [postgres]', () => {
  const captured = capturingLogger('info');
  let database: TestDatabase;
  let proxy: TcpProxy;
  let db: Database;
  let t: TestRuntime;

  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    const target = new URL(database.url!);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    db = await openDatabase({ url: proxy.urlFor(database.url!), poolSize: 4, applicationName: 'mercato-f4' });
    t = await startTestRuntime(instance, db, { http: true, logger: captured.logger, env: { PLATFORM_ORIGIN: 'http://127.0.0.1:9' } });
  }, 60_000);
  afterAll(async () => {
    proxy?.resume();
    await t?.close();
    await db?.close();
    await proxy?.close();
    await database?.drop();
  }, 30_000);

  const runFlow = () => t.api('/api/flows/echo/run', { method: 'POST', json: { input: { text: 'hi' } } });
  const listRuns = () => t.api('/api/runs');
  const webhook = () => {
    const body = JSON.stringify({ id: Date.now() });
    return fetch(`${t.url}/webhooks`, { method: 'POST', headers: signedWebhook(body), body });
  };
  const mcpCall = (secret: string) =>
    fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: rpc('tools/list'),
    });

  it('/api, /mcp and /webhooks answer 503 with Retry-After and a JSON body, logged once at warn; all answer again once it is back', async () => {
    // Up: the normal answers, and an MCP token that has never been used (so no process has it cached).
    expect((await runFlow()).status).toBe(202);
    expect((await webhook()).status).toBe(200);
    const secret = await createMcpToken(t.url!, t.token());

    proxy.cut();
    const before = captured.lines.length;
    const answers = [
      { what: 'POST /api/flows/echo/run', res: await runFlow() },
      { what: 'GET /api/runs', res: await listRuns() },
      { what: 'POST /webhooks', res: await webhook() },
      { what: 'POST /mcp', res: await mcpCall(secret) },
    ];
    const requestIds: string[] = [];
    for (const { what, res } of answers) {
      const text = await res.text();
      expect(res.status, `${what}: ${text}`).toBe(503);
      expect(res.headers.get('retry-after'), what).toBe(String(DATABASE_RETRY_AFTER_SECONDS));
      expect(res.headers.get('content-type'), what).toMatch(/^application\/json/);
      const body = JSON.parse(text);
      const requestId = res.headers.get('x-request-id')!;
      expect(body, what).toEqual({ error: UNAVAILABLE_MESSAGE, retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS, requestId });
      expect(text, what).not.toMatch(/ECONN|Connection terminated|at .*\.ts|postgres/i);
      requestIds.push(requestId);
    }
    expect(answers[3]!.res.headers.get('mcp-protocol-version')).toBe('2025-11-25');
    expect((await fetch(`${t.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);

    const during = captured.lines.slice(before);
    const warned = during.filter((l) => l.msg === 'database unavailable: request answered 503');
    // once per request, with its request id and the reason, at warn (40), without an error object or a stack
    expect(warned.map((l) => l.requestId).sort()).toEqual([...requestIds].sort());
    for (const line of warned) {
      expect(line.level).toBe(40);
      expect(typeof line.reason).toBe('string');
      expect(line.err).toBeUndefined();
      expect(JSON.stringify(line)).not.toContain('stack');
    }
    const errors = during.filter((l) => l.level >= 50);
    expect(errors.map((l) => l.msg)).toEqual([]);

    proxy.resume();
    const resumedAt = Date.now();
    await eventually(async () => (await runFlow()).status === 202, { timeout: 15_000, interval: 100 });
    const recoveryMs = Date.now() - resumedAt;
    expect((await listRuns()).status).toBe(200);
    expect((await webhook()).status).toBe(200);
    expect((await mcpCall(secret)).status).toBe(200);
    expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
    console.log(`F4: 4/4 endpoints answered 503 + Retry-After during the outage; back ${recoveryMs} ms after the proxy resumed`);
  }, 60_000);
});

describe.skipIf(!process.env.DATABASE_URL)('a worker while PostgreSQL is unreachable [postgres]', () => {
  it('logs one warning when the outage starts (no stack), none at error, and one info line with a count when it ends', async () => {
    const captured = capturingLogger('info');
    const database = await createTestDatabase('postgres');
    const target = new URL(database.url!);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const db = await openDatabase({ url: proxy.urlFor(database.url!), poolSize: 4, applicationName: 'mercato-worker-outage' });
    const t = await startTestRuntime(instance, db, { env: { PLATFORM_ORIGIN: 'http://127.0.0.1:9' } });
    const worker = testWorker(t.runtime, db, {
      logger: captured.logger,
      config: { pollIntervalMs: 50, pollMaxIntervalMs: 100, pollBackoffCoefficient: 1, leaseDurationMs: 3000 },
      heartbeatIntervalMs: 100,
    });
    try {
      await worker.start();
      const before = captured.lines.length;
      proxy.cut();
      // polls every 50 ms, heartbeats every 100 ms: many failures in 1.5 s
      await new Promise((r) => setTimeout(r, 1500));
      proxy.resume();
      const back = await eventually(
        () => captured.lines.slice(before).find((l) => l.msg === 'database available again: the worker goes on'),
        {
          timeout: 15_000,
        },
      );
      const during = captured.lines.slice(before);
      const warned = during.filter((l) => l.msg === 'database unavailable: the worker keeps its runs and retries');
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatchObject({ level: 40, workerId: worker.id, reason: expect.any(String) });
      expect(JSON.stringify(warned[0])).not.toContain('stack');
      expect(during.filter((l) => l.level >= 50)).toEqual([]);
      expect(back).toMatchObject({ level: 30, workerId: worker.id, failures: expect.any(Number), downMs: expect.any(Number) });
      expect(back.failures).toBeGreaterThan(1);
      expect(back.downMs).toBeGreaterThanOrEqual(1000);
    } finally {
      proxy.resume();
      await worker.stop({ graceMs: 1000 });
      await t.close();
      await db.close();
      await proxy.close();
      await database.drop();
    }
  }, 60_000);
});
