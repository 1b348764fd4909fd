import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm run test:chaos`: the chaos suite (packages/mercato/test/chaos/*.chaos.ts), kept out of `npm test` because it
// starts its own PostgreSQL cluster (initdb/pg_ctl, never the shared server) and runs for minutes. CI runs it once at
// its bounded size; docs/reliability.md gives the full size.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['packages/mercato/test/chaos/**/*.chaos.ts'],
    testTimeout: 900_000,
    hookTimeout: 300_000,
    maxWorkers: 1,
    typecheck: { enabled: false },
  },
});
