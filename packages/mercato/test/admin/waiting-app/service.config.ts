/**
 * The app of the admin UI's waiting-run browser test (test/admin/waiting.test.ts), run with `mercato dev`: flows whose
 * runs wait for a reason the run page and the lists show — a concurrency slot per customer (held by a run that waits
 * on the test's gate), a rate limit of one start per hour per customer, and a one-hour debounce per customer.
 */
import { defineApp } from 'mercato';
import { z } from 'zod';

const app = defineApp();

/** One run per customer at a time; a run holds its slot until the test opens its gate. */
const perCustomer = app.defineFlow({
  name: 'perCustomer',
  description: 'One run per customer at a time',
  input: z.object({ customer: z.string(), gate: z.string().url() }),
  concurrency: { limit: 1, key: (input) => input.customer },
  async run(ctx, input) {
    const status = await ctx.step('wait for the gate', async ({ signal }) => (await fetch(input.gate, { signal })).status);
    return { status };
  },
});

/** One start per hour per customer: a second run of a customer waits, rate-limited, for an hour. */
const throttled = app.defineFlow({
  name: 'throttled',
  description: 'One start per hour per customer',
  input: z.object({ customer: z.string() }),
  concurrency: null,
  rateLimit: { limit: 1, period: '1h', key: (input) => input.customer },
  run: (_ctx, input) => ({ customer: input.customer }),
});

/** Starts an hour after the last dispatch for its customer. */
const debounced = app.defineFlow({
  name: 'debounced',
  description: 'Starts an hour after the last dispatch for its customer',
  input: z.object({ customer: z.string() }),
  concurrency: null,
  debounce: { period: '1h', key: (input) => input.customer },
  run: (_ctx, input) => ({ customer: input.customer }),
});

export default app.defineConfig({
  flows: { perCustomer, throttled, debounced },
  worker: { pollIntervalMs: 50, pollMaxIntervalMs: 250 },
});
