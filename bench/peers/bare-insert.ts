/**
 * The reference door of `npm run bench:frontdoor`: the least an HTTP endpoint can do to take work in durably. A bare
 * Hono app on @hono/node-server with a `pg` pool of 10 connections (Mercato's default pool size): `POST /enqueue` reads
 * the JSON body, runs one `INSERT … RETURNING id` into `bare_runs` (a table shaped like a minimal runs row: its own
 * commit, fsync'd on the benchmark's durable cluster) and answers 202 `{ runId, status: 'pending' }`, as Mercato's doors
 * do. No authentication, no validation beyond JSON, no logging. `GET /healthz` answers without touching the database
 * (the benchmark opens its keep-alive connections with it before a measurement).
 *
 *   DATABASE_URL=postgres://… PORT=0 node --import tsx bench/peers/bare-insert.ts
 *
 * Creates the table if needed, then prints `ready http://127.0.0.1:<port>` and serves until SIGTERM.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import pg from 'pg';

const SCHEMA = `
create table if not exists bare_runs (
  id uuid primary key default gen_random_uuid(),
  app_handle text not null,
  shop text,
  flow_name text not null,
  status text not null default 'pending',
  trigger text not null,
  input jsonb not null,
  attempt int not null default 0,
  available_at timestamptz not null default now(),
  created_at timestamptz not null default now()
);
create index if not exists bare_runs_due_idx on bare_runs (available_at) where status = 'pending';`;

const INSERT = {
  name: 'bare_insert',
  text: `insert into bare_runs (app_handle, shop, flow_name, trigger, input) values ('default', $1, $2, 'api', $3) returning id`,
};

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, application_name: 'bare-insert' });
pool.on('error', () => {}); // an idle client cut by the server: the pool replaces it
await pool.query(SCHEMA);

const app = new Hono();
app.get('/healthz', (c) => c.json({ ok: true }));
app.post('/enqueue', async (c) => {
  let body: { shop?: unknown; flow?: unknown; input?: unknown };
  try {
    body = await c.req.json();
  } catch {
    return c.json({ error: 'the body must be JSON' }, 400);
  }
  const { rows } = await pool.query<{ id: string }>({
    ...INSERT,
    values: [
      typeof body.shop === 'string' ? body.shop : null,
      typeof body.flow === 'string' ? body.flow : 'intake',
      JSON.stringify(body.input ?? {}),
    ],
  });
  return c.json({ runId: rows[0].id, status: 'pending' }, 202);
});

const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(`ready http://127.0.0.1:${info.port}\n`);
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close();
    void pool.end().finally(() => process.exit(0));
  });
}
