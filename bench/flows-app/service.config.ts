/**
 * The app `npm run bench:flows` runs in real `mercato worker` processes (bench/flows.ts).
 * Worker settings are the documented defaults except concurrency (BENCH_CONCURRENCY, default 10) and whatever
 * BENCH_MERCATO_WORKER adds (a JSON object of `worker` settings, e.g. batching options of the engine; default none).
 */
import { defineApp } from 'mercato';
import { z } from 'zod';

const app = defineApp();
const concurrency = Number(process.env.BENCH_CONCURRENCY) > 0 ? Number(process.env.BENCH_CONCURRENCY) : 10;
const extraWorkerSettings: Record<string, unknown> = process.env.BENCH_MERCATO_WORKER ? JSON.parse(process.env.BENCH_MERCATO_WORKER) : {};

export const STEPS_IN_LONG_FLOW = 100;

export default app.defineConfig({
  flows: {
    /** Throughput and latency: one no-op step. */
    oneStep: app.defineFlow({
      name: 'oneStep',
      input: z.object({ n: z.number().int().default(0) }),
      concurrency: null,
      run: (ctx, input) => ctx.step('only', () => input.n),
    }),
    /** Baseline of the checkpoint overhead: the run's own cost without any step. */
    noSteps: app.defineFlow({
      name: 'noSteps',
      input: z.object({}),
      concurrency: null,
      run: () => 'done',
    }),
    /** 100 no-op steps: (duration − noSteps duration) / 100 is the cost of one checkpoint. */
    hundredSteps: app.defineFlow({
      name: 'hundredSteps',
      input: z.object({}),
      concurrency: null,
      run: async (ctx) => {
        for (let i = 0; i < STEPS_IN_LONG_FLOW; i++) await ctx.step(`s${i}`, () => i);
        return 'done';
      },
    }),
  },
  worker: { ...extraWorkerSettings, concurrency },
});
