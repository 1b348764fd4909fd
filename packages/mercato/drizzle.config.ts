import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: ['./packages/mercato/src/*/schema.ts'],
  out: './packages/mercato/migrations',
});
