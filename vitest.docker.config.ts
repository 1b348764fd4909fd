import { defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm run test:docker`: the container image built and run for real (packages/mercato/test/deploy/*.docker.ts), kept
// out of `npm test` because it needs root, a Docker daemon and minutes (docs/deploy.md, "What was tried").
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['packages/mercato/test/deploy/**/*.docker.ts'],
    testTimeout: 300_000,
    hookTimeout: 2_400_000,
    maxWorkers: 1,
    typecheck: { enabled: false },
  },
});
