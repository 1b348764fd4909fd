import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The built files are served by the mercato package (packages/mercato/src/admin/): index.html for every client route,
// hashed files under /assets/ with a long cache. `npm run dev -w packages/admin-ui` proxies the API to a running
// `mercato dev` on port 3000.
export default defineConfig(({ command }) => {
  // A build is always a production build (React's production bundle and JSX runtime), whatever NODE_ENV the shell or a
  // test runner (vitest sets "test") has.
  if (command === 'build') process.env.NODE_ENV = 'production';
  return {
    plugins: [react()],
    base: '/',
    build: {
      outDir: 'dist',
      emptyOutDir: true,
      assetsDir: 'assets',
      sourcemap: false,
      chunkSizeWarningLimit: 2000,
    },
    server: {
      proxy: { '/api': 'http://localhost:3000', '/__mercato': 'http://localhost:3000' },
    },
  };
});
