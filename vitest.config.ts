import { defineConfig } from 'vitest/config';

// Inside the repository, `mercato` and `mercato/testing` resolve to their TypeScript sources (the `mercato-source`
// export condition) so tests see one copy of the code; processes started with the `mercato` binary run dist/.
const conditions = ['mercato-source', 'module', 'node', 'development|production'];

export default defineConfig({
  resolve: { conditions },
  // Node gets these conditions too (vitest passes them as --conditions): not `module`, which makes Node load the
  // extension-less ESM build of @opentelemetry/api (required by prom-client) and fail.
  ssr: { resolve: { conditions: conditions.filter((c) => c !== 'module'), externalConditions: ['mercato-source'] } },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'examples/*/test/**/*.test.ts'],
    globalSetup: ['packages/mercato/test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits up to 10 s (vitest's default is 1 s): on a loaded 2-core CI machine a browser page or a worker
    // can take longer than a second to get there, and a poll that gives up early fails a test that is right.
    expect: { poll: { timeout: 10_000 } },
    pool: 'forks',
    maxWorkers: 2,
    // @opentelemetry packages' "module" builds use extensionless imports Node cannot load: use their CommonJS builds
    server: { deps: { fallbackCJS: true } },
    typecheck: { enabled: true, include: ['packages/*/test/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
  },
});
