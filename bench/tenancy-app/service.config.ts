/**
 * The app `npm run bench:tenancy` runs (bench/tenancy.ts) in one `mercato start` process (the dispatch door) and its
 * `mercato worker` processes. Every flow body stamps the moment it started on the wall clock with sub-millisecond
 * resolution (`performance.timeOrigin + performance.now()`, the same clock the benchmark stamps its requests with) and
 * returns it in its output.
 *
 *   heavy      the noisy neighbour's flow (shop A's backlog): one step of TENANCY_HEAVY_STEP_MS (0: a no-op step)
 *   light      the other shops' flow: body start stamped, then one step of TENANCY_LIGHT_STEP_MS (default 0)
 *   limited    concurrency { limit: 2 } (key: the shop): body start, a step holding `hold` ms, body end
 *   throttled  rateLimit { limit: 5, period: '1s' } (key: the shop): body start
 *   debounced  debounce { period: TENANCY_DEBOUNCE_MS (default 3000), key: input.key }: body start and the input's n
 *
 * The step durations are read from the environment of the process that executes the runs (the worker), so a backlog of
 * identical rows serves both the 0 ms and the 50 ms variant. The three shaping flows are defined only with
 * TENANCY_SHAPING_FLOWS=1 (the door and the shaping phase's workers): the load cells' worker then has no gated flow
 * (keyed concurrency, rateLimit), so its claim is the ungated claim alone — the fair one or the FIFO one, nothing else.
 */
import { defineApp } from 'mercato';
import { z } from 'zod';

const app = defineApp();
const ms = (name: string, fallback: number) => (Number(process.env[name]) >= 0 && process.env[name] ? Number(process.env[name]) : fallback);
const HEAVY_STEP_MS = ms('TENANCY_HEAVY_STEP_MS', 0);
const LIGHT_STEP_MS = ms('TENANCY_LIGHT_STEP_MS', 0);
const DEBOUNCE_MS = ms('TENANCY_DEBOUNCE_MS', 3000);

/** Wall-clock milliseconds with sub-millisecond resolution (comparable across processes of the machine). */
const now = () => performance.timeOrigin + performance.now();
const hold = (duration: number) => (duration > 0 ? new Promise<number>((r) => setTimeout(() => r(duration), duration)) : duration);

const SHAPING_FLOWS = process.env.TENANCY_SHAPING_FLOWS === '1';

const shapingFlows = {
  limited: app.defineFlow({
    name: 'limited',
    input: z.object({ hold: z.number().int().default(200) }),
    concurrency: { limit: 2 },
    run: async (ctx, input) => {
      const startedAt = now();
      await ctx.step('hold', () => hold(input.hold));
      return { startedAt, endedAt: now(), pid: process.pid };
    },
  }),
  throttled: app.defineFlow({
    name: 'throttled',
    input: z.object({}),
    concurrency: null,
    rateLimit: { limit: 5, period: '1s' },
    run: () => ({ startedAt: now(), pid: process.pid }),
  }),
  debounced: app.defineFlow({
    name: 'debounced',
    input: z.object({ key: z.string(), n: z.number().int() }),
    concurrency: null,
    debounce: { period: DEBOUNCE_MS, key: (input) => input.key },
    run: (_ctx, input) => ({ startedAt: now(), n: input.n }),
  }),
};

export default app.defineConfig({
  flows: {
    ...(SHAPING_FLOWS ? shapingFlows : {}),
    heavy: app.defineFlow({
      name: 'heavy',
      input: z.object({ n: z.number().int().default(0) }),
      concurrency: null,
      run: (ctx) => ctx.step('work', () => hold(HEAVY_STEP_MS)),
    }),
    light: app.defineFlow({
      name: 'light',
      input: z.object({ sentAt: z.number() }),
      concurrency: null,
      run: async (ctx, input) => {
        const startedAt = now();
        await ctx.step('work', () => hold(LIGHT_STEP_MS));
        return { sentAt: input.sentAt, startedAt };
      },
    }),
  },
});
