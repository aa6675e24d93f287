import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the API at /console (CONTRACT 13): every asset is bundled and fetched from the same origin.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, assetsInlineLimit: 0, chunkSizeWarningLimit: 1500 },
  server: {
    proxy: Object.fromEntries(
      ['/webhooks', '/destinations', '/event-types', '/notifications', '/rate-limits'].map((p) => [
        p,
        'http://127.0.0.1:3000',
      ]),
    ),
  },
});
