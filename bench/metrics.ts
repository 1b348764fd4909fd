/**
 * `npm run bench:metrics` — what Prometheus metrics cost the run engine: one process (HTTP app + worker), one-step runs
 * dispatched in a burst and executed, with metrics **off** (no token: nothing listens, no event is built) and **on**
 * (a token: the registry listens to every event, and `/metrics` is scraped over HTTP every 250 ms, four times as often
 * as a fast Prometheus would). The two configurations alternate over BENCH_ROUNDS rounds (the order rotates), each on a
 * fresh database of the same engine: PGlite in the process by default, PostgreSQL when DATABASE_URL is set.
 * Prints runs/s per configuration (min / median / max over the rounds) and the on/off ratio of each round.
 *
 * Variables: BENCH_ROUNDS (default 5), BENCH_RUNS (runs per round, default 1000), DATABASE_URL.
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { defineApp } from '../packages/mercato/src/app/app.ts';
import { createTestDatabase } from '../packages/mercato/src/db/testing.ts';
import { startHttpServer } from '../packages/mercato/src/http/server.ts';
import { silentLogger } from '../packages/mercato/src/logger.ts';
import { createRuntime } from '../packages/mercato/src/runtime.ts';
import { buildApp, startWorker } from '../packages/mercato/src/serve.ts';
import { fmt, spread, table } from './lib/stats.ts';

const num = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback);
const ROUNDS = num('BENCH_ROUNDS', 5);
const RUNS = num('BENCH_RUNS', 1000);
const TOKEN = 'bench-metrics-token';
const ENGINE = process.env.DATABASE_URL ? 'postgres' : 'pglite';

const app = defineApp();
const instance = app.defineConfig({
  flows: {
    one: app.defineFlow({
      name: 'one',
      input: z.object({ i: z.number() }),
      concurrency: null,
      run: (ctx, input) => ctx.step('s', () => input.i),
    }),
  },
  worker: { concurrency: 10, pollIntervalMs: 50, pollMaxIntervalMs: 200 },
});

type Config = 'off' | 'on';

async function round(config: Config): Promise<number> {
  const tdb = await createTestDatabase(ENGINE);
  const runtime = await createRuntime({
    instance,
    projectDir: process.cwd(),
    mode: 'test',
    db: tdb.db,
    logger: silentLogger(),
    env: {
      NODE_ENV: 'test',
      PLATFORM_API_KEY: 'bench-key',
      PLATFORM_API_SECRET: 'bench-secret',
      ...(config === 'on' ? { MERCATO_METRICS_TOKEN: TOKEN } : {}),
    },
  });
  const server = await startHttpServer(buildApp(runtime), { port: 0, hostname: '127.0.0.1' });
  let scraping: NodeJS.Timeout | undefined;
  try {
    // queued first, held back by the absence of a worker; then released at once
    for (let i = 0; i < RUNS; i += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, RUNS - i) }, (_, k) =>
          runtime.dispatch({ appHandle: undefined, flowName: 'one', input: { i: i + k }, shop: null, trigger: 'dispatch' }),
        ),
      );
    }
    if (config === 'on') {
      scraping = setInterval(() => {
        void fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } }).then((r) => r.text());
      }, 250);
    }
    const started = performance.now();
    await startWorker(runtime);
    for (;;) {
      const [row] = await tdb.db.query<{ n: number }>(sql`select count(*)::int as n from runs where status = 'completed'`);
      if (row!.n >= RUNS) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    return RUNS / ((performance.now() - started) / 1000);
  } finally {
    clearInterval(scraping);
    await server.close();
    await runtime.close();
    await tdb.drop();
  }
}

const results: Record<Config, number[]> = { off: [], on: [] };
const ratios: number[] = [];
const say = (line: string) => process.stdout.write(`${line}\n`);
say(`bench:metrics on ${ENGINE}: ${ROUNDS} rounds × ${RUNS} one-step runs per configuration`);
for (let r = 0; r < ROUNDS; r++) {
  const order: Config[] = r % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
  const figures: Partial<Record<Config, number>> = {};
  for (const config of order) {
    figures[config] = await round(config);
    results[config].push(figures[config]!);
  }
  ratios.push(figures.on! / figures.off!);
  say(`round ${r + 1}: off ${fmt(figures.off, 0)} runs/s, on ${fmt(figures.on, 0)} runs/s, on/off ${fmt(ratios[r], 3)}`);
}
const off = spread(results.off);
const on = spread(results.on);
const ratio = spread(ratios);
say('');
say(
  table([
    ['runs/s', 'min', 'median', 'max'],
    ['metrics off', fmt(off.min, 0), fmt(off.median, 0), fmt(off.max, 0)],
    ['metrics on, scraped every 250 ms', fmt(on.min, 0), fmt(on.median, 0), fmt(on.max, 0)],
    ['on/off ratio per round', fmt(ratio.min, 3), fmt(ratio.median, 3), fmt(ratio.max, 3)],
  ]),
);
